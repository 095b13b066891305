"""``LocalChatModel``: a LangChain chat model over the embedded SmolLM2-135M-Instruct (or any local HF dir).

Messages are rendered with the tokenizer's chat template (system / human / ai; tool messages and an AI
message's tool calls are rendered as plain text, since the model has no native tool calling). Decoding is
greedy unless ``temperature > 0``. ``stop`` strings are honoured: generation halts as soon as one appears
(a ``StoppingCriteria``) and the text is cut before it. Every ``AIMessage`` carries ``usage_metadata``;
streaming yields real per-token ``AIMessageChunk``s with the usage on the last chunk.

Concurrency: the HF model is shared per process (:func:`load_local_model`); generation on it is serialised by
one lock per checkpoint and runs on the process's compute thread (:mod:`kg_agents._compute`), so ``batch`` and
``abatch`` from several threads or tasks are safe. Greedy calls that arrive together are decoded as one batch
(``batch_size``, default 16; :mod:`kg_agents.llm.batching`). Async calls never block the event loop.

Tool calling: ``bind_tools`` and ``with_structured_output`` work by grammar-constrained decoding (see
:mod:`kg_agents.llm.tool_calling`): a tool call is valid by construction against the bound tools' JSON
schemas, ``tool_choice`` is honoured, and the reply carries ``tool_calls``. Constrained calls are decoded one
at a time (never batched).
"""

from __future__ import annotations

import asyncio
import json
import queue
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, ClassVar, Literal

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, field_validator

from kg_agents._compute import run_compute
from kg_agents.errors import ConfigError, ModelError
from kg_agents.llm.local_model import DEFAULT_LOCAL_MODEL, DTYPES, load_local_model, resolve_dtype
from kg_agents.llm.prefix_cache import PrefixCache, prompt_cache
from kg_agents.llm.tool_calling import TOOL_OPTIONS, ToolConstraint, format_tools, structured_output

__all__ = ["LocalChatModel", "generation_lock", "messages_to_chat"]

_MODEL_LOCKS: dict[str, threading.RLock] = {}
_MODEL_LOCKS_GUARD = threading.Lock()

# Per-call keyword arguments understood by _generate/_stream (besides ``stop``).
_CALL_OPTIONS = ("temperature", "top_p", "max_tokens", "max_new_tokens", "seed", "model")


def generation_lock(model_path: str | None = None) -> threading.RLock:
    """The lock that serialises generation on one loaded checkpoint (shared with :class:`LocalChatModel`).

    Code that calls ``generate`` on :func:`load_local_model`'s model directly (a constrained decoder) should
    hold it, so that it never runs concurrently with chat calls on the same weights. It is reentrant.

    Args:
        model_path: the checkpoint directory as given to ``load_local_model``; None for the bundled model.

    Examples:
        >>> with generation_lock():  # doctest: +SKIP
        ...     model.generate(...)
    """
    key = model_path or DEFAULT_LOCAL_MODEL
    with _MODEL_LOCKS_GUARD:
        return _MODEL_LOCKS.setdefault(key, threading.RLock())


_BATCHERS: dict[tuple[str, str, int, float], Any] = {}


def _batcher(chat: LocalChatModel, p: dict[str, Any]) -> Any:
    """The process-wide :class:`~kg_agents.llm.batching.GenerationBatcher` for this checkpoint and size."""
    from kg_agents.llm.batching import GenerationBatcher

    key = (
        chat.model_path or DEFAULT_LOCAL_MODEL,
        resolve_dtype(chat.dtype),
        chat.batch_size,
        chat.batch_window,
    )
    lock = generation_lock(chat.model_path)
    with _MODEL_LOCKS_GUARD:
        if key not in _BATCHERS:
            _BATCHERS[key] = GenerationBatcher(
                p["model"], p["tok"], lock, max_batch=chat.batch_size, window=chat.batch_window
            )
        return _BATCHERS[key]


