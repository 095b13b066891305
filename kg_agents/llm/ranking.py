"""Option ranking: a chat model picks from a known set by scoring each option, not by writing text.

:func:`rank_options` scores every option as the assistant's whole reply to ``messages``: the sum of the
log-probabilities of the option's tokens and of the end-of-turn token that closes it (so "Tom" does not
win over "Tom Hanks" by being a prefix of it). The prompt is encoded once; the options are scored in
batches on top of its cache. On the embedded model, the prompt's beginning that it shares with a recent
prompt (a method's instructions and examples) is not encoded again (:mod:`kg_agents.llm.prefix_cache`).
Routes, best first:

- ``logprobs`` on the embedded model (:class:`~kg_agents.llm.chat.LocalChatModel`): exact scores from
  one forward pass over the prompt and batched passes over the options;
- ``logprobs`` on a vLLM server (a ``ChatOpenAI`` pointed at it, e.g. ``resolve_chat_model("openai:...")``):
  the same token sequences, scored by the server's prompt log-probabilities in one request;
- ``logprobs`` on any object with a ``score_options(messages, options) -> list[float]`` method
  (:class:`OptionScorer`; a user's own engine, a scripted model in tests); it may raise
  ``NotImplementedError`` to decline, and the next route is taken;
- ``structured`` on any other chat model: structured output with an enum of the options (one choice,
  no scores);
- ``generate`` as the last resort: the model writes free text, matched to an option after
  normalisation (the route is in :attr:`Ranking.route`, and a reply naming no option leaves
  :attr:`Ranking.matched` False).

A single option is returned as it is, without a model call (route ``only``).

Example:
    >>> r = Ranking(options=("Big", "Splash"), scores=(-3.0, -0.5), route="logprobs")
    >>> r.best, [o for o, _ in r.ranked()]
    ('Splash', ['Splash', 'Big'])
"""

from __future__ import annotations

import copy
import math
import re
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage

from kg_agents._compute import run_compute
from kg_agents.errors import ConfigError, ModelError
from kg_agents.llm.prefix_cache import PrefixCache, prefill
from kg_agents.untrusted import neutralize_control

__all__ = [
    "OptionScorer",
    "RankRoute",
    "Ranking",
    "match_option",
    "option_probabilities",
    "rank_options",
    "score_local",
    "score_vllm",
]

RankRoute = Literal["logprobs", "structured", "generate", "only"]

_PUNCT = str.maketrans("", "", string.punctuation)


@runtime_checkable
class OptionScorer(Protocol):
    """Anything that scores options as replies to a conversation (higher is better)."""

    def score_options(self, messages: Sequence[BaseMessage], options: Sequence[str]) -> list[float]:
        """One log-probability per option, in order."""
        ...


@dataclass(frozen=True)
class Ranking:
    """The result of :func:`rank_options`.

    Attributes:
        options: the options, in the order given.
        scores: one log-probability per option (``logprobs`` route); on the other routes the chosen
            option scores 0.0 and every other ``-inf``.
        route: ``logprobs``, ``structured``, ``generate``, or ``only`` (a single option: no model call).
        matched: False when the ``generate`` route's reply named no option (then every score is ``-inf``).
        raw: the model's reply on the ``structured`` and ``generate`` routes.
        input_tokens: prompt (and option) tokens the model read.
        output_tokens: tokens the model generated (0 on the ``logprobs`` route).
    """

    options: tuple[str, ...]
    scores: tuple[float, ...]
    route: RankRoute
    matched: bool = True
    raw: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def ranked(self) -> list[tuple[str, float]]:
        """``(option, score)`` pairs, best first (ties keep the given order)."""
        return [(self.options[i], self.scores[i]) for i in self.order()]

    def order(self) -> list[int]:
        """Indices of the options, best first (ties keep the given order)."""
        return sorted(range(len(self.options)), key=lambda i: -self.scores[i])

    @property
    def best(self) -> str | None:
        """The top option; None when there were no options or the reply named none."""
        if not self.options or not self.matched:
            return None
        return self.options[self.order()[0]]

    def probabilities(self) -> list[float]:
        """The scores as a distribution over the options (softmax), in the given order."""
        return option_probabilities(self.scores)

    def as_trace(self, top: int = 10) -> dict[str, Any]:
        """A compact, JSON-able record for a graph's ``trace``: route and the top options' probabilities."""
        probs = self.probabilities()
        best = [(self.options[i], round(probs[i], 4)) for i in self.order()[:top]]
        out: dict[str, Any] = {"route": self.route, "options": len(self.options), "top": best}
        if not self.matched:
            out["matched"] = False
        if self.raw is not None:
            out["raw"] = self.raw
        if "calibrated" in self.extra:
            out["calibrated"] = self.extra["calibrated"]
        return out


