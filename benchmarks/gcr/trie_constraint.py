"""KG-Trie constraint cost per decoding step: kg-agents' trie against a marisa-trie queried by prefix.

The reference approach is the one of the paper's published code (Graph-constrained Reasoning: Faithful
Reasoning on Knowledge Graphs with Large Language Models), rebuilt here from its description: every
tokenised path sentence becomes a string with one character per token id, the strings go into a
``marisa_trie.Trie`` (``marisa-trie`` from PyPI), and at every decoding step the allowed next tokens of
a beam are the characters that follow its prefix among ``trie.keys(prefix)``.

Both answer the same question on the same token sequences: for one beam step, the allowed next-token
set of each of the K beams' prefixes (kg-agents: ``candidates_of``, the decoder's own call, a dict
walk from the root plus EOS where a sentence ends). A decode is simulated: K sentences drawn at random
(seeded), and at step t each beam's prefix is its sentence's first t tokens, for t = 1 .. the longest
sentence (beams whose sentence is shorter drop out). The per-step cost is the best of ``--repeat``
timings of the whole step (both sides measured the same way, interleaved), then averaged over the
steps; the slowest step is shown too. The allowed sets are checked to agree on every prefix.

Path sets: the L = 2 paths of a MetaQA dev-train topic entity with about 2,000 of them, and the L = 2
paths of as many topic entities as make 100,000 (the first 100,000, in build order).

Usage:
    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/gcr/trie_constraint.py --beams 10
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version

import marisa_trie

from kg_agents.eval.datasets import load_metaqa
from kg_agents.kg import open_kg
from kg_agents.llm.local_model import load_local_tokenizer
from kg_agents.methods.gcr.decoding import candidates_of
from kg_agents.methods.gcr.trie import KGTrie, build_trie, tokenizer_signature

# Token ids as characters: skip the surrogate block, which a Python str cannot hold in a marisa key.
_SURROGATES = 0xD800
_SKIP = 0xE000 - 0xD800


def id_char(i: int) -> str:
    return chr(i if i < _SURROGATES else i + _SKIP)


def char_id(c: str) -> int:
    o = ord(c)
    return o if o < _SURROGATES else o - _SKIP


class MarisaPrefixTrie:
    """The reference approach: a marisa-trie of the sentences, queried by prefix each step."""

    def __init__(self, sequences: Sequence[Sequence[int]]) -> None:
        self.trie = marisa_trie.Trie("".join(map(id_char, s)) for s in sequences)

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        key = "".join(map(id_char, prefix))
        n = len(key)
        return [char_id(c) for c in {k[n] for k in self.trie.keys(key) if len(k) > n}]

    def is_complete(self, prefix: Sequence[int]) -> bool:
        return "".join(map(id_char, prefix)) in self.trie


def steps(sequences: Sequence[tuple[int, ...]], beams: int, seed: int) -> list[list[tuple[int, ...]]]:
    """The K prefixes of each step of a simulated decode over ``beams`` random sentences."""
    rng = random.Random(seed)
    chosen = rng.sample(list(sequences), min(beams, len(sequences)))
    longest = max(len(s) for s in chosen)
    return [[s[:t] for s in chosen if len(s) > t] for t in range(1, longest)]


def time_step(fn, prefixes: list[tuple[int, ...]], repeat: int) -> float:  # type: ignore[no-untyped-def]
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        for p in prefixes:
            fn(p)
        best = min(best, time.perf_counter() - t0)
    return best


def compare(name: str, trie: KGTrie, beams: int, repeat: int, seeds: int, eos: int) -> None:
    t0 = time.perf_counter()
    ref = MarisaPrefixTrie(trie.sequences)
    build_s = time.perf_counter() - t0
    ours_t: list[float] = []
    ref_t: list[float] = []
    for seed in range(seeds):
        for prefixes in steps(trie.sequences, beams, seed):
            for p in prefixes:  # the same sets (EOS aside: the reference tells a whole sentence apart)
                mine = candidates_of(trie, p, eos)
                want = set(ref.allowed(p)) | ({eos} if ref.is_complete(p) else set())
                if set(mine) != want:
                    raise AssertionError(f"allowed sets differ at {p}")
            ours_t.append(time_step(lambda p: candidates_of(trie, p, eos), prefixes, repeat))
            ref_t.append(time_step(ref.allowed, prefixes, repeat))
    ours, theirs = statistics.mean(ours_t), statistics.mean(ref_t)
    print(
        f"{name:>14} {len(trie):>8} {beams:>3} {len(ours_t):>6} {ours * 1e6:>12.1f} {theirs * 1e6:>13.1f} "
        f"{theirs / ours:>8.0f}x {max(ours_t) * 1e6:>10.1f} {max(ref_t) * 1e6:>11.1f} "
        f"{max(ref_t) / max(ours_t):>8.0f}x {build_s:>8.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--beams", type=int, nargs="+", default=[10])
    ap.add_argument("--sizes", type=int, nargs="+", default=[2_000, 100_000])
    ap.add_argument("--repeat", type=int, default=5, help="timings per step; the best counts")
    ap.add_argument("--seeds", type=int, default=5, help="simulated decodes per trie and K")
    args = ap.parse_args(argv)
    tok = load_local_tokenizer()
    sig = tokenizer_signature(tok)
    kg = open_kg("metaqa")
    ents: list[str] = []
    for h in (1, 2, 3):
        for q in load_metaqa(h, "train", seed=0, limit=500):
            ents.extend(q.topic_entities or [])
    ents = list(dict.fromkeys(ents))
    print(f"load average at start: {os.getloadavg()}")
    print(f"marisa-trie {version('marisa-trie')}; MetaQA L=2 paths, SmolLM2 tokenizer; times per beam step")
    tries = []
    for size in args.sizes:
        seqs: list[tuple[int, ...]] = []
        texts: list[str] = []
        used = 0
        if size <= 20_000:  # one entity's trie, the first with at least ``size`` paths
            for e in ents:
                t = build_trie(kg, [e], tok, max_hops=2, tokenizer_sig=sig)
                if len(t) >= size:
                    seqs, texts, used = t.sequences[:size], t.texts[:size], 1
                    break
        else:  # many entities' tries, in order, up to ``size`` sentences
            seen: set[tuple[int, ...]] = set()
            for e in ents:
                t = build_trie(kg, [e], tok, max_hops=2, tokenizer_sig=sig)
                used += 1
                for s, x in zip(t.sequences, t.texts, strict=True):
                    if s not in seen:
                        seen.add(s)
                        seqs.append(s)
                        texts.append(x)
                if len(seqs) >= size:
                    break
            seqs, texts = seqs[:size], texts[:size]
        trie = KGTrie(seqs, texts, tokenizer_sig=sig)
        print(
            f"{size:,} paths: the L=2 paths of {used} topic entities (first {size:,}), "
            f"longest sentence {trie.max_len} tokens"
        )
        tries.append((size, trie))
    print(
        f"{'paths':>14} {'sentences':>8} {'K':>3} {'steps':>6} {'kg-agents us':>12} {'marisa us':>13} "
        f"{'ratio':>9} {'max ours us':>10} {'max marisa us':>11} {'ratio max':>9} {'marisa build s':>8}"
    )
    for size, trie in tries:
        for k in args.beams:
            compare(f"{size:,}", trie, k, args.repeat, args.seeds, int(tok.eos_token_id))
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
