"""KG-Trie construction on MetaQA: build time per entity (median, p95) and size, for L = 1, 2, 3.

Entities: the topic entities of a seeded sample of MetaQA dev-train questions (1/2/3-hop). The size
is the persisted ``.npz`` file (compressed token ids + texts) and the in-memory token data
(:meth:`KGTrie.nbytes`). The paper reports 5.8 / 13.3 / 21.9 ms and 0.4 / 0.5 / 2.5 MB for
L = 1 / 2 / 3 on Freebase (appendix B, table 8).

Side by side on the same entities (on by default; ``--no-whole`` skips it): the build that tokenises
every path sentence whole (the build before labels were tokenised once and composed), in a second pass
over the entities, with the ratio of the medians and of the p95s; the two must give the same tries
(checked on every entity). Times are wall-clock and, in brackets, the process's CPU time
(``time.process_time``, all its threads), which a busy machine inflates less. The label cache
(:func:`~kg_agents.methods.gcr.trie.path_tokenizer`) starts empty: each row's first builds tokenise
labels that later builds reuse, as a real run's would. With ``--prepare``, every id and relation of the
KG is tokenised once before the builds (:func:`~kg_agents.methods.gcr.trie.prepare_labels`, what
``kg-agents build-tries --prepare-labels`` does; its time is printed) and every build composes from
cached ids.

Usage:
    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/gcr/trie_build.py --entities 100
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
from kg_agents.kg.paths import enumerate_paths
from kg_agents.llm.local_model import ensure_converted
from kg_agents.methods.gcr.trie import (
    KGTrie,
    TrieCache,
    TrieStats,
    build_trie,
    path_sentence,
    path_tokenizer,
    prepare_labels,
    tokenizer_signature,
)


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))]


def build_whole(kg, entity: str, tok, max_hops: int, fanout_limit: int, max_paths: int, sig: str) -> KGTrie:  # type: ignore[no-untyped-def]
    """The build before: every path sentence tokenised whole, in one call, then inserted one by one."""
    res = enumerate_paths(
        kg, [entity], max_hops, direction="both", fanout_limit=fanout_limit, max_paths=max_paths
    )
    texts = [p.to_text() for p in res.paths]
    seqs = tok([path_sentence(p) for p in res.paths], add_special_tokens=False)["input_ids"] if texts else []
    stats = TrieStats(entities=[entity], max_hops=max_hops, fanout_truncated=list(res.fanout_truncated))
    return KGTrie(seqs, texts, stats=stats, tokenizer_sig=sig)


def clear_bpe_cache(tok) -> None:  # type: ignore[no-untyped-def]
    """Empty the fast tokenizer's word cache (its BPE model keeps the words it has split)."""
    clear = getattr(getattr(getattr(tok, "backend_tokenizer", None), "model", None), "_clear_cache", None)
    if clear is not None:
        clear()


def digest(trie: KGTrie) -> int:
    """The trie's sentences, texts and tree, as one number (to compare two builds)."""
    return hash((tuple(trie.sequences), tuple(trie.texts), trie.num_nodes, trie.max_len, repr(trie.root)))


def fmt(wall: list[float], cpu: list[float]) -> str:
    return (
        f"{statistics.median(wall):7.1f} ({statistics.median(cpu):5.1f}) "
        f"{pct(wall, 0.95):7.1f} ({pct(cpu, 0.95):5.1f})"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entities", type=int, default=100)
    ap.add_argument("--hops", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--fanout-limit", type=int, default=500)
    ap.add_argument("--max-paths", type=int, default=20_000)
    ap.add_argument("--no-whole", dest="whole", action="store_false", help="skip the whole-sentence build")
    ap.add_argument("--prepare", action="store_true", help="tokenise every id and relation of the KG first")
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
    if args.prepare:
        t0, c0 = time.perf_counter(), time.process_time()
        n = prepare_labels(kg, tok)
        print(
            f"prepare_labels: {n} ids and relations in {time.perf_counter() - t0:.2f} s "
            f"(CPU {time.process_time() - c0:.2f} s), once"
        )
    print(
        f"MetaQA {kg!r}; {len(ents)} topic entities of dev-train questions; "
        f"fanout_limit={args.fanout_limit} max_paths={args.max_paths}"
    )
    print(
        f"{'L':>2} {'median ms (cpu)':>15} {'p95 ms (cpu)':>15} {'paths med':>10} {'paths max':>10} "
        f"{'file KB med':>12} {'file KB p95':>12} {'mem KB med':>11} {'truncated':>10} {'labels':>7}"
        + (
            f" | {'whole: median (cpu)':>20} {'p95 (cpu)':>15} {'x median':>8} {'x p95':>6}"
            if args.whole
            else ""
        )
    )
    with tempfile.TemporaryDirectory() as tmp:
        for L in args.hops:
            times, cpus, paths, files, mems, trunc = [], [], [], [], [], 0
            w_times: list[float] = []
            w_cpus: list[float] = []
            digests: list[int] = []
            labels0 = path_tokenizer(tok).tokenized
            for e in ents:  # untimed: both passes then find the KG's pages in memory
                enumerate_paths(kg, [e], L, fanout_limit=args.fanout_limit, max_paths=args.max_paths)
            clear_bpe_cache(tok)
            for e in ents:
                t0, c0 = time.perf_counter(), time.process_time()
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
                cpus.append((time.process_time() - c0) * 1000)
                digests.append(digest(trie))
                f = Path(tmp) / f"{L}.npz"
                trie.save(f)
                files.append(f.stat().st_size / 1024)
                mems.append(trie.nbytes() / 1024)
                paths.append(len(trie))
                trunc += trie.stats.truncated
            del trie
            clear_bpe_cache(tok)  # neither pass finds the words the other tokenised in the BPE cache
            if args.whole:  # a second pass, so that neither build runs in the other's wake
                for e, want in zip(ents, digests, strict=True):
                    t0, c0 = time.perf_counter(), time.process_time()
                    ref = build_whole(kg, e, tok, L, args.fanout_limit, args.max_paths, sig)
                    w_times.append((time.perf_counter() - t0) * 1000)
                    w_cpus.append((time.process_time() - c0) * 1000)
                    if digest(ref) != want:
                        raise AssertionError(f"the two builds differ for {e!r} at L={L}")
                    ref.save(Path(tmp) / f"{L}-whole.npz")  # as the first pass does between builds
            line = (
                f"{L:>2} {fmt(times, cpus)} "
                f"{statistics.median(paths):10.0f} {max(paths):10d} {statistics.median(files):12.1f} "
                f"{pct(files, 0.95):12.1f} {statistics.median(mems):11.1f} {trunc:>7d}/{len(ents)} "
                f"{path_tokenizer(tok).tokenized - labels0:>7d}"
            )
            if args.whole:
                x_med = statistics.median(w_times) / statistics.median(times)
                x_p95 = pct(w_times, 0.95) / pct(times, 0.95)
                line += f" | {fmt(w_times, w_cpus):>36} {x_med:7.1f}x {x_p95:5.1f}x"
            print(line)
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
