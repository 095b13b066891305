"""GCR's constrained decoders: the protocol, what they return, and what every decoder shares.

``ConstrainedDecoder`` is token-level generation restricted to a KG-Trie: every path it returns is
a path of the trie. Implementations: a local transformers model (a LogitsProcessor inside beam
search, :mod:`~kg_agents.methods.gcr.local_decoder`) and a vLLM server
(:mod:`~kg_agents.methods.gcr.vllm_decoder`); :func:`~kg_agents.methods.gcr.resolve.resolve_decoder`
turns a spec into one. A decoder never falls back to the full vocabulary: when the trie has no
continuation, the beam ends.

Both decoders share, from here: the prompt rendering (:func:`render_prompt`, the assistant prefix
and the answer header of figure 3's output format), the tokens a beam may take at a trie node
(:func:`candidates_of`), the checks of a request (:meth:`TrieDecoder.check_trie`,
:func:`check_num_beams`), the rows of the hypothesis-answer pass (:meth:`TrieDecoder.answer_rows`)
and the assembly of a result (:func:`decoded_path`).

Example:
    >>> decoded_path("Splash -> directed_by -> Ron Howard", -0.5, "Ron Howard", answer=True).text
    '<PATH> Splash -> directed_by -> Ron Howard </PATH>\\n# Answer:\\nRon Howard'
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from kg_agents.errors import ConfigError, ModelError
from kg_agents.methods.gcr.trie import END, KGTrie, format_path, tokenizer_signature

__all__ = [
    "ANSWER_HEADER",
    "ASSISTANT_PREFIX",
    "PATH_SCORES",
    "ConstrainedDecoder",
    "DecodedPath",
    "TrieDecoder",
    "candidates_of",
    "check_num_beams",
    "check_path_scores",
    "decoded_path",
    "default_length_penalty",
    "render_prompt",
    "renormalised",
]

#: How a decoder scores a path: ``"model"`` (the paper's, transformers' beam scores): the model's
#: full-vocabulary log-probabilities of the path's tokens, divided by its length; ``"trie"``: each token's
#: log-probability renormalised over the tokens the KG-Trie allows there, summed (no length division),
#: so a token the trie forces (the rest of an entity's name) costs nothing and the score is the path's
#: log-probability among the trie's paths.
PATH_SCORES = ("model", "trie")

#: What follows a path sentence before its hypothesis answer (figure 3's output format).
ANSWER_HEADER = "\n# Answer:\n"
#: Appended after the chat template's generation prompt: the model continues with a path.
ASSISTANT_PREFIX = "# Reasoning Path:\n"


@dataclass(frozen=True)
class DecodedPath:
    """One output of constrained decoding.

    Attributes:
        text: the whole generated text (the constrained path, then any free continuation).
        path_text: the constrained part, e.g. ``"Splash -> directed_by -> Ron Howard"``.
        score: the sequence log-probability (higher is better), as the decoder ranks it.
        continuation: text generated freely after the path (a hypothesis answer), may be empty.
        meta: decoder-specific details (token counts, finished flag...).
    """

    text: str
    path_text: str
    score: float
    continuation: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class ConstrainedDecoder(Protocol):
    """Generate the ``num_beams`` best continuations of ``prompt`` that the ``trie`` allows.

    ``trie`` is a KG-Trie (``kg_agents.methods.gcr.trie.KGTrie``) built with this decoder's tokenizer.
    """

    def generate(self, prompt: str, trie: Any, num_beams: int = 10, **kwargs: Any) -> list[DecodedPath]: ...


def render_prompt(
    tokenizer: Any, prompt: str | Sequence[Any], assistant_prefix: str = ASSISTANT_PREFIX
) -> str:
    """The text a decoder continues: a string as is, or chat messages through ``tokenizer``'s chat
    template with the generation prompt and ``assistant_prefix`` appended.

    Args:
        tokenizer: a Hugging Face tokenizer with a chat template.
        prompt: text, or chat messages (dicts with ``role``/``content``, strings, LangChain messages).
        assistant_prefix: appended after the generation prompt when ``prompt`` is messages.

    Example:
        >>> render_prompt(tok, [{"role": "user", "content": "who directed Splash"}])  # doctest: +SKIP
        '<|im_start|>user\\nwho directed Splash<|im_end|>\\n<|im_start|>assistant\\n# Reasoning Path:\\n'
    """
    if isinstance(prompt, str):
        return prompt
    msgs = []
    for m in prompt:
        if isinstance(m, dict):
            msgs.append({"role": m["role"], "content": m["content"]})
        elif isinstance(m, str):
            msgs.append({"role": "user", "content": m})
        else:  # a LangChain BaseMessage
            role = {"human": "user", "ai": "assistant"}.get(m.type, m.type)
            msgs.append({"role": role, "content": str(m.content)})
    text = tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    return str(text) + assistant_prefix


def candidates_of(trie: KGTrie, prefix: Sequence[int], eos_token_id: int) -> list[int]:
    """The tokens a beam at ``prefix`` may take: the node's children, and EOS where a sentence ends
    (``[]``: the prefix is off the trie, the beam is dead)."""
    node = trie.node(prefix)
    if node is None:
        return []
    out = [t for t in node if t != END]
    if END in node:
        out.append(eos_token_id)
    return out


def check_path_scores(path_scores: str) -> None:
    """Raise :class:`~kg_agents.errors.ConfigError` unless ``path_scores`` is one of :data:`PATH_SCORES`."""
    if path_scores not in PATH_SCORES:
        raise ConfigError(f"path_scores must be one of {PATH_SCORES}, got {path_scores!r}")


def default_length_penalty(path_scores: str, length_penalty: float | None) -> float:
    """The beam length penalty: the one given, else 1.0 for ``"model"`` scores (transformers' default)
    and 0.0 for ``"trie"`` scores (a sum: the path's log-probability among the trie's paths)."""
    check_path_scores(path_scores)
    if length_penalty is not None:
        return float(length_penalty)
    return 0.0 if path_scores == "trie" else 1.0


def renormalised(logprobs: Sequence[float]) -> list[float]:
    """Log-probabilities renormalised over the given (allowed) tokens alone.

    Example:
        >>> [round(x, 3) for x in renormalised([math.log(0.2), math.log(0.2)])]
        [-0.693, -0.693]
        >>> renormalised([-3.0])
        [0.0]
    """
    finite = [x for x in logprobs if math.isfinite(x)]
    if not finite:
        return list(logprobs)
    top = max(finite)
    norm = top + math.log(sum(math.exp(x - top) for x in finite))
    return [x - norm for x in logprobs]


def check_num_beams(num_beams: int) -> None:
    """Raise ``ValueError`` unless ``num_beams >= 1``."""
    if num_beams < 1:
        raise ValueError(f"num_beams must be >= 1, got {num_beams}")


def decoded_path(
    path_text: str,
    score: float,
    continuation: str = "",
    *,
    answer: bool = True,
    meta: dict[str, Any] | None = None,
) -> DecodedPath:
    """A result: the path sentence, then (with ``answer``) the answer header and the hypothesis."""
    text = format_path(path_text) + (ANSWER_HEADER + continuation if answer else "")
    return DecodedPath(text, path_text, score, continuation, dict(meta or {}))


class TrieDecoder:
    """What the constrained decoders share, over their ``tokenizer`` (and its ``signature``).

    Subclasses call ``__init__`` with their settings and implement ``generate``.
    """

    tokenizer: Any
    signature: str

    def __init__(
        self, tokenizer: Any, *, max_answer_tokens: int, path_scores: str, length_penalty: float | None
    ) -> None:
        """Set what every decoder has: ``tokenizer`` and its ``signature``
        (:func:`~kg_agents.methods.gcr.trie.tokenizer_signature`), the answer's token budget, the path
        scores and the beam length penalty (:func:`default_length_penalty`), empty ``last_stats`` and
        the generation lock."""
        self.tokenizer = tokenizer
        self.signature = tokenizer_signature(tokenizer)
        self.max_answer_tokens = max_answer_tokens
        self.path_scores = path_scores
        self.length_penalty = default_length_penalty(path_scores, length_penalty)
        self.last_stats: dict[str, Any] = {}
        self._lock = threading.Lock()

    def render(self, prompt: str | Sequence[Any], assistant_prefix: str = ASSISTANT_PREFIX) -> str:
        """The text the model continues: a string as is, or chat messages through the chat template
        with the generation prompt and ``assistant_prefix`` appended (:func:`render_prompt`)."""
        return render_prompt(self.tokenizer, prompt, assistant_prefix)

    def check_trie(self, trie: KGTrie) -> None:
        """Raise ``ModelError`` when ``trie`` was built with another tokenizer than the decoder's."""
        if trie.tokenizer_sig and trie.tokenizer_sig != self.signature:
            raise ModelError("the KG-Trie was built with a different tokenizer than the decoder's")

    def answer_rows(self, prompt_ids: Sequence[int], sentences: Sequence[Sequence[int]]) -> list[list[int]]:
        """The token rows of the hypothesis-answer pass: the prompt, a path sentence, the answer header."""
        tail = self.tokenizer(ANSWER_HEADER, add_special_tokens=False)["input_ids"]
        return [[*prompt_ids, *s, *tail] for s in sentences]
