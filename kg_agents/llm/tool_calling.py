"""Tool calling and structured output for the local chat model, by grammar-constrained decoding.

The embedded model has no native tool calling. :class:`ToolConstraint` gives it one: the bound tools are
described in a system message, and decoding is constrained by an `llguidance
<https://github.com/guidance-ai/llguidance>`_ grammar built from the tools' JSON schemas. With tools bound,
every reply is one JSON object, either ``{"tool_call": {"name": <a bound tool>, "arguments": <an object
matching that tool's schema>}}`` or ``{"response": "<text>"}``, so a tool call is valid by construction.
``tool_choice`` picks the branches the grammar allows:

- ``"auto"`` (the default): a call or a response; the model chooses at the key (``tool_call`` or
  ``response``), in the one decoding pass. A call that only repeats an earlier one is asked again (see
  :meth:`ToolConstraint.retry_options`).
- ``"any"`` / ``"required"`` / ``True``: a call to any bound tool.
- a tool name (or ``{"type": "function", "function": {"name": ...}}``): a call to that tool.
- ``"none"``: a response.

Structured output: ``response_format`` (set by ``with_structured_output(method="json_schema")`` or
``"json_mode"``) constrains the whole reply to a JSON schema, or to any JSON object.

A grammar error is never hidden: if the matcher rejects a token, generation fails with
:class:`~kg_agents.errors.ModelError` rather than falling back to unconstrained decoding. A call cut short by
``max_tokens`` comes back as an ``invalid_tool_calls`` entry.

Examples:
    >>> c = ToolConstraint.from_options({"tools": [{"type": "function", "function": {
    ...     "name": "add", "description": "Add.", "parameters": {"type": "object",
    ...     "properties": {"a": {"type": "integer"}}, "required": ["a"]}}}], "tool_choice": "any"})
    >>> c.choice
    'required'
    >>> msg = c.finish(AIMessage('{"tool_call": {"name": "add", "arguments": {"a": 3}}}'))
    >>> msg.content, msg.tool_calls[0]["name"], msg.tool_calls[0]["args"]
    ('', 'add', {'a': 3})
    >>> c.finish(AIMessage('{"response": "Hi"}')).content
    'Hi'
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, SystemMessage, ToolMessage
from langchain_core.messages.ai import add_usage
from langchain_core.output_parsers import JsonOutputParser, PydanticOutputParser
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.runnables import Runnable, RunnableMap, RunnablePassthrough
from langchain_core.utils.function_calling import convert_to_json_schema, convert_to_openai_tool
from langchain_core.utils.pydantic import is_basemodel_subclass

from kg_agents.errors import ConfigError, ModelError

__all__ = [
    "MAX_STRING_CHARS",
    "TOOL_OPTIONS",
    "GrammarLogitsProcessor",
    "ToolConstraint",
    "format_tools",
    "normalize_tool_choice",
    "structured_output",
]

#: Per-call options this module consumes (set by ``bind_tools`` / ``with_structured_output``).
TOOL_OPTIONS = ("tools", "tool_choice", "response_format", "parallel_tool_calls")

# JSON layout the grammar enforces: the separators the model writes by itself, no free whitespace (a small
# model left free to emit whitespace can pad forever).
_JSON_STYLE = {"whitespace_flexible": False, "item_separator": ", ", "key_separator": ": "}

#: Longest string the grammar lets the model write in a tool argument or a structured output field, unless
#: the schema sets its own ``maxLength`` (a small model can repeat a word until ``max_tokens`` runs out).
MAX_STRING_CHARS = 160

TOOLS_HEADER = "You can call these tools:"
REPLY_FORMATS = {
    "auto": 'Reply in JSON, either {"tool_call": {"name": <tool name>, "arguments": {<arguments>}}} to '
    'call a tool, or {"response": "<your answer>"} to answer. Call a tool when you need information you '
    "do not have; when the tool results answer the question, respond.",
    "required": 'Reply in JSON: {"tool_call": {"name": <tool name>, "arguments": {<arguments>}}}. '
    "You must call a tool now.",
    "none": 'Reply in JSON: {"response": "<your answer>"}. Answer the question now from the tool results.',
}
FORCED_FORMAT = (
    'Reply in JSON: {{"tool_call": {{"name": "{name}", "arguments": {{<arguments>}}}}}}. '
    "You must call the tool {name} now."
)
JSON_HINT = "Reply with only a JSON object."
SCHEMA_HINT = "Reply with only a JSON object that matches this JSON schema: {schema}"


def format_tools(tools: Sequence[Any]) -> list[dict[str, Any]]:
    """Tools in OpenAI function format (``{"type": "function", "function": {...}}``).

    Args:
        tools: ``BaseTool``\\ s, functions, pydantic models, TypedDicts or OpenAI-format dicts.

    Raises:
        ConfigError: a tool LangChain cannot convert.
    """
    out: list[dict[str, Any]] = []
    for t in tools:
        try:
            spec = convert_to_openai_tool(t)
        except Exception as exc:
            raise ConfigError(f"cannot bind {t!r} as a tool: {exc}") from exc
        fn = spec.get("function")
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise ConfigError(f"cannot bind {t!r} as a tool: no function name")
        out.append(spec)
    return out


def normalize_tool_choice(tool_choice: Any, names: Sequence[str]) -> str:
    """``"auto"``, ``"required"``, ``"none"`` or one tool's name, from any accepted ``tool_choice`` form.

    Raises:
        ConfigError: an unknown tool name or form, or a choice other than none with no tools.

    Examples:
        >>> [normalize_tool_choice(c, ["a"]) for c in (None, "any", True, "a", {"function": {"name": "a"}})]
        ['auto', 'required', 'required', 'a', 'a']
    """
    if tool_choice is None or tool_choice == "auto":
        choice = "auto"
    elif tool_choice is True or tool_choice in ("any", "required"):
        choice = "required"
    elif tool_choice is False or tool_choice == "none":
        choice = "none"
    elif isinstance(tool_choice, str):
        choice = tool_choice
    elif isinstance(tool_choice, Mapping) and isinstance(tool_choice.get("function"), Mapping):
        choice = str(tool_choice["function"].get("name"))
    elif isinstance(tool_choice, Mapping) and tool_choice.get("type") in ("auto", "any", "none"):
        return normalize_tool_choice(tool_choice["type"], names)
    else:
        raise ConfigError(f"unsupported tool_choice {tool_choice!r}")
    if choice in ("auto", "required", "none"):
        if choice == "required" and not names:
            raise ConfigError("tool_choice requires a tool call but no tools are bound")
        return choice
    if choice not in names:
        raise ConfigError(f"tool_choice names {choice!r}, which is not a bound tool; bound: {list(names)}")
    return choice


def _parameters(tool: dict[str, Any]) -> dict[str, Any]:
    params = dict(tool["function"].get("parameters") or {})
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    return params


def _capped(schema: Any) -> Any:
    """``schema`` with ``maxLength: MAX_STRING_CHARS`` on every free string (one without a length, pattern,
    format, enum or const), so that a model repeating itself inside a string still closes its JSON."""
    if isinstance(schema, list):
        return [_capped(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _capped(v) if isinstance(v, dict | list) else v for k, v in schema.items()}
    free = not any(k in out for k in ("maxLength", "pattern", "format", "enum", "const"))
    if out.get("type") == "string" and free:
        out["maxLength"] = MAX_STRING_CHARS
    return out


def _call_schema(tool: dict[str, Any]) -> dict[str, Any]:
    params = _capped(_parameters(tool))
    params.setdefault("additionalProperties", False)  # no invented arguments
    return _object({"name": {"const": tool["function"]["name"]}, "arguments": params})


def _json_schema_of(response_format: Mapping[str, Any]) -> dict[str, Any] | None:
    """The schema of an OpenAI-style ``response_format`` (None: any JSON object)."""
    kind = response_format.get("type")
    if kind == "json_object":
        return None
    if kind == "json_schema":
        spec = response_format.get("json_schema") or {}
        schema = spec.get("schema") if isinstance(spec, Mapping) else None
        if isinstance(schema, Mapping):
            return dict(schema)
    raise ConfigError(
        f"unsupported response_format {dict(response_format)!r}; use "
        '{"type": "json_object"} or {"type": "json_schema", "json_schema": {"schema": {...}}}'
    )


def _lark_json(schema: Mapping[str, Any]) -> str:
    return "%json " + json.dumps({**schema, "x-guidance": _JSON_STYLE}, ensure_ascii=False)


def _text_of(message: BaseMessage) -> str:
    """A message's text blocks (tool-use blocks are dropped: they repeat ``tool_calls``)."""
    if isinstance(message.content, str):
        return message.content
    parts = [
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in message.content
        if isinstance(b, str) or (isinstance(b, dict) and b.get("type") == "text")
    ]
    return "".join(parts)


