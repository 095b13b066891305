"""One table over `kg-agents eval` runs: every method × hop, exact and containment rules side by side.

Each run directory is scored again from its ``predictions.jsonl`` under both matching rules (the same
``kg_agents.eval.metrics.score_aliased`` the runner uses), so the two columns come from the same answers.
Make the runs with

    for m in graph_rag text_rag dualr knowledge_navigator gcr graph_agent graph_explore; do
      for h in 1 2 3; do
        kg-agents eval --method $m --dataset metaqa-${h}hop --split validation --limit 20 \\
            --set decide=rank --out runs/decide/$m-$h-rank        # and --set decide=generate
      done
    done

(gcr with ``--set num_beams=5``), then

    python benchmarks/decisions/table.py runs/decide/*

Prints a markdown table: method, dataset, hops, model (the one the graph ran: ``model_used``, else
``--model``), route, n, Hits@1 and F1 (exact),
Hits@1 (contains), grounded answers, faithful paths, LLM calls, input tokens and seconds per question.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from kg_agents.eval.metrics import MatchRule, mean, score_aliased
from kg_agents.eval.runner import read_predictions

HEAD = (
    "| method | dataset | hops | model | route | n | Hits@1 exact | F1 exact | Hits@1 contains "
    "| grounded answers | faithful paths | LLM calls | input tokens | s/question |"
)


def row(run: Path) -> tuple[tuple[str, str, int, str, str], str] | None:
    info_path, summary_path = run / "run.json", run / "summary.json"
    if not info_path.is_file() or not summary_path.is_file():
        return None
    info = json.loads(info_path.read_text(encoding="utf-8"))
    summary = json.loads(summary_path.read_text(encoding="utf-8"))
    options = dict(o.split("=", 1) for o in info.get("options") or [])
    route = options.get("decide", "rank")
    dataset = str(info["dataset"])
    found = re.search(r"(\d)h", dataset)
    hops = int(found.group(1)) if found else 0
    model = str(info.get("model_used") or info.get("model") or "local")  # the model the graph really ran
    recs = list(read_predictions(run / "predictions.jsonl").values())
    if not recs:
        return None

    def scores(match: MatchRule) -> list[dict[str, float]]:
        return [
            score_aliased(r.get("predictions") or [], [[g] for g in r["gold"]], match)
            if not r.get("error")
            else {"hits@1": 0.0, "f1": 0.0}
            for r in recs
        ]

    exact, contains = scores("exact"), scores("contains")
    h1 = mean(s["hits@1"] for s in exact) or 0.0
    f1 = mean(s["f1"] for s in exact) or 0.0
    c1 = mean(s["hits@1"] for s in contains) or 0.0

    def fmt(v: object) -> str:
        return "–" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)

    text = (
        f"| {info['method']} | {dataset.split('-')[0]} | {hops} | {model} | {route} | {len(recs)} "
        f"| {h1:.3f} | {f1:.3f} | {c1:.3f} "
        f"| {fmt(summary.get('grounded_answer_ratio'))} | {fmt(summary.get('faithful_path_ratio'))} "
        f"| {fmt(summary.get('avg_llm_calls'))} | {fmt(summary.get('avg_input_tokens'))} "
        f"| {fmt(summary.get('avg_seconds'))} |"
    )
    return (str(info["method"]), dataset, hops, model, route), text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("runs", nargs="+", type=Path)
    args = ap.parse_args()
    rows = [r for r in (row(p) for p in args.runs) if r is not None]
    print(HEAD)
    print("|" + "---|" * (HEAD.count("|") - 1))
    for _, text in sorted(rows):
        print(text)


if __name__ == "__main__":
    main()
