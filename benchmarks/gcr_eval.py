"""GCR on MetaQA dev-validation with the real local model: quality, faithfulness, usage per hop.

For each question it runs the ``gcr`` graph twice: constrained by the KG-Trie (with the general chat
model unless ``--no-general``) and without the trie (``constrained=False``, answers by voting, the
figure-5 ablation). Faithfulness is the share of *decoded* paths that are KG paths (from the
``verify_paths`` trace: kept / (kept + dropped)), so the unconstrained figure counts the paths the
graph refused to return. Records are appended to ``--out`` (JSONL) as they finish; a rerun resumes.

Usage:
    HF_HUB_OFFLINE=1 PYTHONPATH=. nice -n 10 python benchmarks/gcr_eval.py --per-hop 34 --beams 10 \\
        --out runs/gcr_eval.jsonl
    python benchmarks/gcr_eval.py --out runs/gcr_eval.jsonl --report-only
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

from kg_agents.eval.datasets import load_metaqa
from kg_agents.eval.metrics import mean, score_answers


def _trace(out: dict, node: str) -> dict:
    return next((t for t in out.get("trace", []) if t.get("node") == node and "error" not in t), {})


def run_one(graph, q, beams: int) -> dict:
    t0 = time.perf_counter()
    out = graph.invoke(
        {"question": q.question, "topic_entities": q.topic_entities}, context={"num_beams": beams}
    )
    v = _trace(out, "verify_paths")
    return {
        "answers": out.get("answers", []),
        "scores": score_answers(out.get("answers", []), q.answers),
        "kept": int(v.get("paths_kept", 0)),
        "dropped": int(v.get("paths_dropped", 0)),
        "paths": [p.to_text() for p in out.get("paths", [])],
        "usage": dict(out.get("usage", {})),
        "errors": out.get("errors", []),
        "seconds": time.perf_counter() - t0,
    }


def _path_hit(x: dict, gold: list[str]) -> float:
    """1.0 when a returned (verified) path ends at a gold answer: the decoder's answer recall."""
    golds = {g.lower() for g in gold}
    return float(any(p.rsplit(" -> ", 1)[-1].lower() in golds for p in x["paths"]))


def report(records: list[dict]) -> None:
    by: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in records:
        for setting in ("constrained", "unconstrained"):
            if setting in r:
                x = dict(r[setting], path_hit=_path_hit(r[setting], r["gold"]))
                by[(setting, str(r["hops"]))].append(x)
                by[(setting, "all")].append(x)
    print(
        f"{'setting':14} {'hops':4} {'n':>4} {'hits@1':>7} {'hit':>6} {'f1':>6} {'faithful':>9} "
        f"{'llm_calls':>9} {'in_tok':>7} {'out_tok':>7} {'s/q':>6} {'path_hit':>8}"
    )
    for (setting, hops), rs in sorted(by.items()):
        kept = sum(x["kept"] for x in rs)
        total = kept + sum(x["dropped"] for x in rs)
        faithful = kept / total if total else float("nan")

        def avg(key, rs=rs):
            return mean(x["usage"].get(key, 0) for x in rs)

        h1 = mean(x["scores"]["hits@1"] for x in rs)
        print(
            f"{setting:14} {hops:4} {len(rs):>4} {h1:7.3f} "
            f"{mean(x['scores']['hit'] for x in rs):6.3f} {mean(x['scores']['f1'] for x in rs):6.3f} "
            f"{faithful:9.3f} {avg('llm_calls'):9.2f} {avg('input_tokens'):7.1f} "
            f"{avg('output_tokens'):7.1f} "
            f"{mean(x['seconds'] for x in rs):6.1f} {mean(x['path_hit'] for x in rs):8.3f}"
        )
        print(f"{'':14} {'':4} paths decoded={total} in KG={kept}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-hop", type=int, default=34, help="validation questions per hop (1, 2, 3)")
    ap.add_argument("--beams", type=int, default=10)
    ap.add_argument("--max-hops", type=int, default=2, help="L of the KG-Trie")
    ap.add_argument("--no-general", action="store_true", help="constrained run votes too (1 LLM call)")
    ap.add_argument("--no-ablation", action="store_true", help="skip the unconstrained run")
    ap.add_argument("--answer-tokens", type=int, default=16, help="hypothesis answer token budget")
    ap.add_argument("--unconstrained-tokens", type=int, default=48, help="path token budget without trie")
    ap.add_argument("--general-tokens", type=int, default=32, help="general model's answer token budget")
    ap.add_argument("--out", default="runs/gcr_eval.jsonl")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    done = {}
    if out.is_file():
        for line in out.read_text().splitlines():
            if line.strip():
                rec = json.loads(line)
                done[rec["id"]] = rec
    if args.report_only:
        report(list(done.values()))
        return 0
    from kg_agents.kg import open_kg
    from kg_agents.llm import resolve_chat_model
    from kg_agents.methods.gcr.graph import create_gcr_graph
    from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder
    from kg_agents.methods.gcr.trie import TrieCache

    kg = open_kg("metaqa")
    decoder = LocalConstrainedDecoder(
        max_answer_tokens=args.answer_tokens, max_unconstrained_tokens=args.unconstrained_tokens
    )
    cache = TrieCache(kg, decoder.tokenizer, max_hops=args.max_hops)
    general = None if args.no_general else resolve_chat_model("local", max_tokens=args.general_tokens)
    g_con = create_gcr_graph(
        kg, general_llm=general, decoder=decoder, trie_cache=cache, max_hops=args.max_hops
    )
    g_unc = create_gcr_graph(kg, general_llm=None, decoder=decoder, trie_cache=cache, constrained=False)
    questions = [q for h in (1, 2, 3) for q in load_metaqa(h, "validation", seed=0, limit=args.per_hop)]
    # interleave hops so a partial run covers all of them
    rank = {q.id: i for i, q in enumerate(questions)}
    questions.sort(key=lambda q: (rank[q.id] % args.per_hop, q.hops))
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a", encoding="utf-8") as fh:
        for i, q in enumerate(questions):
            if q.id in done:
                continue
            rec = {
                "id": q.id,
                "hops": q.hops,
                "question": q.question,
                "gold": q.answers,
                "beams": args.beams,
                "max_hops": args.max_hops,
            }
            rec["constrained"] = run_one(g_con, q, args.beams)
            if not args.no_ablation:
                rec["unconstrained"] = run_one(g_unc, q, args.beams)
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            done[q.id] = rec
            print(
                f"[{i + 1}/{len(questions)}] {q.id} hits@1={rec['constrained']['scores']['hits@1']} "
                f"{rec['constrained']['seconds']:.1f}s",
                file=sys.stderr,
                flush=True,
            )
    report(list(done.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