def option_probabilities(scores: Sequence[float]) -> list[float]:
    """Softmax of log-probabilities (``-inf`` gets 0; all ``-inf`` gives all 0).

    Example:
        >>> [round(p, 3) for p in option_probabilities([0.0, math.log(3)])]
        [0.25, 0.75]
    """
    finite = [s for s in scores if s != -math.inf]
    if not finite:
        return [0.0 for _ in scores]
    top = max(finite)
    exps = [0.0 if s == -math.inf else math.exp(s - top) for s in scores]
    total = sum(exps)
    return [e / total for e in exps]


def _norm(text: str) -> str:
    return " ".join(str(text).lower().replace("_", " ").translate(_PUNCT).split())


def match_option(text: str, options: Sequence[str]) -> int | None:
    """The option a free-text reply names: equal after normalisation, else the longest option named in
    it on word boundaries (earliest on a tie), else the option the reply is part of (one that ends with
    it first, then the shortest); None when it names none.

    Example:
        >>> match_option("The answer is Ron Howard.", ["Ron", "Ron Howard", "Splash"])
        1
        >>> match_option("Answer: Ron Howard", ["Splash starred Tom Hanks", "Splash directed by Ron Howard"])
        1
    """
    t = _norm(text)
    normed = [_norm(o) for o in options]
    for i, o in enumerate(normed):
        if o and o == t:
            return i
    best: tuple[int, int, int] | None = None  # (-length, position, index)
    for i, o in enumerate(normed):
        if not o:
            continue
        m = re.search(rf"(?<!\w){re.escape(o)}(?!\w)", t)
        if m:
            key = (-len(o), m.start(), i)
            if best is None or key < best:
                best = key
    if best is not None:
        return best[2]
    # The reply may name just a part of an option (its answer at the end, say): the option that contains
    # it, preferring one that ends with it, then the shortest.
    tail = re.sub(r"^(answer|the answer is)\s+", "", t)
    if not tail:
        return None
    inside = [
        (not o.endswith(tail), len(o), i)
        for i, o in enumerate(normed)
        if o and re.search(rf"(?<!\w){re.escape(tail)}(?!\w)", o)
    ]
    return min(inside)[2] if inside else None


# --------------------------------------------------------------------------- token sequences
def _chat_token_ids(tok: Any, chat: list[dict[str, str]], *, generation_prompt: bool) -> list[int]:
    ids = tok.apply_chat_template(chat, add_generation_prompt=generation_prompt, tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):
        ids = ids["input_ids"]
    return [int(t) for t in ids]


def reply_token_ids(
    tok: Any, chat: list[dict[str, str]], options: Sequence[str], *, complete: bool = True
) -> tuple[list[int], list[list[int]]]:
    """The prompt's token ids (with the assistant turn opened) and each option's reply tokens.

    An option's tokens are what the chat template writes for an assistant reply of that text, up to and
    including its end-of-turn token, so scoring them is scoring the whole reply; ``complete=False`` leaves
    the end-of-turn token out (the option is then scored as the start of a reply, e.g. a letter choice).
    """
    prefix = _chat_token_ids(tok, chat, generation_prompt=True)
    empty = _chat_token_ids(tok, [*chat, {"role": "assistant", "content": ""}], generation_prompt=False)
    if empty[: len(prefix)] != prefix or len(empty) == len(prefix):
        eos = [int(tok.eos_token_id)] if tok.eos_token_id is not None and complete else []
        return prefix, [[*tok.encode(o, add_special_tokens=False), *eos] for o in options]
    tail = len(empty) - len(prefix)  # end-of-turn and what follows it
    conts = []
    for o in options:
        full = _chat_token_ids(tok, [*chat, {"role": "assistant", "content": o}], generation_prompt=False)
        if full[: len(prefix)] != prefix:
            raise ModelError("the chat template does not extend the prompt with the reply; cannot rank")
        conts.append(full[len(prefix) : len(full) - tail + (1 if complete else 0)])
    return prefix, conts


