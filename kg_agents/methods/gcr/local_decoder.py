"""Graph-constrained decoding with a local transformers model (GCR, section 4.3).

:class:`LocalConstrainedDecoder` runs beam search with K beams. A :class:`KGTrieLogitsProcessor`
restricts every beam, from the first generated token, to a prefix of a path sentence of the KG-Trie
(``<PATH> e0 -> r1 -> e1 </PATH>``); a beam that has written a whole sentence ends. Each distinct path
is then continued, in one batched greedy pass, with the answer header (``\\n# Answer:\\n``) and one
freely generated line: its hypothesis answer (figure 3's output format). Two passes rather than one
because a small model's beams otherwise spend themselves on variants of one answer after one path.
There is no fallback to the full vocabulary: a beam with no valid continuation gets ``-inf`` for
every token and drops out. Only beams whose path is a whole sentence of the trie are returned.

With ``trie=None`` the same beam search runs unconstrained (only ``<PATH>`` is forced as the first
tokens): the ``constrained=False`` ablation of the paper's figure 5.

Example:
    >>> from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder
    >>> dec = LocalConstrainedDecoder()                                # doctest: +SKIP
    >>> out = dec.generate(messages, trie, num_beams=10)              # doctest: +SKIP
    >>> out[0].path_text, out[0].continuation                         # doctest: +SKIP
    ('Splash -> directed_by -> Ron Howard', 'Ron Howard')
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from typing import Any

from kg_agents._compute import run_compute
from kg_agents.errors import ModelError
from kg_agents.llm.local_model import load_local_model
from kg_agents.methods.gcr.decoding import (
    ASSISTANT_PREFIX,
    DecodedPath,
    TrieDecoder,
    candidates_of,
    check_num_beams,
    check_path_scores,
    decoded_path,
)
from kg_agents.methods.gcr.trie import PATH_END, PATH_START, KGTrie, path_sentence

__all__ = ["KGTrieLogitsProcessor", "LocalConstrainedDecoder", "StopAtNewline", "newline_counts"]

_NEWLINES: dict[int, list[int]] = {}
_NEWLINES_LOCK = threading.Lock()


def newline_counts(tokenizer: Any) -> list[int]:
    """For every token id, how many newlines its text holds (cached per tokenizer)."""
    key = id(tokenizer)
    with _NEWLINES_LOCK:
        if key not in _NEWLINES:
            n = len(tokenizer)
            texts = tokenizer.convert_ids_to_tokens(list(range(n)))
            counts = []
            for i, t in enumerate(texts):
                c = 0
                if t is not None and ("Ċ" in t or "\n" in t):
                    c = tokenizer.decode([i]).count("\n")
                counts.append(c)
            _NEWLINES[key] = counts
        return _NEWLINES[key]


class KGTrieLogitsProcessor:
    """A transformers ``LogitsProcessor`` that keeps beams inside a KG-Trie.

    Every beam's tokens after ``prompt_len`` must be a prefix of a path sentence of the trie: the
    allowed tokens are the children of the beam's trie node, and EOS once the sentence is whole.
    A beam off the trie gets ``-inf`` for every token (it drops out; no fallback to the vocabulary).
    ``trie=None`` is the unconstrained ablation: only the ``<PATH>`` tokens are forced, then the beam
    is free until it writes ``</PATH>`` or a newline (EOS follows).

    Args:
        trie: the KG-Trie (None: unconstrained ablation).
        tokenizer: the decoder's tokenizer.
        prompt_len: number of prompt tokens (the same for every beam).
        eos_token_id: the id that ends a beam.
        renormalise: renormalise each constrained row's log-probabilities over its allowed tokens (the
            ``"trie"`` path scores); beam search hands the processor log-probabilities.

    Attributes:
        calls, seconds: how often the processor ran and its total time (overhead figures).
    """

    def __init__(
        self,
        trie: KGTrie | None,
        tokenizer: Any,
        prompt_len: int,
        eos_token_id: int,
        renormalise: bool = False,
    ) -> None:
        self.trie = trie
        self.renormalise = renormalise
        self.tokenizer = tokenizer
        self.prompt_len = prompt_len
        self.eos = int(eos_token_id)
        self.start = tokenizer(PATH_START, add_special_tokens=False)["input_ids"]
        self.newlines = newline_counts(tokenizer)
        self.calls = 0
        self.seconds = 0.0

    def allowed_for(self, gen: Sequence[int]) -> list[int] | None:
        """Allowed next tokens after ``gen`` (None: any token; ``[]``: the beam is dead)."""
        if self.trie is None:
            return self._unconstrained(gen)
        return candidates_of(self.trie, gen, self.eos)

    def _unconstrained(self, gen: Sequence[int]) -> list[int] | None:
        if len(gen) < len(self.start):
            return [self.start[len(gen)]]
        if self.newlines[gen[-1]] if gen[-1] < len(self.newlines) else 0:
            return [self.eos]
        if PATH_END in self.tokenizer.decode(list(gen[-4:])):
            return [self.eos]
        return None

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        t0 = time.perf_counter()
        self.calls += 1
        rows = input_ids[:, self.prompt_len :].tolist()
        vocab = scores.shape[-1]
        mask_rows: list[int] = []
        keep_r: list[int] = []
        keep_c: list[int] = []
        for i, gen in enumerate(rows):
            allowed = self.allowed_for(gen)
            if allowed is None:
                continue
            mask_rows.append(i)
            for t in allowed:
                if t < vocab:
                    keep_r.append(i)
                    keep_c.append(t)
        if mask_rows:
            mask = torch.zeros_like(scores, dtype=torch.bool)
            mask[mask_rows] = True
            if keep_r:
                mask[keep_r, keep_c] = False
            scores = scores.masked_fill(mask, -math.inf)
            if self.renormalise and keep_r:
                live = sorted(set(keep_r))
                scores[live] = torch.log_softmax(scores[live], dim=-1)
        self.seconds += time.perf_counter() - t0
        return scores


class StopAtNewline:
    """A ``LogitsProcessor`` that forces EOS once a row has generated a token holding a newline."""

    def __init__(self, prompt_len: int, newlines: list[int], eos_token_id: int) -> None:
        self.prompt_len = prompt_len
        self.newlines = newlines
        self.eos = int(eos_token_id)

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        rows = [
            i
            for i, gen in enumerate(input_ids[:, self.prompt_len :].tolist())
            if any(self.newlines[t] for t in gen if t < len(self.newlines))
        ]
        if rows:
            scores[rows] = -math.inf
            scores[rows, self.eos] = 0.0
        return scores


class LocalConstrainedDecoder(TrieDecoder):
    """KG-Trie-constrained beam search with a local Hugging Face causal LM.

    Args:
        model: a transformers causal LM (default: the embedded SmolLM2-135M-Instruct).
        tokenizer: its tokenizer (required with ``model``).
        max_answer_tokens: at most this many tokens for a hypothesis answer.
        path_scores: ``"model"`` (default; the paper's, transformers' beam scores) or ``"trie"`` (each
            token's log-probability renormalised over the tokens the trie allows there); see
            :data:`~kg_agents.methods.gcr.decoding.PATH_SCORES`.
        length_penalty: beam search length penalty (transformers' meaning); default 1.0 with ``"model"``
            scores, 0.0 (a sum) with ``"trie"`` scores.
        max_unconstrained_tokens: path token budget of the unconstrained ablation (``trie=None``).

    Attributes:
        last_stats: figures of the last call (prompt tokens, steps, processor seconds, total seconds).
    """

    def __init__(
        self,
        model: Any = None,
        tokenizer: Any = None,
        *,
        max_answer_tokens: int = 24,
        path_scores: str = "model",
        length_penalty: float | None = None,
        max_unconstrained_tokens: int = 64,
        dtype: str | None = None,
    ) -> None:
        check_path_scores(path_scores)  # before the model loads
        if model is None:
            model, tokenizer = load_local_model(dtype=dtype)
        elif tokenizer is None:
            raise ModelError("LocalConstrainedDecoder(model=...) needs the model's tokenizer too")
        super().__init__(
            tokenizer,
            max_answer_tokens=max_answer_tokens,
            path_scores=path_scores,
            length_penalty=length_penalty,
        )
        self.model = model
        self.max_unconstrained_tokens = max_unconstrained_tokens

    def generate(
        self,
        prompt: str | Sequence[Any],
        trie: KGTrie | None,
        num_beams: int = 10,
        *,
        answer: bool = True,
        assistant_prefix: str = ASSISTANT_PREFIX,
        **kwargs: Any,
    ) -> list[DecodedPath]:
        """The ``num_beams`` best reasoning paths, each with a hypothesis answer, best first.

        Beam search with ``num_beams`` beams writes the paths (constrained to ``trie``); each distinct
        path is then continued, in one batched greedy pass, with ``\\n# Answer:\\n`` and one free line:
        its hypothesis answer (figure 3's output format).

        Args:
            prompt: text, or chat messages (rendered with the chat template, see :meth:`render`).
            trie: the KG-Trie of the question (None: unconstrained ablation).
            num_beams: K.
            answer: also generate a hypothesis answer after each path.
            assistant_prefix: text appended after the generation prompt when ``prompt`` is messages.

        Returns:
            Up to ``num_beams`` ``DecodedPath`` s with distinct paths; ``meta["in_trie"]`` is True for
            every path when constrained. Beams that did not finish a whole path are left out.

        Raises:
            ModelError: the trie was built with another tokenizer, or generation failed.
        """
        import torch
        from transformers import LogitsProcessorList

        check_num_beams(num_beams)
        self.last_stats = {
            "prompt_tokens": 0,
            "steps": 0,
            "processor_seconds": 0.0,
            "processor_calls": 0,
            "output_tokens": 0,
            "seconds": 0.0,
        }
        if trie is not None:
            self.check_trie(trie)
            if len(trie) == 0:
                return []
        text = self.render(prompt, assistant_prefix)
        ids = self.tokenizer(text, add_special_tokens=False, return_tensors="pt")["input_ids"]
        plen = int(ids.shape[1])
        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        proc = KGTrieLogitsProcessor(trie, self.tokenizer, plen, eos, renormalise=self.path_scores == "trie")
        max_new = (trie.max_len if trie is not None else self.max_unconstrained_tokens) + 1
        t0 = time.perf_counter()
        try:
            with self._lock, torch.inference_mode():
                out = run_compute(
                    self.model.generate,
                    input_ids=ids,
                    attention_mask=torch.ones_like(ids),
                    num_beams=num_beams,
                    num_return_sequences=num_beams,
                    do_sample=False,
                    max_new_tokens=max_new,
                    early_stopping=True,
                    length_penalty=self.length_penalty,
                    logits_processor=LogitsProcessorList([proc]),
                    return_dict_in_generate=True,
                    output_scores=True,
                    pad_token_id=pad,
                    eos_token_id=eos,
                    temperature=None,
                    top_p=None,
                    top_k=None,
                )
                seqs = out.sequences[:, plen:].tolist()
                if getattr(out, "sequences_scores", None) is not None:
                    scores = out.sequences_scores.tolist()
                else:  # num_beams=1 is greedy search: its log-probabilities (normalised after the trie's
                    # mask), summed and divided like a beam's
                    trans = self.model.compute_transition_scores(
                        out.sequences, out.scores, normalize_logits=True
                    )
                    n_tok = (trans > -math.inf).sum(dim=1).clamp(min=1)
                    total = trans.masked_fill(trans == -math.inf, 0).sum(dim=1)
                    scores = (total / n_tok**self.length_penalty).tolist()
                found: dict[str, tuple[float, bool]] = {}
                out_tokens = 0
                for gen, score in zip(seqs, scores, strict=True):
                    gen = [t for t in gen if t not in (eos, pad)]
                    out_tokens += len(gen)
                    split = self._path_of(gen, trie)
                    if split is None or not math.isfinite(score) or split[0] in found:
                        continue
                    found[split[0]] = (float(score), split[1])
                ranked = sorted(found.items(), key=lambda kv: -kv[1][0])
                answers = self._answers(ids, [p for p, _ in ranked]) if answer and ranked else {}
        except (RuntimeError, ValueError, IndexError) as exc:
            raise ModelError(f"constrained generation failed: {exc}") from exc
        results = []
        for path_text, (score, in_trie) in ranked:
            cont, n_ans = answers.get(path_text, ("", 0))
            out_tokens += n_ans
            results.append(decoded_path(path_text, score, cont, answer=answer, meta={"in_trie": in_trie}))
        self.last_stats = {
            "prompt_tokens": plen,
            "steps": int(out.sequences.shape[1]) - plen,
            "processor_seconds": proc.seconds,
            "processor_calls": proc.calls,
            "output_tokens": out_tokens,
            "seconds": time.perf_counter() - t0,
        }
        return results

    def _path_of(self, gen: list[int], trie: KGTrie | None) -> tuple[str, bool] | None:
        """The path text a beam wrote (and whether it is a whole trie sentence), or None."""
        if trie is not None:
            text = trie.path_text_of(gen)
            return None if text is None else (text, True)
        # Unconstrained: the text after <PATH>, up to </PATH>, or to the end of the line when the
        # model never closed the path (still a path it wrote; verification will reject it).
        decoded = self.tokenizer.decode(gen, skip_special_tokens=True)
        start = decoded.find(PATH_START)
        if start < 0:
            return None
        rest = decoded[start + len(PATH_START) :]
        end = rest.find(PATH_END)
        path_text = (rest[:end] if end >= 0 else rest.split("\n", 1)[0]).strip()
        return (path_text, False) if path_text else None

    def _answers(self, prompt_ids: Any, path_texts: list[str]) -> dict[str, tuple[str, int]]:
        """Greedy hypothesis answers (one line) after each path, in one left-padded batch."""
        import torch
        from transformers import LogitsProcessorList

        eos = self.tokenizer.eos_token_id
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else eos
        bodies = self.tokenizer([path_sentence(p) for p in path_texts], add_special_tokens=False)["input_ids"]
        rows = self.answer_rows(prompt_ids[0].tolist(), bodies)
        width = max(len(r) for r in rows)
        input_ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])
        attention = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
        out = run_compute(
            self.model.generate,
            input_ids=input_ids,
            attention_mask=attention,
            do_sample=False,
            num_beams=1,
            max_new_tokens=self.max_answer_tokens,
            logits_processor=LogitsProcessorList([StopAtNewline(width, newline_counts(self.tokenizer), eos)]),
            pad_token_id=pad,
            eos_token_id=eos,
            temperature=None,
            top_p=None,
            top_k=None,
        )
        res = {}
        for p, gen in zip(path_texts, out[:, width:].tolist(), strict=True):
            gen = [t for t in gen if t not in (eos, pad)]
            res[p] = (self.tokenizer.decode(gen, skip_special_tokens=True).strip(), len(gen))
        return res
