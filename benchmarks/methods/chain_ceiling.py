"""How far a method that picks the right relation chain gets, under each reading of a walk.

Usage::

    PYTHONPATH=. python benchmarks/methods/chain_ceiling.py [--limit 100] [--split validation]

For each PathQuestion set (whose questions carry the relation path that generated them), the gold path's
relation chain is walked from the question's topic entity with :func:`kg_agents.core.chains.walk_chain`,
once as the methods walk by default (never through the topic entity again, never ending on it) and once
with ``revisit`` (the chain executed as the graph executes a relation path). Prints, per set and reading,
the share of questions whose walk reaches some gold answer (``hit``), reaches only gold answers
(``exact``: any order of them gives Hits@1), and reaches nothing (``empty``). No model runs: this is the
ceiling of the chain-following route (knowledge_navigator and graph_explore with their relation chain)
when the chain is chosen right.

With ``--closest`` it also says how far the sentence encoder alone gets at choosing the chain: among the
relation chains of 1 to 3 hops from the topic entity (listed under each reading, written as
:func:`kg_agents.core.chains.chain_text` writes them), the share of questions whose closest chain to the
question (its topic masked; what ``hops="chain"`` takes its depth from) is the gold chain (``closest``),
and whose closest chain of the gold chain's length is (``closest at its length``: the choice when the
depth is known).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from kg_agents.core.chains import chain_text, relation_chains, walk_chain
from kg_agents.core.hops import CHAIN_MAX_HOPS, default_encoder, encode, mask_entities
from kg_agents.eval.datasets import PATHQUESTION_SETS, get_dataset
from kg_agents.kg import open_kg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=100, help="questions per set (default: 100)")
    ap.add_argument("--split", default="validation", choices=["train", "validation", "dev"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--closest", action="store_true", help="also the sentence encoder's closest chain")
    args = ap.parse_args()
    encoder = default_encoder() if args.closest else None
    extra = " closest | closest at its length |" if args.closest else ""
    print("| set | reading | n | hit | exact | empty |" + extra)
    print("|---|---|---|---|---|---|" + "---|---|" * bool(args.closest))
    for name in (f"pathquestion-{s}" for s in PATHQUESTION_SETS):
        ds = get_dataset(name, args.split, seed=args.seed, limit=args.limit)
        kg = open_kg(ds.kg)
        for revisit in (False, True):
            hit = exact = empty = closest = closest_at_length = 0
            for q in ds:
                path = [h.relation_text for h in q.meta["gold_path"].hops]
                if encoder is not None:
                    gold_chain = tuple(
                        (h.relation, "in" if h.inverse else "out") for h in q.meta["gold_path"].hops
                    )
                    best, best_at_length = closest_chains(
                        kg, q.question, q.topic_entities[:1], revisit, encoder, len(gold_chain)
                    )
                    closest += best == gold_chain
                    closest_at_length += best_at_length == gold_chain
                walk = walk_chain(kg, q.topic_entities[:1], path, limit=1000, revisit=revisit)
                got = {kg.label(p.end).lower() for p in walk.paths if p.end is not None}
                gold = {a.lower() for a in q.answers}
                hit += bool(got & gold)
                exact += bool(got) and got <= gold
                empty += not got
            n = len(ds)
            reading = "revisit" if revisit else "default"
            more = f" {closest / n:.2f} | {closest_at_length / n:.2f} |" if encoder is not None else ""
            print(f"| {name} | {reading} | {n} | {hit / n:.2f} | {exact / n:.2f} | {empty / n:.2f} |" + more)


def closest_chains(
    kg: Any, question: str, topics: list[str], revisit: bool, encoder: Any, length: int
) -> tuple[tuple[tuple[str, str], ...] | None, tuple[tuple[str, str], ...] | None]:
    """The chain of 1..``CHAIN_MAX_HOPS`` hops from ``topics`` closest to ``question`` (cosine of the
    sentence encoder's vectors, the shorter first in a tie, as ``chain_hops`` compares them), and the
    closest of ``length`` hops."""
    chains = [
        c for n in range(1, CHAIN_MAX_HOPS + 1) for c in relation_chains(kg, topics, n, revisit=revisit)[0]
    ]
    if not chains:
        return None, None
    query = encode(encoder, [mask_entities(question, [kg.label(e) for e in topics])])[0]
    vecs = encode(encoder, [chain_text(c) for c in chains])
    sims = vecs @ query / np.maximum(np.linalg.norm(vecs, axis=1) * np.linalg.norm(query), 1e-12)
    order = np.argsort(-sims, kind="stable")
    at_length = next((chains[i] for i in order if len(chains[i]) == length), None)
    return chains[int(order[0])], at_length


if __name__ == "__main__":
    main()