def score_local(
    model: Any,
    tok: Any,
    chat: list[dict[str, str]],
    options: Sequence[str],
    *,
    batch_size: int = 32,
    complete: bool = True,
    per_token: bool = False,
    prefix_cache: PrefixCache | None = None,
) -> tuple[list[float], int]:
    """Exact reply log-probabilities of ``options`` on a transformers causal LM (``per_token``: their
    mean over the option's tokens instead of their sum).

    The prompt runs once (its KV cache kept; with ``prefix_cache``, only the part after the longest
    prefix it shares with a cached prompt, see :func:`~kg_agents.llm.prefix_cache.prefill`); the options
    run in batches of ``batch_size`` on copies of that cache, right-padded so no mask is needed (a real
    token never attends to a later pad).

    Returns:
        ``(scores, tokens_read)``: one summed log-probability per option, and prompt + option tokens.
    """
    import torch

    prefix, conts = reply_token_ids(tok, chat, options, complete=complete)
    scores: list[float] = []
    with torch.inference_mode():
        logits, cache = prefill(model, prefix, prefix_cache)
        first = torch.log_softmax(logits.float(), dim=-1)
        for start in range(0, len(conts), batch_size):
            chunk = conts[start : start + batch_size]
            width = max(len(c) for c in chunk)
            ids = torch.zeros((len(chunk), width), dtype=torch.long)
            for r, c in enumerate(chunk):
                ids[r, : len(c)] = torch.tensor(c)
            past = copy.deepcopy(cache)
            past.batch_repeat_interleave(len(chunk))
            logp = torch.log_softmax(model(ids, past_key_values=past, use_cache=True).logits.float(), dim=-1)
            for r, c in enumerate(chunk):
                total = float(first[c[0]])
                for j in range(1, len(c)):
                    total += float(logp[r, j - 1, c[j]])
                scores.append(total / len(c) if per_token else total)
    return scores, len(prefix) + sum(len(c) for c in conts)


def score_vllm(
    client: Any,
    chat: list[dict[str, str]],
    options: Sequence[str],
    *,
    complete: bool = True,
    per_token: bool = False,
) -> tuple[list[float], int]:
    """Reply log-probabilities of ``options`` from a vLLM server's prompt log-probabilities (one request).

    The server applies its own chat template (``/tokenize`` with ``messages``), so the token sequences are
    those :func:`score_local` scores for the same checkpoint.
    """
    prefix = client.tokenize_chat(chat, add_generation_prompt=True)
    empty = client.tokenize_chat([*chat, {"role": "assistant", "content": ""}], add_generation_prompt=False)
    tail = len(empty) - len(prefix)
    seqs, conts = [], []
    for o in options:
        full = client.tokenize_chat([*chat, {"role": "assistant", "content": o}], add_generation_prompt=False)
        if full[: len(prefix)] != prefix or tail < 1:
            raise ModelError("the server's chat template does not extend the prompt with the reply")
        cont = full[len(prefix) : len(full) - tail + (1 if complete else 0)]
        conts.append(cont)
        seqs.append([*prefix, *cont])
    rows = client.prompt_logprobs(seqs)
    scores = [float(sum(x for x in row[len(prefix) :] if x is not None)) for row in rows]
    if per_token:
        scores = [sc / len(c) for sc, c in zip(scores, conts, strict=True)]
    return scores, len(prefix) + sum(len(c) for c in conts)


# --------------------------------------------------------------------------- routes
def _from_choice(
    options: tuple[str, ...], index: int | None, route: RankRoute, raw: str, usage: Any
) -> Ranking:
    scores = tuple(0.0 if i == index else -math.inf for i in range(len(options)))
    meta = usage or {}
    return Ranking(
        options=options,
        scores=scores,
        route=route,
        matched=index is not None,
        raw=raw,
        input_tokens=int(meta.get("input_tokens", 0) or 0),
        output_tokens=int(meta.get("output_tokens", 0) or 0),
    )


def _structured(llm: BaseChatModel, messages: list[BaseMessage], options: tuple[str, ...]) -> Ranking | None:
    schema = {
        "title": "choice",
        "description": "Pick exactly one of the options.",
        "type": "object",
        "properties": {"choice": {"type": "string", "enum": list(options)}},
        "required": ["choice"],
    }
    try:
        runnable = llm.with_structured_output(schema, include_raw=True)
    except (NotImplementedError, ValueError, TypeError, AttributeError):
        return None  # no structured output: generate and match
    out = runnable.invoke(messages)
    parsed = out.get("parsed") if isinstance(out, dict) else None
    raw = out.get("raw") if isinstance(out, dict) else None
    usage = getattr(raw, "usage_metadata", None)
    choice = parsed.get("choice") if isinstance(parsed, dict) else None
    if choice in options:
        return _from_choice(options, options.index(choice), "structured", str(choice), usage)
    # The model answered in text instead of the structure: match that text (one call, not two).
    content = getattr(raw, "content", "")
    text = content if isinstance(content, str) else str(content)
    return _from_choice(options, match_option(text, options), "generate", text, usage)


def _generate(llm: BaseChatModel, messages: list[BaseMessage], options: tuple[str, ...]) -> Ranking:
    msg = llm.invoke(messages)
    text = msg.content if isinstance(msg.content, str) else str(msg.content)
    return _from_choice(
        options, match_option(text, options), "generate", text, getattr(msg, "usage_metadata", None)
    )