@dataclass
class ToolConstraint:
    """The tools, ``tool_choice`` and ``response_format`` of one call, and what follows from them.

    Build it with :meth:`from_options`; :meth:`render` adds the instructions to the messages,
    :meth:`grammar` is the llguidance grammar, :meth:`processor` the logits processor,
    and :meth:`finish` / :meth:`stream` turn the generated text into ``tool_calls``.
    """

    tools: list[dict[str, Any]] = field(default_factory=list)
    choice: str = "auto"
    response_format: dict[str, Any] | None = None
    made: list[frozenset[str]] = field(default_factory=list)

    @classmethod
    def from_options(cls, options: dict[str, Any]) -> ToolConstraint | None:
        """Pop :data:`TOOL_OPTIONS` from ``options``; None when there are neither tools nor a format."""
        tools = options.pop("tools", None) or []
        tool_choice = options.pop("tool_choice", None)
        response_format = options.pop("response_format", None)
        options.pop("parallel_tool_calls", None)  # one call per reply; accepted for interface parity
        if not tools and response_format is None:
            if tool_choice not in (None, "none", "auto"):
                raise ConfigError(f"tool_choice={tool_choice!r} needs bound tools (bind_tools)")
            return None
        formatted = format_tools(tools) if tools else []
        if formatted and response_format is not None:
            raise ConfigError("give either tools or response_format, not both")
        names = [t["function"]["name"] for t in formatted]
        choice = normalize_tool_choice(tool_choice, names) if formatted else "none"
        if response_format is not None:
            if not isinstance(response_format, Mapping):
                raise ConfigError(f"response_format must be a dict, got {type(response_format).__name__}")
            _json_schema_of(response_format)  # validates
            response_format = dict(response_format)
        return cls(tools=formatted, choice=choice, response_format=response_format)

    # ------------------------------------------------------------------ prompt
    def instructions(self) -> str:
        """The system text that describes the tools (or the JSON format) and the reply format."""
        if self.response_format is not None:
            schema = _json_schema_of(self.response_format)
            if schema is None:
                return JSON_HINT
            return SCHEMA_HINT.format(schema=json.dumps(schema, ensure_ascii=False))
        lines = [TOOLS_HEADER]
        for t in self.tools:
            fn = t["function"]
            spec = {"name": fn["name"], "description": fn.get("description", "")}
            spec["arguments"] = _parameters(t).get("properties", {})
            lines.append(json.dumps(spec, ensure_ascii=False))
        lines.append(REPLY_FORMATS.get(self.choice) or FORCED_FORMAT.format(name=self.choice))
        return "\n".join(lines)

    def render(self, messages: Sequence[BaseMessage]) -> list[BaseMessage]:
        """``messages`` with the instructions in the system message and past AI turns in the reply format.

        With tools bound, an AI message's tool calls become ``{"tool_call": ...}`` lines and its text a
        ``{"response": ...}`` line, as the model itself would write them; a tool message with
        ``status="error"`` is marked as an error. Records the calls already made (see :meth:`repeats`).
        """
        out: list[BaseMessage] = []
        for m in messages:
            if isinstance(m, AIMessage) and self.tools:
                lines = [_envelope("response", _text_of(m))] if _text_of(m) or not m.tool_calls else []
                for c in m.tool_calls:
                    self.made.append(_values(c["args"]))
                    lines.append(_envelope("tool_call", {"name": c["name"], "arguments": c["args"]}))
                out.append(AIMessage("\n".join(lines)))
            elif isinstance(m, ToolMessage) and m.status == "error":
                out.append(m.model_copy(update={"content": "Error: " + _text_of(m)}))
            else:
                out.append(m)
        extra = self.instructions()
        if out and isinstance(out[0], SystemMessage):
            out[0] = SystemMessage(_text_of(out[0]) + "\n\n" + extra)
        else:
            out.insert(0, SystemMessage(extra))
        return out

    # ------------------------------------------------------------------ grammar
    def grammar(self) -> str:
        """The llguidance Lark grammar for this call (a JSON schema, embedded)."""
        if self.response_format is not None:
            schema = _json_schema_of(self.response_format)
            return "start: json\njson: " + _lark_json(
                _capped(schema) if schema is not None else {"type": "object"}
            )
        branches = []
        if self.choice != "none":
            tools = self.tools if self.choice in ("auto", "required") else self._named(self.choice)
            schemas = [_call_schema(t) for t in tools]
            call = schemas[0] if len(schemas) == 1 else {"anyOf": schemas}
            branches.append(_object({"tool_call": call}))
        if self.choice in ("auto", "none"):
            branches.append(_object({"response": {"type": "string"}}))
        schema = branches[0] if len(branches) == 1 else {"anyOf": branches}
        return "start: reply\nreply: " + _lark_json(schema)

    def _named(self, name: str) -> list[dict[str, Any]]:
        return [t for t in self.tools if t["function"]["name"] == name]

    def processor(self, tokenizer: Any, prompt_len: int) -> GrammarLogitsProcessor:
        """A fresh logits processor for one generation."""
        return GrammarLogitsProcessor(self.grammar(), tokenizer, prompt_len)

    # ------------------------------------------------------------------ parsing
    def finish(self, message: AIMessage) -> AIMessage:
        """Turn a complete reply into an ``AIMessage``: ``tool_calls``, or the response as its text.

        A reply cut short (``max_tokens``, a stop string) becomes an ``invalid_tool_calls`` entry when it
        was a call, else the partial text.
        """
        if not self.tools:
            return message
        text = _text_of(message)
        meta = dict(message.response_metadata)
        try:
            reply = json.loads(text)
            if "response" in reply:
                return message.model_copy(update={"content": str(reply["response"])})
            call = reply["tool_call"]
            name, args = call["name"], call["arguments"]
        except (ValueError, KeyError, TypeError) as exc:
            if not text.startswith('{"tool_call"'):
                partial = text.removeprefix('{"response": ').strip('"')
                return message.model_copy(update={"content": partial})
            return message.model_copy(
                update={
                    "content": "",
                    "invalid_tool_calls": [
                        {
                            "type": "invalid_tool_call",
                            "name": None,
                            "args": text,
                            "id": _call_id(),
                            "error": f"incomplete tool call ({meta.get('finish_reason')}): {exc}",
                        }
                    ],
                }
            )
        meta["finish_reason"] = "tool_calls"
        return message.model_copy(
            update={
                "content": "",
                "tool_calls": [{"type": "tool_call", "name": name, "args": args, "id": _call_id()}],
                "response_metadata": meta,
            }
        )

    def retry_options(self, message: AIMessage) -> dict[str, Any] | None:
        """Call options to ask again when ``message`` (``tool_choice="auto"``) repeats a call; else None.

        A repeat is a call whose argument values were all used by one earlier call in the conversation
        (the same call again, or another tool on the same arguments). Its result would add nothing, and a
        small model that copies its last turn would loop until the step limit; so it is not returned: the
        model is asked again without the repeated tools, and with no tool at all when none is left, so it
        answers from the results it has.
        """
        if self.choice != "auto":
            return None
        repeated = {c["name"] for c in message.tool_calls if _values(c["args"]) in self.made}
        if not repeated:
            return None
        left = [t for t in self.tools if t["function"]["name"] not in repeated]
        if not left:
            return {"tool_choice": "none"}
        return {"tools": left, "tool_choice": "auto"}

    def add_usage(self, first: AIMessage, retry: AIMessage) -> None:
        """Add the usage of a discarded first reply to the retry's (both generations were paid for)."""
        if first.usage_metadata and retry.usage_metadata:
            retry.usage_metadata = add_usage(first.usage_metadata, retry.usage_metadata)

    def stream(
        self,
        chunks: Iterator[ChatGenerationChunk],
        again: Callable[[dict[str, Any]], Iterator[ChatGenerationChunk]],
    ) -> Iterator[ChatGenerationChunk]:
        """Stream a reply: JSON replies are complete only at the end, so one content or tool-call chunk.

        Args:
            chunks: the raw chunks (text deltas, then the last chunk with usage).
            again: a fresh stream with the given call options (see :meth:`retry_options`).
        """
        if not self.tools:
            yield from chunks
            return
        parts: list[str] = []
        for chunk in chunks:
            parts.append(chunk.text)
            if chunk.message.usage_metadata is None:  # type: ignore[attr-defined]
                continue
            last = chunk.message
            whole = self.finish(AIMessage("".join(parts), response_metadata=dict(last.response_metadata)))
            retry = self.retry_options(whole)
            if retry is not None:
                for c in again(retry):
                    if c.message.usage_metadata is not None:  # type: ignore[attr-defined]
                        usage = add_usage(last.usage_metadata, c.message.usage_metadata)  # type: ignore[attr-defined]
                        c = ChatGenerationChunk(
                            message=c.message.model_copy(update={"usage_metadata": usage})
                        )
                    yield c
                return
            calls = whole.tool_calls or []
            tcc = [
                {
                    "type": "tool_call_chunk",
                    "name": c["name"],
                    "args": json.dumps(c["args"], ensure_ascii=False),
                    "id": c["id"],
                    "index": i,
                }
                for i, c in enumerate(calls)
            ] + [
                {"type": "tool_call_chunk", "name": None, "args": b["args"], "id": b["id"], "index": 0}
                for b in whole.invalid_tool_calls
            ]
            yield ChatGenerationChunk(
                message=AIMessageChunk(
                    content=whole.content,
                    tool_call_chunks=tcc,  # type: ignore[arg-type]
                    usage_metadata=last.usage_metadata,  # type: ignore[attr-defined]
                    response_metadata=whole.response_metadata,
                    chunk_position="last",
                )
            )


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


