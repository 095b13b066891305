"""Relation choice accuracy of the ranked route: does the chain of relations the model ranks first reach a
gold answer?

For each MetaQA question (seeded dev-validation split), starting at its topic entity, the model ranks the
candidate relations of the current entities (both directions; the options and the prompt of
knowledge_navigator's ranked route, ``select_relations_rank``) and follows the best one, ``hops`` times.
A question counts when an entity reached at the end is a gold answer (exact match after normalisation).
A second column ranks with calibration (``baseline``: each relation's score less its score when the
question is only the topic entity, as ``calibrate=True`` does in the methods), and a third does the same
with the free-generation route's prompt and parser (``decide="generate"``) for comparison.

    python benchmarks/relation_choice.py --hops 1 2 3 --limit 20

Prints one row per hop: questions, ranked, calibrated and generated accuracy, seconds per question.
"""

from __future__ import annotations

import argparse
import time

from kg_agents.core.decide import rank
from kg_agents.core.prompts import prompt_templates
from kg_agents.eval.datasets import load_metaqa
from kg_agents.eval.metrics import normalize_answer
from kg_agents.kg.text import relation_words
from kg_agents.llm import resolve_chat_model
from kg_agents.llm.ranking import rank_options
from kg_agents.methods.knowledge_navigator.knowledge import candidate_text, parse_selection
from kg_agents.methods.knowledge_navigator.nodes import rank_options_text

MAX_FRONTIER = 20


def candidates(kg, entities: list[str]) -> list[tuple[str, str]]:
    """The relations (with direction) of the frontier's entities, in a fixed order."""
    out: dict[tuple[str, str], None] = {}
    for e in entities:
        for d in ("out", "in"):
            for r in sorted(kg.relations(e, d)):
                out[(r, d)] = None
    return list(out)


def follow(kg, entities: list[str], choice: tuple[str, str], seen: set[str]) -> list[str]:
    rel, d = choice
    nxt: list[str] = []
    for e in entities:
        for t in kg.neighbors(e, rel, d, limit=200):
            o = t.other(e)
            if o not in seen:
                seen.add(o)
                nxt.append(o)
    return nxt[:MAX_FRONTIER]


def run(hops: int, limit: int, llm, templates) -> tuple[int, float, float, float, float]:
    ds = load_metaqa(hops, "validation", limit=limit)
    kg = ds.default_kg()
    ok = {"rank": 0, "calibrated": 0, "generate": 0}
    t0 = time.perf_counter()
    for q in ds:
        golds = {normalize_answer(a) for a in q.answers}
        for route in ok:
            frontier = list(q.topic_entities)
            seen = set(frontier)
            for _ in range(hops):
                opts = candidates(kg, frontier)
                if not opts or not frontier:
                    frontier = []
                    break
                name = kg.label(frontier[0])
                if route == "rank":
                    msgs = templates["select_relations_rank"].format_messages(
                        question=q.question, entity=name
                    )
                    pick = rank_options(llm, msgs, rank_options_text(opts, name)).order()[0]
                elif route == "calibrated":
                    tpl = templates["select_relations_rank"]
                    msgs = tpl.format_messages(question=q.question, entity=name)
                    base = tpl.format_messages(question=f"[{name}]", entity=name)
                    pick = rank(llm, msgs, rank_options_text(opts, name), baseline=base).order()[0]
                else:
                    texts = [candidate_text(r, d, name) for r, d in opts]
                    listing = "\n".join(f"{i + 1}. {o}" for i, o in enumerate(texts))
                    msgs = templates["select_relations"].format_messages(
                        question=q.question, entity=name, options=listing, k=1
                    )
                    reply = str(llm.invoke(msgs, max_tokens=16).content)
                    picked = parse_selection(reply, texts, 1, [relation_words(r) for r, _ in opts])
                    pick = picked[0] if picked else 0
                frontier = follow(kg, frontier, opts[pick], seen)
            ok[route] += any(normalize_answer(kg.label(e)) in golds for e in frontier)
    n = len(ds)
    return n, ok["rank"] / n, ok["calibrated"] / n, ok["generate"] / n, (time.perf_counter() - t0) / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hops", type=int, nargs="+", default=[1, 2, 3])
    ap.add_argument("--limit", type=int, default=20)
    args = ap.parse_args()
    llm = resolve_chat_model("local")
    templates = prompt_templates("knowledge_navigator", ["select_relations", "select_relations_rank"], None)
    print("| hops | n | ranked: chain reaches a gold answer | calibrated | generated | s/question |")
    print("|---|---|---|---|---|---|")
    for h in args.hops:
        n, ranked, calibrated, generated, secs = run(h, args.limit, llm, templates)
        print(f"| {h} | {n} | {ranked:.3f} | {calibrated:.3f} | {generated:.3f} | {secs:.1f} |", flush=True)


if __name__ == "__main__":
    main()
