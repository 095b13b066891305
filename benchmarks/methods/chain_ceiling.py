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
"""

from __future__ import annotations

import argparse

from kg_agents.core.chains import walk_chain
from kg_agents.eval.datasets import PATHQUESTION_SETS, get_dataset
from kg_agents.kg import open_kg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=100, help="questions per set (default: 100)")
    ap.add_argument("--split", default="validation", choices=["train", "validation", "dev"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print("| set | reading | n | hit | exact | empty |")
    print("|---|---|---|---|---|---|")
    for name in (f"pathquestion-{s}" for s in PATHQUESTION_SETS):
        ds = get_dataset(name, args.split, seed=args.seed, limit=args.limit)
        kg = open_kg(ds.kg)
        for revisit in (False, True):
            hit = exact = empty = 0
            for q in ds:
                path = [h.relation_text for h in q.meta["gold_path"].hops]
                walk = walk_chain(kg, q.topic_entities[:1], path, limit=1000, revisit=revisit)
                got = {kg.label(p.end).lower() for p in walk.paths if p.end is not None}
                gold = {a.lower() for a in q.answers}
                hit += bool(got & gold)
                exact += bool(got) and got <= gold
                empty += not got
            n = len(ds)
            reading = "revisit" if revisit else "default"
            print(f"| {name} | {reading} | {n} | {hit / n:.2f} | {exact / n:.2f} | {empty / n:.2f} |")


if __name__ == "__main__":
    main()