def _message_text(message: BaseMessage) -> str:
    """The text of a message; non-text content blocks are rejected with a clear error."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
        else:
            kind = block.get("type") if isinstance(block, dict) else type(block).__name__
            raise ModelError(f"the local model reads text only; got a {kind!r} content block")
    return "".join(parts)


def messages_to_chat(messages: Sequence[BaseMessage]) -> list[dict[str, str]]:
    """Convert LangChain messages to chat-template dicts (``role``/``content``).

    Tool messages become ``user`` turns reading ``Tool result (<name>): <content>``; an AI message's tool
    calls are appended to its text as ``Tool call: name({...json args...})``.

    Args:
        messages: system, human, ai, tool or generic chat messages.

    Returns:
        A list of ``{"role": ..., "content": ...}`` dicts for ``tokenizer.apply_chat_template``.

    Raises:
        ModelError: a message kind or content block the model cannot read.

    Examples:
        >>> from langchain_core.messages import HumanMessage, SystemMessage
        >>> messages_to_chat([SystemMessage("Be brief."), HumanMessage("Hi")])
        [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hi'}]
    """
    out: list[dict[str, str]] = []
    for m in messages:
        text = _message_text(m)
        if isinstance(m, SystemMessage):
            out.append({"role": "system", "content": text})
        elif isinstance(m, HumanMessage):
            out.append({"role": "user", "content": text})
        elif isinstance(m, AIMessage):
            calls = [f"Tool call: {c['name']}({json.dumps(c['args'], sort_keys=True)})" for c in m.tool_calls]
            out.append({"role": "assistant", "content": "\n".join([t for t in [text, *calls] if t])})
        elif isinstance(m, ToolMessage):
            name = m.name or m.tool_call_id
            out.append({"role": "user", "content": f"Tool result ({name}): {text}"})
        elif isinstance(m, ChatMessage):
            role = {"human": "user", "ai": "assistant"}.get(m.role, m.role)
            out.append({"role": role, "content": text})
        else:
            raise ModelError(f"the local model cannot read a {type(m).__name__}")
    return out


def _stop_index(text: str, stops: Sequence[str]) -> int:
    """Index of the earliest stop string in ``text``, or -1."""
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(hits) if hits else -1


def _held_back(text: str, stops: Sequence[str]) -> int:
    """How many trailing chars of ``text`` might begin a stop string (so cannot be emitted yet)."""
    best = 0
    for s in stops:
        for k in range(min(len(s) - 1, len(text)), best, -1):
            if text.endswith(s[:k]):
                best = k
                break
    return best


class _StopCriteria:
    """StoppingCriteria: halt at a stop string or when cancelled; records the generated length.

    A plain callable object with the ``StoppingCriteria`` signature (transformers accepts any object in a
    ``StoppingCriteriaList`` that is callable so; subclassing is done lazily in ``_criteria``).
    """

    def __init__(self, tokenizer: Any, prompt_len: int, stops: Sequence[str]) -> None:
        self.tokenizer = tokenizer
        self.prompt_len = prompt_len
        self.stops = [s for s in stops if s]
        self.window = max((len(s) for s in self.stops), default=0) + 8
        self.cancel = threading.Event()
        self.generated = 0

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        self.generated = int(input_ids.shape[1]) - self.prompt_len
        done = self.cancel.is_set()
        if not done and self.stops and self.generated > 0:
            tail = input_ids[0, max(self.prompt_len, input_ids.shape[1] - self.window) :]
            done = _stop_index(self.tokenizer.decode(tail, skip_special_tokens=True), self.stops) >= 0
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


class _TokenQueue:
    """A transformers streamer that hands generated token ids to the consumer through a queue."""

    def __init__(self) -> None:
        self.q: queue.Queue[Any] = queue.Queue()
        self._seen_prompt = False

    def put(self, value: Any) -> None:
        if not self._seen_prompt:  # the first put is the prompt
            self._seen_prompt = True
            return
        self.q.put([int(t) for t in value.reshape(-1).tolist()])

    def end(self) -> None:
        self.q.put(None)


class LocalChatModel(BaseChatModel):
    """Chat model over a local Hugging Face causal LM (default: the bundled SmolLM2-135M-Instruct).

    The weights load lazily on the first call and are shared by every instance in the process.

    Args:
        model: display name of the model (``model_name``); also the cache key with ``model_path``.
        model_path: a local HF checkpoint directory; None for the bundled SmolLM2-135M-Instruct.
        temperature: 0 for greedy decoding (default); > 0 samples.
        top_p: nucleus sampling mass when sampling.
        max_tokens: most new tokens per call (alias ``max_new_tokens``).
        stop: default stop strings (per-call ``stop`` replaces them).
        timeout: seconds a generation may run (transformers ``max_time``); None: no limit.
        max_retries: accepted for interface parity with API chat models; local generation is not retried.
        streaming: when True, ``invoke`` streams internally (callbacks get each token).
        seed: seed for sampling (``temperature > 0``), for reproducible samples.
        batch_size: greedy calls made at the same time (``batch``/``abatch``, concurrent questions) are
            decoded together in batches of up to this many (see :mod:`kg_agents.llm.batching`); 1 turns
            dynamic batching off. Streaming calls and seeded sampling calls are never batched.
        batch_window: seconds the batcher waits for another call after each one (at most 0.25 s in all).
        dtype: ``float32``, ``bfloat16``, ``int8`` (linear weights in int8) or ``auto`` (bfloat16 where the
            CPU computes it natively); None: ``$KG_AGENTS_DTYPE``, else ``auto``
            (:func:`~kg_agents.llm.local_model.load_local_model`).
        prefix_cache: reuse the keys and values of the longest prefix a prompt shares with a recent one
            (:mod:`kg_agents.llm.prefix_cache`), in option ranking and in unbatched generation (tool calls,
            structured output, streaming, seeded sampling, ``batch_size=1``); batched generation pads
            its prompts to one width and runs them whole.

    Examples:
        >>> llm = LocalChatModel(max_tokens=16)  # doctest: +SKIP
        >>> llm.invoke("Name a film directed by Ron Howard.").usage_metadata  # doctest: +SKIP
        {'input_tokens': 38, 'output_tokens': 9, 'total_tokens': 47}
    """

    model_config = ConfigDict(populate_by_name=True, protected_namespaces=())

    model_name: str = Field(default=DEFAULT_LOCAL_MODEL, alias="model")
    model_path: str | None = None
    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = Field(default=256, validation_alias=AliasChoices("max_tokens", "max_new_tokens"))
    stop: list[str] | None = None
    timeout: float | None = None
    max_retries: int = 0
    streaming: bool = False
    seed: int | None = None
    batch_size: int = 16
    batch_window: float = 0.05
    dtype: str | None = None
    prefix_cache: bool = True

    _hf: tuple[Any, Any] | None = PrivateAttr(default=None)

    #: Tool calls come from grammar-constrained decoding, not from tool-use training (methods that can
    #: prompt for text actions instead, such as ``graph_agent``'s ``action_mode="auto"``, do so).
    native_tool_calling: ClassVar[bool] = False

    @field_validator("dtype")
    @classmethod
    def _check_dtype(cls, v: str | None) -> str | None:
        if v is not None and v not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}; got {v!r}")
        return v

    @field_validator("temperature")
    @classmethod
    def _check_temperature(cls, v: float) -> float:
        if v < 0:
            raise ValueError(f"temperature must be >= 0, got {v}")
        return v

    @field_validator("max_tokens", "batch_size")
    @classmethod
    def _check_at_least_one(cls, v: int, info: ValidationInfo) -> int:
        if v < 1:
            raise ValueError(f"{info.field_name} must be >= 1, got {v}")
        return v

    @field_validator("top_p")
    @classmethod
    def _check_top_p(cls, v: float) -> float:
        if not 0 < v <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {v}")
        return v

    # ------------------------------------------------------------------ LangChain metadata
    @property
    def _llm_type(self) -> str:
        return "kg-agents-local"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "model_path": self.model_path,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_tokens,
            "dtype": resolve_dtype(self.dtype),
        }

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = LangSmithParams(
            ls_provider="kg_agents_local",
            ls_model_name=str(kwargs.get("model", self.model_name)),
            ls_model_type="chat",
            ls_temperature=kwargs.get("temperature", self.temperature),
            ls_max_tokens=kwargs.get("max_tokens", self.max_tokens),
        )
        if stop or self.stop:
            params["ls_stop"] = list(stop or self.stop or [])
        return params

    # ------------------------------------------------------------------ model access
    def _load(self) -> tuple[Any, Any]:
        if self._hf is None:
            self._hf = load_local_model(self.model_path, dtype=self.dtype)
        return self._hf

    def prompt_cache(self) -> PrefixCache | None:
        """The prefix cache of this model's checkpoint and dtype (None when ``prefix_cache`` is off)."""
        if not self.prefix_cache:
            return None
        return prompt_cache(self.model_path or DEFAULT_LOCAL_MODEL, resolve_dtype(self.dtype))

    def get_num_tokens(self, text: str) -> int:
        """Number of tokens of ``text`` with this model's tokenizer."""
        _, tok = self._load()
        return len(tok.encode(text, add_special_tokens=False))

    # ------------------------------------------------------------------ tools and structured output
    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | dict[str, Any] | bool | None = None,
        **kwargs: Any,
    ) -> Runnable[Any, AIMessage]:
        """Bind tools; replies are text or one tool call, constrained to the tools' schemas.

        Args:
            tools: ``BaseTool``\\ s, functions, pydantic models, TypedDicts or OpenAI-format tool dicts.
            tool_choice: ``"auto"`` (default: text or a call), ``"any"``/``"required"``/``True`` (a call),
                a tool name (a call to it) or ``"none"`` (text).
            **kwargs: further call options bound with the tools.

        Raises:
            ConfigError: a tool that cannot be converted, or an unknown ``tool_choice``.
        """
        formatted = format_tools(tools)
        ToolConstraint.from_options({"tools": formatted, "tool_choice": tool_choice})  # validates now
        return self.bind(tools=formatted, tool_choice=tool_choice, **kwargs)

    def with_structured_output(
        self,
        schema: dict[str, Any] | type,
        *,
        include_raw: bool = False,
        method: Literal["function_calling", "json_schema", "json_mode"] = "function_calling",
        strict: bool | None = None,
        **kwargs: Any,
    ) -> Runnable[Any, dict[str, Any] | BaseModel]:
        """Replies parsed into ``schema`` (pydantic class, TypedDict or JSON schema), decoded to match it.

        Args:
            schema: the output schema.
            include_raw: return ``{"raw", "parsed", "parsing_error"}`` instead of the parsed value.
            method: ``"function_calling"`` (a forced call of a tool named after the schema),
                ``"json_schema"`` (the whole reply constrained to the schema) or ``"json_mode"`` (any
                JSON object; say which keys in the prompt).
            strict: accepted for interface parity; the decoding always follows the schema.
        """
        return structured_output(
            self, schema, include_raw=include_raw, method=method, strict=strict, **kwargs
        )

    def _prepare(self, messages: list[BaseMessage], stop: list[str] | None, kwargs: dict[str, Any]) -> dict:
        kwargs = dict(kwargs)
        constraint = ToolConstraint.from_options(kwargs)  # pops the tool options
        unknown = [k for k in kwargs if k not in _CALL_OPTIONS and not k.startswith("ls_")]
        if unknown:
            raise ConfigError(
                f"LocalChatModel got unsupported call options {sorted(unknown)}; "
                f"supported: stop, {', '.join(o for o in _CALL_OPTIONS if o != 'model')}, "
                + ", ".join(TOOL_OPTIONS)
            )
        if kwargs.get("model", self.model_name) != self.model_name:
            raise ConfigError(
                f"LocalChatModel serves {self.model_name!r} only; got model={kwargs['model']!r} "
                "(make another instance with resolve_chat_model('local:/path/to/hf_dir'))"
            )
        model, tok = self._load()
        chat = messages_to_chat(constraint.render(messages) if constraint is not None else messages)
        try:
            ids = tok.apply_chat_template(
                chat, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )
        except Exception as exc:
            raise ModelError(f"could not apply the chat template of {self.model_name}: {exc}") from exc
        input_ids = ids["input_ids"]
        temperature = float(kwargs.get("temperature", self.temperature))
        max_new = int(kwargs.get("max_tokens", kwargs.get("max_new_tokens", self.max_tokens)))
        stops = list(stop if stop is not None else (self.stop or []))
        if temperature < 0 or max_new < 1:
            raise ConfigError(f"need temperature >= 0 and max_tokens >= 1, got {temperature} and {max_new}")
        from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

        cfg = GenerationConfig(
            max_new_tokens=max_new,
            do_sample=temperature > 0,
            temperature=temperature if temperature > 0 else None,
            top_p=float(kwargs.get("top_p", self.top_p)) if temperature > 0 else None,
            top_k=None,
            max_time=self.timeout,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        )
        criteria = _StopCriteria(tok, int(input_ids.shape[1]), stops)
        grammar = constraint.processor(tok, int(input_ids.shape[1])) if constraint is not None else None
        return {
            "constraint": constraint,
            "processors": LogitsProcessorList([grammar]) if grammar is not None else None,
            "model": model,
            "tok": tok,
            "inputs": {"input_ids": input_ids, "attention_mask": ids["attention_mask"]},
            "config": cfg,
            "criteria": criteria,
            "criteria_list": StoppingCriteriaList([criteria]),
            "stops": stops,
            "seed": kwargs.get("seed", self.seed),
            "model_name": str(kwargs.get("model", self.model_name)),
        }

    def _run_generate(self, p: dict[str, Any], streamer: Any = None) -> Any:
        import torch

        with generation_lock(self.model_path), torch.inference_mode():
            if p["seed"] is not None and p["config"].do_sample:
                torch.manual_seed(int(p["seed"]))
            cache = self.prompt_cache()
            past = None
            if cache is not None:  # the documented way: a filled cache of the prompt's first tokens
                from transformers import DynamicCache

                past = cache.lookup(p["inputs"]["input_ids"][0].tolist())[1]
                past = DynamicCache(config=p["model"].config) if past is None else past
            try:
                out = run_compute(
                    p["model"].generate,
                    **p["inputs"],
                    generation_config=p["config"],
                    stopping_criteria=p["criteria_list"],
                    logits_processor=p["processors"],
                    streamer=streamer,
                    past_key_values=past,
                )
            except ModelError:
                raise
            except Exception as exc:
                raise ModelError(f"generation with {self.model_name} failed: {exc}") from exc
            if cache is not None and past is not None and past.get_seq_length():  # all but the last token
                cache.store(out[0, : past.get_seq_length()].tolist(), past)
            return out

    @staticmethod
    def _finish_reason(p: dict[str, Any], out_ids: list[int], stopped: bool) -> str:
        if stopped or (out_ids and out_ids[-1] == p["tok"].eos_token_id):
            return "stop"
        return "length"

    @staticmethod
    def _usage(p: dict[str, Any], n_out: int) -> UsageMetadata:
        n_in = int(p["inputs"]["input_ids"].shape[1])
        return UsageMetadata(input_tokens=n_in, output_tokens=n_out, total_tokens=n_in + n_out)

    # ------------------------------------------------------------------ generation
    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.streaming:
            chunk: ChatGenerationChunk | None = None
            for c in self._stream(messages, stop=stop, run_manager=run_manager, **kwargs):
                chunk = c if chunk is None else chunk + c
            assert chunk is not None  # _stream always yields the final chunk
            msg = chunk.message
            return ChatResult(
                generations=[
                    ChatGeneration(
                        message=AIMessage(
                            content=msg.content,
                            tool_calls=msg.tool_calls,  # type: ignore[attr-defined]
                            invalid_tool_calls=msg.invalid_tool_calls,  # type: ignore[attr-defined]
                            usage_metadata=msg.usage_metadata,  # type: ignore[attr-defined]
                            response_metadata=msg.response_metadata,
                        )
                    )
                ]
            )
        p = self._prepare(messages, stop, kwargs)
        if self._batchable(p):
            return self._result(p, self._submit(p).result())
        result = self._result(p, self._run_generate(p)[0, p["criteria"].prompt_len :].tolist())
        # a repeated tool call is asked again (see ToolConstraint.retry_options); bounded by the tool count
        while p["constraint"] is not None and (
            retry := p["constraint"].retry_options(first := result.generations[0].message)
        ):
            p = self._prepare(messages, stop, {**kwargs, **retry})
            result = self._result(p, self._run_generate(p)[0, p["criteria"].prompt_len :].tolist())
            p["constraint"].add_usage(first, result.generations[0].message)
        return result

    # ------------------------------------------------------------------ dynamic batching
    def _batchable(self, p: dict[str, Any]) -> bool:
        return (
            self.batch_size > 1
            and p["processors"] is None
            and (not p["config"].do_sample or p["seed"] is None)
        )

    def _submit(self, p: dict[str, Any]) -> Any:
        from kg_agents.llm.batching import BatchRequest

        return _batcher(self, p).submit(
            BatchRequest(
                prompt_ids=p["inputs"]["input_ids"][0].tolist(),
                max_new_tokens=int(p["config"].max_new_tokens),
                stops=p["stops"],
                max_time=p["config"].max_time,
                temperature=float(p["config"].temperature or 0.0) if p["config"].do_sample else 0.0,
                top_p=float(p["config"].top_p or 1.0) if p["config"].do_sample else 1.0,
            )
        )

    def _result(self, p: dict[str, Any], out: Any) -> ChatResult:
        from kg_agents.llm.batching import BatchResult

        batch = 1
        if isinstance(out, BatchResult):
            out_ids, batch = out.token_ids, out.batch_size
        else:
            out_ids = out
        text = p["tok"].decode(out_ids, skip_special_tokens=True)
        cut = _stop_index(text, p["stops"])
        if cut >= 0:
            text = text[:cut]
        message = AIMessage(
            content=text,
            usage_metadata=self._usage(p, len(out_ids)),
            response_metadata={
                "model_name": p["model_name"],
                "finish_reason": self._finish_reason(p, out_ids, cut >= 0),
                "model_provider": "kg_agents_local",
                "batch_size": batch,
            },
        )
        if p["constraint"] is not None:
            message = p["constraint"].finish(message)
        return ChatResult(generations=[ChatGeneration(message=message)])

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        sync_rm = run_manager.get_sync() if run_manager else None
        if not self.streaming and self.batch_size > 1:
            p = await asyncio.to_thread(self._prepare, messages, stop, kwargs)
            if self._batchable(p):  # wait for the batch without holding a worker thread
                return self._result(p, await asyncio.wrap_future(self._submit(p)))
        return await asyncio.to_thread(self._generate, messages, stop, sync_rm, **kwargs)

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        p = self._prepare(messages, stop, kwargs)
        chunks = self._stream_prepared(p, run_manager)
        if p["constraint"] is None:
            yield from chunks
            return

        def again(retry: dict[str, Any]) -> Iterator[ChatGenerationChunk]:  # ToolConstraint.retry_options
            q = self._prepare(messages, stop, {**kwargs, **retry})
            assert q["constraint"] is not None
            return q["constraint"].stream(self._stream_prepared(q, run_manager), again)

        yield from p["constraint"].stream(chunks, again)

    def _stream_prepared(
        self, p: dict[str, Any], run_manager: CallbackManagerForLLMRun | None
    ) -> Iterator[ChatGenerationChunk]:
        tok, stops, criteria = p["tok"], p["stops"], p["criteria"]
        streamer = _TokenQueue()
        failure: list[BaseException] = []

        def work() -> None:
            try:
                self._run_generate(p, streamer)
            except BaseException as exc:  # handed to the consumer below, re-raised there
                failure.append(exc)
            finally:
                streamer.end()

        thread = threading.Thread(target=work, name="kg-agents-local-generate", daemon=True)
        thread.start()
        ids: list[int] = []
        emitted = 0
        stopped = False
        try:
            while (step := streamer.q.get()) is not None:
                ids.extend(step)
                text = tok.decode(ids, skip_special_tokens=True)
                if text.endswith("\ufffd"):  # an incomplete UTF-8 sequence: wait for the next token
                    continue
                cut = _stop_index(text, stops)
                if cut >= 0:
                    stopped = True
                    criteria.cancel.set()
                    safe = cut
                else:
                    safe = len(text) - _held_back(text, stops)
                if safe > emitted:
                    delta = text[emitted:safe]
                    emitted = safe
                    chunk = ChatGenerationChunk(message=AIMessageChunk(content=delta))
                    if run_manager:
                        run_manager.on_llm_new_token(delta, chunk=chunk)
                    yield chunk
                if stopped:
                    break
        finally:
            criteria.cancel.set()  # the consumer may have stopped early: halt generation
            thread.join()
        if failure:
            exc = failure[0]
            raise exc if isinstance(exc, ModelError) else ModelError(f"generation failed: {exc}") from exc
        if not stopped:  # flush what was held back as a possible stop-string prefix
            text = tok.decode(ids, skip_special_tokens=True)
            if len(text) > emitted:
                delta = text[emitted:]
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=delta))
                if run_manager:
                    run_manager.on_llm_new_token(delta, chunk=chunk)
                yield chunk
        n_out = max(criteria.generated, len(ids))
        yield ChatGenerationChunk(
            message=AIMessageChunk(
                content="",
                usage_metadata=self._usage(p, n_out),
                response_metadata={
                    "model_name": p["model_name"],
                    "finish_reason": self._finish_reason(p, ids, stopped),
                    "model_provider": "kg_agents_local",
                },
                chunk_position="last",
            )
        )

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        sync_rm = run_manager.get_sync() if run_manager else None
        iterator: Any = self._stream(messages, stop, sync_rm, **kwargs)  # a generator: has close()
        sentinel = object()
        try:
            while (chunk := await asyncio.to_thread(next, iterator, sentinel)) is not sentinel:
                yield chunk  # type: ignore[misc]
        finally:
            await asyncio.to_thread(iterator.close)
