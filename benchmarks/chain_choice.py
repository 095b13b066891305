"""Relation-chain choice of graph_explore's ranked route: is the chain the model ranks first a best one?

For each MetaQA question (seeded dev-validation split), the relation chains of exactly ``hops`` hops from
its topic entity (``kg_agents.core.chains.relation_chains``) are ranked as graph_explore ranks them (the
prompt ``explore_plan_relations``, calibrated against the question reduced to the entity), once without
and once with the prompt's worked example. The chains whose reach (the entities they lead to) best
matches the gold answers, by F1, are the best ones; a question counts when the chain ranked first is
one of them.

    python benchmarks/chain_choice.py --hops 2 --limit 30
    python benchmarks/chain_choice.py --hops 3 --limit 45 --skip 20
    python benchmarks/chain_choice.py --model local:ADAPTER --plain     # an adapter, on its plain scores

A specialist adapter learns the chain on its plain scores, so graph_explore ranks them uncalibrated
with one (``--plain`` here).

Prints one row per hop: questions, the share chosen right without and with the example, s/question.
"""

from __future__ import annotations

import argparse
import time

from kg_agents.core.chains import CHAIN_EXAMPLE, chain_text, relation_chains
from kg_agents.core.decide import rank
from kg_agents.core.prompts import prompt_templates
from kg_agents.eval.datasets import load_metaqa
from kg_agents.kg.paths import follow_chain
from kg_agents.llm import resolve_chat_model


def chain_f1(kg, start: str, chains, gold: set[str]) -> list[float]:
    """Each chain's F1: the entities it reaches from ``start`` against the gold answers."""
    out = []
    for c in chains:
        reached = follow_chain(kg, {start}, c, 2000)
        hit = len(reached & gold)
        out.append(2 * hit / (len(reached) + len(gold)) if hit else 0.0)
    return out


def run(hops: int, limit: int, skip: int, llm, tpl, plain: bool = False) -> tuple[int, float, float, float]:
    ds = list(load_metaqa(hops, "validation", limit=limit))[skip:]
    kg = load_metaqa(hops, "validation", limit=1).default_kg()
    right = {"none": 0, "example": 0}
    t0 = time.perf_counter()
    for q in ds:
        start = q.topic_entities[0]
        name = kg.label(start)
        chains, _ = relation_chains(kg, [start], hops)
        if not chains:
            continue
        f1 = chain_f1(kg, start, chains, {a for a in q.answers if kg.has_entity(a)})
        best = max(f1)
        texts = [chain_text(c) for c in chains]
        for variant, example in (("none", ""), ("example", CHAIN_EXAMPLE)):
            ranking = rank(
                llm,
                tpl.format_messages(question=q.question, entity=name, example=example),
                texts,
                baseline=None
                if plain
                else tpl.format_messages(question=f"[{name}]", entity=name, example=example),
            )
            right[variant] += best > 0 and f1[ranking.order()[0]] >= best - 1e-9
    n = len(ds)
    return n, right["none"] / n, right["example"] / n, (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hops", type=int, nargs="+", default=[2, 3])
    ap.add_argument("--limit", type=int, default=30, help="the first N questions of the seeded order")
    ap.add_argument("--skip", type=int, default=0, help="of those, leave out the first SKIP")
    ap.add_argument("--model", default="local", help="a model spec (local:ADAPTER for an adapter)")
    ap.add_argument("--plain", action="store_true", help="rank on the plain scores (no calibration)")
    args = ap.parse_args()
    llm = resolve_chat_model(args.model)
    tpl = prompt_templates("graph_cot", ["explore_plan_relations"], None)["explore_plan_relations"]
    print("| hops | n | best chain first, no example | with the example | s/question |")
    print("|---|---|---|---|---|")
    for h in args.hops:
        n, plain, example, secs = run(h, args.limit, args.skip, llm, tpl, args.plain)
        print(f"| {h} | {n} | {plain:.3f} | {example:.3f} | {secs:.1f} |", flush=True)


if __name__ == "__main__":
    main()
