"""One table over ``kg-agents eval`` run directories of ``gcr``: quality, faithfulness and path coverage.

Path coverage is the share of questions where some returned (verified) reasoning path ends at a gold
answer: the answer recall of the K decoded paths, which is what a fine-tuned path generator changes
(the general model or the vote can only pick answers the paths reach). Figures come from each run's
``summary.json``, ``run.json`` and ``predictions.jsonl`` only.

Usage (after the evals in README's gcr section):
    PYTHONPATH=. python benchmarks/gcr/adapter_report.py runs/gcr-eval/*
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kg_agents.eval.runner import PREDICTIONS, RUN_INFO, SUMMARY, read_predictions


def path_coverage(records: list[dict]) -> float | None:
    """Share of records with a returned path whose last entity is a gold answer (case-insensitive)."""
    if not records:
        return None
    hit = 0
    for r in records:
        golds = {str(g).lower() for g in r.get("gold") or []}
        hit += any(p.rsplit(" -> ", 1)[-1].lower() in golds for p in r.get("paths") or [])
    return hit / len(records)


def row(run: Path) -> dict:
    summary = json.loads((run / SUMMARY).read_text())
    info = json.loads((run / RUN_INFO).read_text()) if (run / RUN_INFO).is_file() else {}
    records = list(read_predictions(run / PREDICTIONS).values())
    paths = [len(r.get("paths") or []) for r in records]
    return {
        "run": run.name,
        "dataset": summary["dataset"],
        "options": " ".join(info.get("options", [])),
        "n": summary["n"],
        "errors": summary["errors"],
        "hits@1": summary["hits@1"],
        "hit": summary["hit"],
        "f1": summary["f1"],
        "faithful": summary["faithful_path_ratio"],
        "path_coverage": path_coverage(records),
        "avg_paths": sum(paths) / len(paths) if paths else None,
        "avg_seconds": summary["avg_seconds"],
    }


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", help="run directories written by `kg-agents eval --method gcr`")
    args = ap.parse_args(argv)
    rows = [row(Path(r)) for r in args.runs if (Path(r) / SUMMARY).is_file()]
    keys = list(rows[0]) if rows else []
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for r in rows:
        cells = [f"{v:.3f}" if isinstance(v, float) else ("-" if v is None else str(v)) for v in r.values()]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
