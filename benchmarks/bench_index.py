"""Entity index figures on a real KG: build time, cache reload, lookup and linking latency, accuracy.

Usage::

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/bench_index.py [--kg metaqa] [--cache-dir DIR]

Without ``--cache-dir`` the index is built from scratch in a temporary folder (deleted at the end),
so the build figure is a cold build. Everything printed is measured in this run; nothing is asserted.

Figures:
- lexical tables: ``EntityIndex(kg)`` construction (exact, folded and loose label maps);
- build: encoding every unique label with the sentence encoder + FAISS index + atomic persist;
- reload: a second ``EntityIndex`` on the same cache (no encoding);
- ``lookup`` latency on labels; ``topic_entities`` on MetaQA validation questions with the brackets
  removed (lexical n-gram path), top-1 accuracy against the bracketed topic;
- ``link`` on misspelt labels (one character deleted or two swapped; semantic path), top-1 / top-5;
- ``topic_entities`` on unbracketed questions whose topic is misspelt (semantic fallback).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time

from kg_agents.eval.datasets import load_metaqa
from kg_agents.kg import open_kg
from kg_agents.kg.index import EntityIndex


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def _ms(xs: list[float]) -> str:
    p50, p95, mean = 1000 * _pct(xs, 0.5), 1000 * _pct(xs, 0.95), 1000 * statistics.mean(xs)
    return f"p50 {p50:.2f} ms, p95 {p95:.2f} ms, mean {mean:.2f} ms"


def _typo(rng: random.Random, text: str) -> str:
    chars = list(text)
    letters = [i for i, c in enumerate(chars) if c.isalpha()]
    if len(letters) < 4:
        return text
    i = rng.choice(letters[1:-1])
    if rng.random() < 0.5:
        del chars[i]
    else:
        chars[i], chars[i + 1] = chars[i + 1], chars[i]
    return "".join(chars)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kg", default="metaqa")
    ap.add_argument("--cache-dir", default=None, help="index cache root (default: a fresh temp dir)")
    ap.add_argument("--questions", type=int, default=300, help="MetaQA validation questions per hop")
    ap.add_argument("--typos", type=int, default=200, help="misspelt labels / questions to link")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    tmp = None
    if args.cache_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="kg-index-bench-")
        args.cache_dir = tmp.name

    t = time.perf_counter()
    kg = open_kg(args.kg)
    print(f"kg {args.kg}: {kg!r} loaded in {time.perf_counter() - t:.2f} s")

    t = time.perf_counter()
    idx = EntityIndex(kg, cache_dir=args.cache_dir)
    print(f"lexical tables: {len(idx)} entities in {time.perf_counter() - t:.2f} s")

    t = time.perf_counter()
    idx.build()
    build_s = time.perf_counter() - t
    n_texts = len(idx._texts or [])
    how = "loaded from cache" if idx.loaded_from_cache else "built"
    print(
        f"semantic index {how}: {n_texts} unique label texts in {build_s:.1f} s "
        f"(encoding {idx.build_seconds or 0:.1f} s, "
        f"{n_texts / max(idx.build_seconds or build_s, 1e-9):.0f} labels/s "
        f"incl. model load); cache {idx.cache_path}"
    )

    t = time.perf_counter()
    idx2 = EntityIndex(kg, cache_dir=args.cache_dir, encoder=idx.encoder, encoder_name=idx.encoder_name)
    idx2.build()
    print(
        f"reopen from cache: {time.perf_counter() - t:.2f} s "
        f"(loaded_from_cache={idx2.loaded_from_cache}, no encoding)"
    )

    labels = [label for _, label in kg.iter_labels()]
    sample = rng.sample(labels, min(1000, len(labels)))
    lat = []
    for lab in sample:
        t = time.perf_counter()
        idx.lookup(lab)
        lat.append(time.perf_counter() - t)
    print(f"lookup (exact) x{len(sample)}: {_ms(lat)}")
    lat = []
    for lab in sample:
        t = time.perf_counter()
        idx.lookup(lab.upper())
        lat.append(time.perf_counter() - t)
    print(f"lookup (folded) x{len(sample)}: {_ms(lat)}")

    if args.kg == "metaqa":
        for hops in (1, 2, 3):
            ds = load_metaqa(hops, "validation", seed=args.seed, limit=args.questions)
            lat, ok, in_list = [], 0, 0
            for q in ds:
                t = time.perf_counter()
                got = idx.topic_entities(q.plain_question)
                lat.append(time.perf_counter() - t)
                ok += bool(got) and got[0] == q.topic_entities[0]
                in_list += q.topic_entities[0] in got
            print(
                f"topic_entities, {hops}-hop validation without brackets x{len(ds)}: "
                f"top-1 {ok / len(ds):.3f}, "
                f"gold in list {in_list / len(ds):.3f}; {_ms(lat)}"
            )

    # Misspelt labels (semantic path): labels of at least 2 words so a typo leaves them recognisable.
    multi = [lab for lab in labels if lab.count(" ") >= 1 and len(lab) >= 8]
    typo_pairs = []
    for lab in rng.sample(multi, min(args.typos, len(multi))):
        bad = _typo(rng, lab)
        if bad != lab and not idx.lookup(bad) and not idx._lexical(bad):
            typo_pairs.append((lab, bad))
    lat, top1, top5 = [], 0, 0
    for lab, bad in typo_pairs:
        t = time.perf_counter()
        hits = idx.link(bad, k=5)
        lat.append(time.perf_counter() - t)
        got = [h.label for h in hits]
        top1 += bool(got) and got[0] == lab
        top5 += lab in got
    n = max(len(typo_pairs), 1)
    print(
        f"link (semantic) on misspelt labels x{len(typo_pairs)}: "
        f"top-1 {top1 / n:.3f}, top-5 {top5 / n:.3f}; {_ms(lat)}"
    )

    t = time.perf_counter()
    idx.search_many([bad for _, bad in typo_pairs], k=5)
    dt = time.perf_counter() - t
    print(
        f"search_many batch of {len(typo_pairs)}: {dt:.2f} s "
        f"({len(typo_pairs) / max(dt, 1e-9):.0f} queries/s)"
    )

    if args.kg == "metaqa":
        ds = load_metaqa(1, "validation", seed=args.seed + 1, limit=args.typos)
        lat, ok, tried = [], 0, 0
        for q in ds:
            gold = q.topic_entities[0]
            if gold.count(" ") < 1 or len(gold) < 8:
                continue
            bad = _typo(rng, gold)
            if bad == gold or idx._lexical(bad):
                continue
            text = q.plain_question.replace(gold, bad)
            tried += 1
            t = time.perf_counter()
            got = idx.topic_entities(text)
            lat.append(time.perf_counter() - t)
            ok += bool(got) and got[0] == gold
        if tried:
            print(
                f"topic_entities with a misspelt topic (semantic fallback) x{tried}: "
                f"top-1 {ok / tried:.3f}; {_ms(lat)}"
            )
    if tmp is not None:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
