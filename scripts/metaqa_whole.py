"""Build and check ``metaqa-whole``; find topic pairs and constraint values worth asking about.

Build (the default): execute every hand-written form of ``kg_agents/data/metaqa/whole/forms.jsonl`` on the
MetaQA KG, check it (kg_agents.eval.data_whole.execute_form), and write ``questions.jsonl`` next to it
(atomically; nothing is written when a form fails its checks)::

    python scripts/metaqa_whole.py

Find: propose topics for a new form, whose answer set is small and not empty, and strictly smaller than
each chain's (a conjunction) or than the chain's (a constraint). The questions are then written by hand::

    python scripts/metaqa_whole.py --find conjunction --paths "~starred_actors" "~directed_by" --n 20
    python scripts/metaqa_whole.py --find constraint --paths "~directed_by" --relation release_year
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter

from kg_agents.data import data_path
from kg_agents.errors import DataFormatError
from kg_agents.eval.data_whole import (
    WHOLE_FORMS,
    WHOLE_QUESTIONS,
    WholeForm,
    execute_form,
    read_forms,
    whole_record,
)
from kg_agents.files import atomic_write
from kg_agents.kg import open_kg
from kg_agents.kg.base import KnowledgeGraph
from kg_agents.synth.schemas import execute, inverse_step, parse_relation_path


def build(kg: KnowledgeGraph) -> int:
    forms = read_forms(data_path(WHOLE_FORMS))
    lines, failed = [], []
    for form in forms:
        try:
            lines.append(json.dumps(whole_record(form, execute_form(kg, form)), ensure_ascii=False))
        except DataFormatError as exc:
            failed.append(str(exc))
    if failed:
        print("\n".join(failed), file=sys.stderr)
        print(f"{len(failed)} of {len(forms)} forms failed; nothing written", file=sys.stderr)
        return 1
    atomic_write(data_path(WHOLE_QUESTIONS), "\n".join(lines) + "\n")
    kinds = Counter((f.kind, f.hops) for f in forms)
    print(
        f"wrote {len(lines)} questions to {data_path(WHOLE_QUESTIONS)}: "
        + ", ".join(f"{k} {h}-hop {c}" for (k, h), c in sorted(kinds.items()))
    )
    return 0


def _pool(kg: KnowledgeGraph, path: str, min_answers: int) -> list[str]:
    """Entities from which ``path`` starts (first step's sources) with at least ``min_answers`` along it."""
    rel, direction = parse_relation_path(path)[0]
    heads: Counter[str] = Counter()
    for e, _ in kg.iter_labels():
        heads[e] = 0
    out = []
    for e in sorted(heads):
        if kg.degree(e, direction="in" if direction == "in" else "out") < min_answers:
            continue
        tl = kg.neighbors(e, rel, "in" if direction == "in" else "out", limit=1000)
        if len(tl) >= min_answers:
            out.append(e)
    return out


def find_conjunctions(kg: KnowledgeGraph, paths: list[str], n: int, seed: int, min_answers: int) -> None:
    rng = random.Random(seed)
    first, second = paths
    back = tuple(inverse_step(s) for s in reversed(parse_relation_path(second)))
    pool = _pool(kg, first, min_answers)
    rng.shuffle(pool)
    shown = 0
    for x in pool:
        a1 = execute(kg, x, first, cap=20_000)
        if not a1 or len(a1) < 2:
            continue
        ys: Counter[str] = Counter()
        for a in sorted(a1)[:50]:
            ys.update(execute(kg, a, back, cap=20_000) or ())
        for y, _ in ys.most_common(8):
            if y == x:
                continue
            a2 = execute(kg, y, second, cap=20_000) or frozenset()
            both = a1 & a2
            if 1 <= len(both) <= 30 and len(both) < min(len(a1), len(a2)):
                print(
                    json.dumps({"topics": [x, y], "sizes": [len(a1), len(a2)], "answers": sorted(both)[:6]})
                )
                shown += 1
                break
        if shown >= n:
            return


def find_constraints(
    kg: KnowledgeGraph, path: str, relation: str, n: int, seed: int, min_answers: int
) -> None:
    rng = random.Random(seed)
    ((rel, direction),) = parse_relation_path(relation)
    pool = _pool(kg, path, min_answers)
    rng.shuffle(pool)
    shown = 0
    for x in pool:
        ans = execute(kg, x, path, cap=20_000)
        if not ans or len(ans) < 3:
            continue
        values: Counter[str] = Counter()
        for a in sorted(ans):
            values.update(
                {t.other(a) for t in kg.neighbors(a, rel, "in" if direction == "in" else "out", limit=1000)}
            )
        good = [(v, c) for v, c in values.most_common() if 1 <= c < len(ans) and c <= 30]
        if good:
            print(json.dumps({"topic": x, "chain": len(ans), "values": good[:6]}, ensure_ascii=False))
            shown += 1
        if shown >= n:
            return


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--find", choices=("conjunction", "constraint"))
    p.add_argument("--paths", nargs="+", default=[], help="relation paths (two for a conjunction)")
    p.add_argument("--relation", help="the constraint's attribute step")
    p.add_argument("--n", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--min-answers", type=int, default=5, help="least answers along a topic's first step")
    args = p.parse_args(argv)
    kg = open_kg("metaqa")
    if args.find == "conjunction":
        if len(args.paths) != 2:
            p.error("--find conjunction needs two --paths")
        find_conjunctions(kg, args.paths, args.n, args.seed, args.min_answers)
        return 0
    if args.find == "constraint":
        if len(args.paths) != 1 or not args.relation:
            p.error("--find constraint needs one --paths and --relation")
        find_constraints(kg, args.paths[0], args.relation, args.n, args.seed, args.min_answers)
        return 0
    return build(kg)


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["WholeForm", "build", "find_conjunctions", "find_constraints", "main"]
