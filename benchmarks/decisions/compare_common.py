"""Compare evaluation runs on the questions they all answered (runs of different sizes, same seeded order).

``kg-agents eval`` runs of one dataset with different ``--limit`` share their first questions (the split is
seeded). This prints, per run, the summary recomputed over the question ids present in every run (and
finished without error in each), with the same metrics as ``summary.json``.

Usage:
    PYTHONPATH=. python benchmarks/decisions/compare_common.py runs/baselines/graph_rag-1hop \\
        runs/kn/kn-m2-1hop
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kg_agents.eval.metrics import summarize
from kg_agents.eval.runner import PREDICTIONS, load_summary, markdown_table, read_predictions


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", help="run directories (each with predictions.jsonl, summary.json)")
    args = ap.parse_args(argv)
    preds = [read_predictions(f"{d}/{PREDICTIONS}") for d in args.runs]
    common = set.intersection(*({i for i, r in p.items() if not r.get("error")} for p in preds))
    if not common:
        print("no question is finished in every run", file=sys.stderr)
        return 1
    rows = []
    for d, p in zip(args.runs, preds, strict=True):
        s = load_summary(d)
        recs = [p[i] for i in sorted(common)]
        row = summarize(recs, method=s["method"], dataset=s["dataset"])
        row["method"] = f"{s['method']} ({Path(d).name})"  # runs of one method with other options
        rows.append(row)
    print(f"{len(common)} questions in common")
    print(markdown_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
