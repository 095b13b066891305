"""Accuracy and speed of the bundled KnowledgeNavigator hop classifier on the MetaQA dev-validation split.

Usage::

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/methods/hop_classifier.py [--limit 1000] [--seed 0]

A pack's classifier on other questions (``--classifier``: the pack folder or its ``hop_classifier``
folder; ``--datasets``: bundled dataset names, each question's gold hop count its own)::

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/methods/hop_classifier.py --classifier packs/pq-3h \
        --datasets pathquestion-pq-3h --split train --limit 200

Prints, per hop and overall, the accuracy of the bundled hop classifier (``load_hop_classifier``) on
``load_metaqa(h, split="validation")`` (the seeded 80/20 split of the MetaQA dev files; the classifier was
trained on the ``train`` part), the confusion matrix, and the encoding throughput.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from kg_agents.eval.datasets import get_dataset, load_metaqa
from kg_agents.methods.knowledge_navigator.hops import load_hop_classifier


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="questions per hop (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--classifier", type=Path, default=None, help="a pack or hop_classifier folder")
    ap.add_argument("--datasets", nargs="+", default=None, help="bundled datasets (default: MetaQA's)")
    ap.add_argument("--split", default="validation", choices=["validation", "train", "dev"])
    args = ap.parse_args()
    where = args.classifier
    if where is not None and (where / "hop_classifier").is_dir():
        where = where / "hop_classifier"
    clf = load_hop_classifier(where)
    questions: list[str] = []
    gold: list[int] = []
    for name in args.datasets or [f"metaqa-{h}hop" for h in clf.classes]:
        if name.startswith("metaqa-"):
            h = int(name.split("-")[1][0])
            qs = list(load_metaqa(h, split=args.split, seed=args.seed, limit=args.limit))
            hops = [h] * len(qs)
        else:
            qs = list(get_dataset(name, args.split, seed=args.seed, limit=args.limit))
            hops = [int(q.hops) for q in qs]
        questions += [q.question for q in qs]
        gold += hops
    clf.predict(questions[:8])  # load the encoder outside the timing
    t0 = time.perf_counter()
    pred = clf.predict(questions)
    secs = time.perf_counter() - t0
    g, p = np.asarray(gold), np.asarray(pred)
    print(f"checkpoint: train accuracy {clf.meta.get('train_accuracy')}, n_train {clf.meta.get('n_train')}")
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
