"""Accuracy and speed of the bundled KnowledgeNavigator hop classifier on the MetaQA dev-validation split.

Usage::

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/methods/hop_classifier.py [--limit 1000] [--seed 0]

Prints, per hop and overall, the accuracy of the bundled hop classifier (``load_hop_classifier``) on
``load_metaqa(h, split="validation")`` (the seeded 80/20 split of the MetaQA dev files; the classifier was
trained on the ``train`` part), the confusion matrix, and the encoding throughput.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from kg_agents.eval.datasets import load_metaqa
from kg_agents.methods.knowledge_navigator.hops import load_hop_classifier


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=None, help="questions per hop (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    clf = load_hop_classifier()
    questions: list[str] = []
    gold: list[int] = []
    for h in clf.classes:
        qs = list(load_metaqa(h, split="validation", seed=args.seed, limit=args.limit))
        questions += [q.question for q in qs]
        gold += [h] * len(qs)
    clf.predict(questions[:8])  # load the encoder outside the timing
    t0 = time.perf_counter()
    pred = clf.predict(questions)
    secs = time.perf_counter() - t0
    g, p = np.asarray(gold), np.asarray(pred)
    print(f"checkpoint: train accuracy {clf.meta.get('train_accuracy')}, n_train {clf.meta.get('n_train')}")
    print(f"validation questions: {len(g)} (seed {args.seed})")
    for h in clf.classes:
        m = g == h
        print(f"  {h}-hop accuracy: {(p[m] == h).mean():.4f}  (n={int(m.sum())})")
    print(f"overall accuracy: {(p == g).mean():.4f}")
    print("confusion (rows gold, columns predicted):")
    for h in clf.classes:
        print(f"  {h}: " + " ".join(f"{int(((g == h) & (p == k)).sum()):6d}" for k in clf.classes))
    print(f"throughput: {len(g) / secs:.0f} questions/s on this machine")


if __name__ == "__main__":
    main()
