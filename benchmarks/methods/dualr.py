"""DualR explorer figures on MetaQA: Hits@1 (GNN-only), inference time, pruning, training time, size.

Prints, per hop, on a seeded sample of the MetaQA dev-validation split:
- GNN-only Hits@1 (the paper's DualR-w.o.-AD: 97.6 / 99.1 / 99.5 on MetaQA test) and answer recall
  (share of questions with an answer among the candidates);
- F1 of the GNN-only answer set against the gold entities, for several ``(num_candidates N,
  answer_ratio)`` choices (the graph answers every top-N candidate with at least ``answer_ratio`` of the
  best probability; its defaults are N=3, 0.5);
- milliseconds per question for exploration + top-N + backtracking (batch of 1), cold (first time the
  entities' neighbours are fetched) and warm (second pass), and for encoding the question;
- candidate-set size per layer before and after pruning (appendix C.1), mean over questions;
then the time of one training pass over a sample of the dev-train split, and the checkpoint's size.
With ``--pathquestion N``: zero-shot Hits@1 and F1 on N questions of each PathQuestion set (its own KG,
relations the checkpoint never saw), the topic entity marked ``[...]`` in the question as in MetaQA.

Usage::

    PYTHONPATH=. python benchmarks/methods/dualr.py --per-hop 200 --train-questions 300 --threads 1
    PYTHONPATH=. python benchmarks/methods/dualr.py --per-hop 500 --exclude-early-stopping 300 --threads 1 \
        --skip-train --pathquestion 300
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np
import torch

from kg_agents.eval.datasets import Question, load_metaqa, load_pathquestion
from kg_agents.kg import open_kg
from kg_agents.llm import resolve_chat_model
from kg_agents.methods.dualr.gnn import DualRExplorer, ExplorationGraph, get_text_encoder
from kg_agents.methods.dualr.graph import DEFAULT_CHECKPOINT, create_dualr_graph
from kg_agents.methods.dualr.train import TrainConfig, evaluate_hits1

#: ``(num_candidates, answer_ratio)`` pairs whose GNN-only F1 is reported.
ANSWER_SETS = ((3, 1.0), (3, 0.5), (26, 0.5), (26, 0.2), (26, 0.1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checkpoint", default=str(DEFAULT_CHECKPOINT))
    ap.add_argument("--per-hop", type=int, default=200, help="validation questions per hop")
    ap.add_argument("--hops", default="1,2,3")
    ap.add_argument(
        "--offset",
        type=int,
        default=0,
        help="with --exclude-early-stopping: skip this many of the seeded held-out sample first (a "
        "confirmation set disjoint from the first --per-hop questions)",
    )
    ap.add_argument("--num-candidates", type=int, default=3)
    ap.add_argument("--train-questions", type=int, default=300, help="questions in the timed training pass")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument(
        "--llm-per-hop",
        type=int,
        default=0,
        help="also answer this many validation questions per hop through the dualr graph "
        "with the local model (one LLM call each), and GNN-only (answer_with=gnn) on the same questions",
    )
    ap.add_argument("--skip-gnn", action="store_true", help="only the --llm-per-hop runs")
    ap.add_argument(
        "--pathquestion",
        type=int,
        default=0,
        metavar="N",
        help="zero-shot on N questions per PathQuestion set",
    )
    ap.add_argument("--skip-train", action="store_true", help="no timed training pass")
    ap.add_argument(
        "--exclude-early-stopping",
        type=int,
        default=0,
        metavar="N",
        help="report on validation questions outside load_metaqa(h, 'validation', limit=N), the "
        "sample the checkpoint was early-stopped on (a seeded sample of the rest)",
    )
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    kg = open_kg("metaqa")
    model = DualRExplorer.load(a.checkpoint)
    enc = get_text_encoder(model.config.encoder)
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"checkpoint {a.checkpoint}: {os.path.getsize(a.checkpoint) / 1e6:.3f} MB, {n_params} parameters, "
        f"config {model.config}, meta {getattr(model, 'meta', {})}"
    )
    print(f"torch threads {torch.get_num_threads()}, load average {os.getloadavg()[0]:.1f}")
    if a.llm_per_hop:
        llm_runs(kg, a)
    if a.pathquestion:
        pathquestion_runs(model, a.pathquestion)
    if a.skip_gnn:
        return
    for hop in [int(h) for h in a.hops.split(",")]:
        qs = validation_questions(hop, a.per_hop, a.exclude_early_stopping, a.offset)
        t0 = time.perf_counter()
        q_enc = enc([q.question for q in qs])
        enc_ms = (time.perf_counter() - t0) * 1000 / len(qs)
        graph = ExplorationGraph(kg, enc)
        graph.warm_relations()
        scores = evaluate_hits1(model, graph, qs, q_enc, batch_size=50, answer_sets=ANSWER_SETS)
        timings: dict[str, list[float]] = {"cold": [], "warm": []}
        before = np.zeros(model.config.layers)
        after = np.zeros(model.config.layers)
        final = []
        timed = ExplorationGraph(kg, enc)  # a fresh neighbour cache: the first pass is cold
        for rnd in ("cold", "warm"):
            for i, q in enumerate(qs):
                t = time.perf_counter()
                with torch.no_grad():
                    ex = model.explore(torch.from_numpy(q_enc[i : i + 1]), [q.topic_entities], timed)
                    for e, _ in ex.top_candidates(0, a.num_candidates):
                        ex.chain(0, e)
                timings[rnd].append((time.perf_counter() - t) * 1000)
                if rnd == "warm":
                    before += np.array([int(c[0]) for c in ex.before_pruning])
                    after += np.array([int(c[0]) for c in ex.after_pruning])
                    final.append(int(ex.entity.numel()))
        n = len(qs)
        held = (
            f", outside the first {a.exclude_early_stopping} (early stopping)"
            + (f", from position {a.offset} of the held-out sample" if a.offset else "")
            if a.exclude_early_stopping
            else ""
        )
        print(f"\nMetaQA {hop}-hop, {n} dev-validation questions{held}")
        print(
            f"  GNN-only Hits@1 {100 * scores['hits1']:.1f}  (paper, test: {[97.6, 99.1, 99.5][hop - 1]})  "
            f"answer recall {100 * scores['answer_recall']:.1f}"
        )
        print("  F1 (N, answer_ratio): " + f1_text(scores))
        for rnd in ("cold", "warm"):
            ms = np.array(timings[rnd])
            print(
                f"  explore+backtrack ms/question ({rnd}): mean {ms.mean():.1f}  "
                f"median {np.median(ms):.1f}  p95 {np.percentile(ms, 95):.1f}"
            )
        print(f"  question encoding ms/question (batched): {enc_ms:.1f}")
        print(
            "  candidates per layer before pruning: "
            + " / ".join(f"{x / n:.0f}" for x in before)
            + "   after: "
            + " / ".join(f"{x / n:.0f}" for x in after)
            + f"   final candidate set: {np.mean(final):.0f}"
        )
    if a.skip_train:
        return
    # one timed training pass (fresh model, same architecture)
    train = []
    per = max(1, a.train_questions // 3)
    for hop in (1, 2, 3):
        train += list(load_metaqa(hop, split="train", limit=per))
    cfg = TrainConfig()
    q_enc = enc([q.question for q in train])
    fresh = DualRExplorer(model.config)
    opt = torch.optim.Adam(fresh.parameters(), lr=cfg.lr)
    graph = ExplorationGraph(kg, enc)
    t0 = time.perf_counter()
    for i in range(0, len(train), cfg.batch_size):
        b = train[i : i + cfg.batch_size]
        enc_b = torch.from_numpy(q_enc[i : i + cfg.batch_size])
        ex = fresh.explore(enc_b, [q.topic_entities for q in b], graph)
        loss, n_sup = fresh.loss(ex, [q.answers for q in b])
        if n_sup:
            opt.zero_grad()
            loss.backward()
            opt.step()
    secs = time.perf_counter() - t0
    print(
        f"\ntraining pass: {len(train)} questions (1/2/3-hop, batch {cfg.batch_size}) in {secs:.1f} s "
        f"= {1000 * secs / len(train):.0f} s per 1000 questions (cold neighbour cache)"
    )


def f1_text(scores: dict[str, float]) -> str:
    return "  ".join(f"({n}, {r:g}) {100 * scores[f'f1@{n},{r:g}']:.1f}" for n, r in ANSWER_SETS)


def pathquestion_runs(model: DualRExplorer, n: int) -> None:
    """Zero-shot Hits@1 and F1 on each PathQuestion set over its own KG."""
    enc = get_text_encoder(model.config.encoder)
    for variant in ("pq-2h", "pq-3h", "pql-2h", "pql-3h"):
        ds = load_pathquestion(variant, limit=n)
        qs = [mark_topic(q) for q in ds]
        graph = ExplorationGraph(open_kg(str(ds.kg)), enc)
        graph.warm_relations()
        scores = evaluate_hits1(model, graph, qs, enc([q.question for q in qs]), answer_sets=ANSWER_SETS)
        print(
            f"PathQuestion {variant} (zero-shot), {len(qs)} questions: Hits@1 {100 * scores['hits1']:.1f}  "
            f"answer recall {100 * scores['answer_recall']:.1f}  F1 {f1_text(scores)}",
            flush=True,
        )


def mark_topic(q: Question) -> Question:
    """``q`` with its topic entity marked ``[...]`` in the text where it occurs verbatim."""
    text = q.question
    for t in q.topic_entities:
        text = text.replace(t, f"[{t}]", 1)
    return dataclasses.replace(q, question=text)


def validation_questions(hop: int, n: int, exclude_first: int, offset: int = 0) -> list:
    """``n`` dev-validation questions; with ``exclude_first``, a seeded sample of those outside the
    early-stopping sample ``load_metaqa(hop, "validation", limit=exclude_first)``, from position
    ``offset`` of that sample on."""
    if not exclude_first:
        return list(load_metaqa(hop, split="validation", limit=n))
    used = {q.id for q in load_metaqa(hop, split="validation", limit=exclude_first)}
    rest = [q for q in load_metaqa(hop, split="validation") if q.id not in used]
    order = np.random.default_rng(0).permutation(len(rest))
    return [rest[i] for i in order[offset : offset + n]]


def llm_runs(kg: object, a: argparse.Namespace) -> None:
    """Hits@1 of the dualr graph with the local model vs GNN-only on the same questions (topic entities
    from the MetaQA brackets, as the entity index would link them)."""
    llm = resolve_chat_model("local", max_tokens=32)
    graphs = {
        "gnn_only": create_dualr_graph(kg, checkpoint=a.checkpoint, answer_with="gnn"),
        "local_llm": create_dualr_graph(kg, checkpoint=a.checkpoint, llm=llm),
    }
    for hop in [int(h) for h in a.hops.split(",")]:
        qs = validation_questions(hop, a.llm_per_hop, a.exclude_early_stopping)
        for name, g in graphs.items():
            hits = calls = 0
            t0 = time.perf_counter()
            for q in qs:
                out = g.invoke({"question": q.question, "topic_entities": list(q.topic_entities)})
                gold = {x.lower() for x in q.answers}
                hits += bool(out["answers"]) and out["answers"][0].lower() in gold
                calls += out["usage"]["llm_calls"]
            secs = (time.perf_counter() - t0) / len(qs)
            print(
                f"MetaQA {hop}-hop dualr[{name}] on {len(qs)} validation questions: Hits@1 "
                f"{100 * hits / len(qs):.1f}, LLM calls/question {calls / len(qs):.2f}, "
                f"{secs:.1f} s/question",
                flush=True,
            )


if __name__ == "__main__":
    main()