def _envelope(key: str, value: Any) -> str:
    return json.dumps({key: value}, ensure_ascii=False)


def _values(args: Any) -> frozenset[str]:
    """The argument values of a call, as a set of JSON texts (key names ignored)."""
    items = args.values() if isinstance(args, Mapping) else [args]
    return frozenset(json.dumps(v, sort_keys=True, ensure_ascii=False) for v in items)


def structured_output(
    model: BaseChatModel,
    schema: dict[str, Any] | type,
    *,
    include_raw: bool = False,
    method: str = "function_calling",
    strict: bool | None = None,
    **kwargs: Any,
) -> Runnable[Any, Any]:
    """``with_structured_output`` for a model that takes ``tools`` and ``response_format`` call options.

    ``"function_calling"`` is LangChain's own implementation (a forced call of a tool named after the
    schema); ``"json_schema"`` and ``"json_mode"`` constrain the whole reply and parse it as JSON (into the
    pydantic class when ``schema`` is one). ``strict`` is accepted for interface parity: constrained
    decoding always follows the schema.

    Raises:
        ConfigError: an unknown ``method`` or an unexpected keyword argument.
    """
    if method == "function_calling":
        return BaseChatModel.with_structured_output(model, schema, include_raw=include_raw, **kwargs)
    if method not in ("json_schema", "json_mode"):
        raise ConfigError(f"unknown structured output method {method!r}")
    if kwargs:
        raise ConfigError(f"unexpected arguments for with_structured_output: {sorted(kwargs)}")
    json_schema = convert_to_json_schema(schema)
    if method == "json_mode":
        response_format: dict[str, Any] = {"type": "json_object"}
    else:
        response_format = {"type": "json_schema", "json_schema": {"schema": json_schema}}
    llm = model.bind(
        response_format=response_format,
        ls_structured_output_format={"kwargs": {"method": method}, "schema": json_schema},
    )
    parser: Runnable[Any, Any]
    if isinstance(schema, type) and is_basemodel_subclass(schema):
        parser = PydanticOutputParser(pydantic_object=schema)  # type: ignore[type-var]
    else:
        parser = JsonOutputParser()
    if not include_raw:
        return llm | parser
    parsed = RunnablePassthrough.assign(
        parsed=lambda x: parser.invoke(x["raw"]), parsing_error=lambda _: None
    )
    fallback = RunnablePassthrough.assign(parsed=lambda _: None)
    return RunnableMap(raw=llm) | parsed.with_fallbacks([fallback], exception_key="parsing_error")


