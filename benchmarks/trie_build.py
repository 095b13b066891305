"""KG-Trie construction on MetaQA: build time per entity (median, p95) and size, for L = 1, 2, 3.

Entities: the topic entities of a seeded sample of MetaQA dev-train questions (1/2/3-hop). The size
is the persisted ``.npz`` file (compressed token ids + texts) and the in-memory token data
(:meth:`KGTrie.nbytes`). The paper reports 5.8 / 13.3 / 21.9 ms and 0.4 / 0.5 / 2.5 MB for
L = 1 / 2 / 3 on Freebase (appendix B, table 8).

Usage:
    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/trie_build.py --entities 100
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kg_agents.eval.datasets import load_metaqa
from kg_agents.kg import open_kg
from kg_agents.llm.local_model import ensure_converted
from kg_agents.methods.gcr.trie import TrieCache, build_trie, tokenizer_signature


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=100)
    ap.add_argument("--hops", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--fanout-limit", type=int, default=500)
    ap.add_argument("--max-paths", type=int, default=20_000)
    args = ap.parse_args(argv)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(ensure_converted()))
    kg = open_kg("metaqa")
    ents: list[str] = []
    for h in (1, 2, 3):
        for q in load_metaqa(h, "train", seed=0, limit=args.entities):
            ents.extend(q.topic_entities or [])
    ents = list(dict.fromkeys(ents))[: args.entities]
    sig = tokenizer_signature(tok)
    print(f"load average at start: {os.getloadavg()}")
    print(
        f"MetaQA {kg!r}; {len(ents)} topic entities of dev-train questions; "
        f"fanout_limit={args.fanout_limit} max_paths={args.max_paths}"
    )
    print(
        f"{'L':>2} {'median ms':>10} {'p95 ms':>8} {'paths med':>10} {'paths max':>10} "
        f"{'file KB med':>12} {'file KB p95':>12} {'mem KB med':>11} {'truncated':>10}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for L in args.hops:
            times, paths, files, mems, trunc = [], [], [], [], 0
            for e in ents:
                t0 = time.perf_counter()
                trie = build_trie(
                    kg,
                    [e],
                    tok,
                    max_hops=L,
                    fanout_limit=args.fanout_limit,
                    max_paths=args.max_paths,
                    tokenizer_sig=sig,
                )
                times.append((time.perf_counter() - t0) * 1000)
                f = Path(tmp) / f"{L}.npz"
                trie.save(f)
                files.append(f.stat().st_size / 1024)
                mems.append(trie.nbytes() / 1024)
                paths.append(len(trie))
                trunc += trie.stats.truncated
            print(
                f"{L:>2} {statistics.median(times):10.1f} {pct(times, 0.95):8.1f} "
                f"{statistics.median(paths):10.0f} {max(paths):10d} {statistics.median(files):12.1f} "
                f"{pct(files, 0.95):12.1f} {statistics.median(mems):11.1f} {trunc:>7d}/{len(ents)}"
            )
    # the dynamic cache: a second pass over the same entities is served from memory
    cache = TrieCache(kg, tok, max_hops=2, capacity=len(ents))
    t0 = time.perf_counter()
    for e in ents:
        cache.get([e])
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    for e in ents:
        cache.get([e])
    warm = time.perf_counter() - t0
    print(
        f"TrieCache L=2: cold {cold / len(ents) * 1000:.1f} ms/entity, "
        f"warm {warm / len(ents) * 1e6:.1f} us/entity {cache.info()}"
    )
    # prefix lookup speed, on the largest L=2 trie
    trie = max((cache.get([e]) for e in ents), key=len)
    seqs = trie.sequences
    t0 = time.perf_counter()
    n = 0
    for s in seqs[:2000]:
        trie.allowed(s[: len(s) // 2])
        n += 1
    per_call = (time.perf_counter() - t0) / max(n, 1) * 1e6
    print(f"allowed(prefix) on a {len(trie)}-path trie: {per_call:.2f} us/call")
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