_NOT_VLLM: set[str] = set()  # OpenAI-compatible servers that answered without prompt log-probabilities


def _vllm_client(llm: Any) -> Any | None:
    base = getattr(llm, "openai_api_base", None)
    name = getattr(llm, "model_name", None)
    if not base or not name or str(base) in _NOT_VLLM:
        return None
    from kg_agents.llm.vllm_client import VLLMClient

    key: Any = getattr(llm, "openai_api_key", None)
    secret = key.get_secret_value() if hasattr(key, "get_secret_value") else (key or "EMPTY")
    return VLLMClient(str(base), str(name), api_key=str(secret))


def rank_options(
    llm: Any,
    messages: Sequence[BaseMessage] | str,
    options: Sequence[str],
    *,
    prefix: str = "",
    complete: bool = True,
    per_token: bool = False,
    batch_size: int = 32,
) -> Ranking:
    """Rank ``options`` as replies of ``llm`` to ``messages`` (see the module docstring for the routes).

    Args:
        llm: a LangChain chat model (the embedded one, a vLLM server's, any other) or an
            :class:`OptionScorer`.
        messages: the prompt (a string is one human message); it should show the options.
        options: the candidate replies (distinct, non-empty strings).
        prefix: text every scored reply starts with (``"Answer: "`` when the prompt asks for that
            form); the options are scored as ``prefix + option`` but matched, on the text routes, and
            returned bare. A scored reply has its chat-template tokens neutralised
            (:func:`kg_agents.untrusted.neutralize_control`); the options are returned as given.
        complete: score each reply with its end-of-turn token (the whole reply: default), or without
            it (the reply's start: a letter among lettered options, say).
        per_token: score by the mean log-probability per token instead of the sum, so options of
            different lengths compete on equal terms (the log-probability routes only).
        batch_size: options per forward pass on the embedded model.

    Returns:
        A :class:`Ranking` (scores in the given order; ``ranked()``/``best`` for the order).

    Raises:
        ConfigError: no options, an empty or repeated option, or ``batch_size`` < 1.
        ModelError: the model failed.
    """
    opts = tuple(str(o) for o in options)
    if not opts:
        raise ConfigError("rank_options needs at least one option")
    if any(not o.strip() for o in opts):
        raise ConfigError("rank_options: every option must be a non-empty string")
    if len(set(opts)) != len(opts):
        raise ConfigError("rank_options: options must be distinct")
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    if not isinstance(llm, (BaseChatModel, OptionScorer)):
        raise ConfigError(f"rank_options needs a chat model or an OptionScorer, got {type(llm).__name__}")
    msgs: list[BaseMessage] = [HumanMessage(messages)] if isinstance(messages, str) else list(messages)
    if len(opts) == 1:  # nothing to choose: no model call
        return Ranking(opts, (0.0,), "only")
    # an option is often KG text: no chat-template token in it may end the reply early when scored
    replies = [neutralize_control(f"{prefix}{o}") for o in opts]

    from kg_agents.llm.chat import LocalChatModel, generation_lock, messages_to_chat

    if isinstance(llm, LocalChatModel):
        from kg_agents.llm.local_model import load_local_model

        model, tok = load_local_model(llm.model_path, dtype=llm.dtype)
        chat = messages_to_chat(msgs)
        try:
            with generation_lock(llm.model_path):
                scores, n_in = run_compute(
                    score_local,
                    model,
                    tok,
                    chat,
                    replies,
                    batch_size=batch_size,
                    complete=complete,
                    per_token=per_token,
                    prefix_cache=llm.prompt_cache(),
                )
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(f"the local model failed to score options: {exc}") from exc
        return Ranking(opts, tuple(scores), "logprobs", input_tokens=n_in)
    if isinstance(llm, OptionScorer):
        scored: list[float] | None
        try:
            scored = [float(s) for s in llm.score_options(msgs, replies)]
        except NotImplementedError:
            scored = None
        if scored is not None:
            if len(scored) != len(opts):
                raise ModelError(f"score_options returned {len(scored)} scores for {len(opts)} options")
            return Ranking(opts, tuple(scored), "logprobs")
    client = _vllm_client(llm)
    if client is not None:
        try:
            scores, n_in = score_vllm(
                client, messages_to_chat(msgs), replies, complete=complete, per_token=per_token
            )
            return Ranking(opts, tuple(scores), "logprobs", input_tokens=n_in)
        except ModelError:
            _NOT_VLLM.add(client.base_url)  # no chat /tokenize or prompt log-probabilities: not vLLM
        finally:
            client.close()
    if not isinstance(llm, BaseChatModel):
        raise ModelError(f"{type(llm).__name__} declined to score options and is no chat model to ask")
    return _structured(llm, msgs, opts) or _generate(llm, msgs, opts)
