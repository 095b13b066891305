"""Accuracy and speed of the bundled KnowledgeNavigator hop classifier on the MetaQA dev-validation split.

Usage::

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/methods/hop_classifier.py [--limit 1000] [--seed 0]

A pack's classifier on other questions (``--classifier``: the pack folder or its ``hop_classifier``
folder; ``--datasets``: bundled dataset names, each question's gold hop count its own)::

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/methods/hop_classifier.py --classifier packs/pq-3h \
        --datasets pathquestion-pq-3h --split train --limit 200

The depth of the relation chain closest to each question in place of a classifier (``--depth chain``,
what a pack built by ``kg-agents specialise`` routes the walks by; each question's topic entities given)::

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/methods/hop_classifier.py --depth chain --limit 100 \
        --datasets metaqa-1hop metaqa-2hop metaqa-3hop pathquestion-pq-2h

Prints, per hop and overall, the accuracy of the bundled hop classifier (``load_hop_classifier``) on
``load_metaqa(h, split="validation")`` (the seeded 80/20 split of the MetaQA dev files; the classifier was
trained on the ``train`` part), the confusion matrix, and the encoding throughput.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from kg_agents.core.hops import chain_hops
from kg_agents.eval.datasets import get_dataset, load_metaqa
from kg_agents.kg import open_kg
from kg_agents.methods.knowledge_navigator.hops import load_hop_classifier


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="questions per hop (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--classifier", type=Path, default=None, help="a pack or hop_classifier folder")
    ap.add_argument("--datasets", nargs="+", default=None, help="bundled datasets (default: MetaQA's)")
    ap.add_argument("--split", default="validation", choices=["validation", "train", "dev"])
    ap.add_argument(
        "--depth", default="classifier", choices=["classifier", "chain"], help="what names the hop count"
    )
    args = ap.parse_args()
    where = args.classifier
    if where is not None and (where / "hop_classifier").is_dir():
        where = where / "hop_classifier"
    clf = load_hop_classifier(where)
    questions: list[str] = []
    gold: list[int] = []
    asked: list[tuple[object, str, list[str]]] = []  # (KG, question, topic ids) for --depth chain
    graphs: dict[str, object] = {}
    for name in args.datasets or [f"metaqa-{h}hop" for h in clf.classes]:
        if name.startswith("metaqa-"):
            h = int(name.split("-")[1][0])
            qs = list(load_metaqa(h, split=args.split, seed=args.seed, limit=args.limit))
            hops, kg_name = [h] * len(qs), "metaqa"
        else:
            ds = get_dataset(name, args.split, seed=args.seed, limit=args.limit)
            qs, kg_name = list(ds), str(ds.kg)
            hops = [int(q.hops) for q in qs]
        questions += [q.question for q in qs]
        gold += hops
        if args.depth == "chain":
            if kg_name not in graphs:
                graphs[kg_name] = open_kg(kg_name)
            asked += [(graphs[kg_name], q.question, list(q.topic_entities)) for q in qs]
    clf.predict(questions[:8])  # load the encoder outside the timing
    t0 = time.perf_counter()
    if args.depth == "chain":
        pred = [chain_hops(kg, q, topics) or 0 for kg, q, topics in asked]
        print("depth: the length of the relation chain closest to each question")
    else:
        pred = clf.predict(questions)
    secs = time.perf_counter() - t0
    g, p = np.asarray(gold), np.asarray(pred)
    if args.depth == "classifier":
        meta = clf.meta
        print(f"checkpoint: train accuracy {meta.get('train_accuracy')}, n_train {meta.get('n_train')}")
    print(f"{args.split} questions: {len(g)} (seed {args.seed})")
    for h in clf.classes:
        m = g == h
        if not m.any():
            continue
        print(f"  {h}-hop accuracy: {(p[m] == h).mean():.4f}  (n={int(m.sum())})")
    print(f"overall accuracy: {(p == g).mean():.4f}")
    print("confusion (rows gold, columns predicted):")
    for h in clf.classes:
        print(f"  {h}: " + " ".join(f"{int(((g == h) & (p == k)).sum()):6d}" for k in clf.classes))
    print(f"throughput: {len(g) / secs:.0f} questions/s on this machine")


if __name__ == "__main__":
    main()
