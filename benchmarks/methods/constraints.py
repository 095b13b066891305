"""The constraint step alone (``kg_agents.core.constraint.narrow``) on gold answers, no method: how often it
narrows a constraint question's chain to exactly its gold answers, and how often it, or the whole
``constrain`` node with its steps a hop away (``constrain_update``), changes a chain question's answers at
all (they should not).

Usage::

    PYTHONPATH=. python benchmarks/methods/constraints.py [--limit 1000]

For each constraint question of ``metaqa-whole`` (dev), the chain of its logical form is walked from its
topic entity and its whole answer set narrowed; for the first ``--limit`` validation questions of MetaQA 1,
2 and 3 hops, their gold answers are narrowed (their topic entities given), and given to the whole node
(no paths: the steps aside and on may run). Prints the counts and each question where the step did
otherwise than it should.
"""

from __future__ import annotations

import argparse

from kg_agents.core.chains import walk_chain
from kg_agents.core.constraint import constrain_update, narrow
from kg_agents.eval.data_whole import load_metaqa_whole
from kg_agents.eval.datasets import load_metaqa
from kg_agents.kg import open_kg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=1000, help="chain questions per hop")
    args = ap.parse_args()
    kg = open_kg("metaqa")
    exact = fired = n = 0
    for q in load_metaqa_whole("dev").questions:
        if q.meta.get("kind") != "constraint":
            continue
        n += 1
        topics = list(q.topic_entities or [])
        chain = walk_chain(kg, topics, q.meta["paths"][0].split(), limit=10_000)
        ends = list(dict.fromkeys(p.end for p in chain.paths if p.end and p.end not in topics))
        got = narrow(kg, q.question, topics, ends)
        fired += got.constraint is not None
        if sorted(got.answers) == sorted(q.answers):
            exact += 1
        else:
            print(f"  {q.id} {q.question!r}: {got.constraint} kept {len(got.answers)} of {len(ends)}")
    print(f"metaqa-whole constraints: {n}, narrowed {fired}, exactly the gold answers {exact}")
    for hops in (1, 2, 3):
        ds = load_metaqa(hops, split="validation", limit=args.limit)
        narrowed = changed = 0
        for q in ds.questions:
            topics = list(q.topic_entities or [])
            got = narrow(kg, q.question, topics, q.answers)
            if got.constraint is not None:
                narrowed += 1
                print(f"  {q.id} {q.question!r}: {got.constraint}")
            state = {"question": q.question, "topic_entities": topics, "answers": q.answers, "paths": []}
            update = constrain_update(kg, state)
            if "answers" in update:
                changed += 1
                print(f"  {q.id} {q.question!r}: {update['trace'][0]}")
        print(
            f"metaqa-{hops}hop validation: {len(ds.questions)} chain questions, narrowed {narrowed}, "
            f"changed by the node {changed}"
        )


if __name__ == "__main__":
    main()