def _call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


# --------------------------------------------------------------------------- the logits processor
_LL_TOKENIZERS: dict[int, tuple[Any, Any]] = {}
_LL_GUARD = threading.Lock()


def _ll_tokenizer(tokenizer: Any) -> Any:
    """The llguidance tokenizer for a HF fast tokenizer (built once per tokenizer object, ~1 s)."""
    with _LL_GUARD:
        hit = _LL_TOKENIZERS.get(id(tokenizer))
        if hit is not None and hit[0] is tokenizer:
            return hit[1]
        try:
            import llguidance.hf
        except ImportError as exc:
            raise ConfigError(
                "tool calling on the local model needs llguidance: pip install 'kg-agents[local]'"
            ) from exc
        try:
            ll = llguidance.hf.from_tokenizer(tokenizer)
        except Exception as exc:
            raise ModelError(f"llguidance cannot read this tokenizer: {exc}") from exc
        _LL_TOKENIZERS[id(tokenizer)] = (tokenizer, ll)
        return ll


class GrammarLogitsProcessor:
    """A transformers logits processor that masks every token the grammar does not allow next.

    Batch size 1. Called once per step with the ids so far: it feeds the last sampled token to the
    llguidance matcher, then sets the logits of disallowed tokens to ``-inf``. When the grammar is complete
    only EOS is allowed, so generation ends there.

    Args:
        grammar: an llguidance grammar (Lark, as from :meth:`ToolConstraint.grammar`).
        tokenizer: the model's HF fast tokenizer.
        prompt_len: the prompt's length in tokens (the first call sees only the prompt).

    Raises:
        ModelError: the grammar does not compile, or the matcher rejects a token (never silently ignored).
    """

    def __init__(self, grammar: str, tokenizer: Any, prompt_len: int) -> None:
        import llguidance

        self.matcher = llguidance.LLMatcher(
            _ll_tokenizer(tokenizer), llguidance.LLMatcher.grammar_from_lark(grammar), log_level=0
        )
        self._check()
        self.prompt_len = prompt_len
        self.consumed = 0

    def _check(self) -> None:
        if self.matcher.is_error():
            raise ModelError(f"constrained decoding failed: {self.matcher.get_error()}")

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import numpy as np
        import torch

        if int(input_ids.shape[0]) != 1:
            raise ModelError("constrained decoding runs one sequence at a time")
        for tok in input_ids[0, self.prompt_len + self.consumed :].tolist():
            self.matcher.consume_token(int(tok))
            self.consumed += 1
            self._check()
        bits = np.frombuffer(self.matcher.compute_bitmask(), dtype=np.uint8)
        self._check()
        allowed = np.unpackbits(bits, bitorder="little").astype(bool)
        vocab = int(scores.shape[-1])
        if allowed.shape[0] < vocab:
            allowed = np.concatenate([allowed, np.zeros(vocab - allowed.shape[0], dtype=bool)])
        blocked = torch.from_numpy(~allowed[:vocab]).to(scores.device)
        return scores.masked_fill(blocked.unsqueeze(0), float("-inf"))
