"""Decision probes: does a model rank a right option first, the decision taken out of its method?

Each probe asks one kind of decision on seeded MetaQA dev-**validation** questions (dev files only) and
counts how often the option the model ranks first is a right one. ``--decision``:

- ``chain``: graph_explore's relation-chain choice of its ranked route. The relation chains of exactly
  ``hops`` hops from the topic entity (``kg_agents.core.chains.relation_chains``) are ranked as
  graph_explore ranks them (the prompt ``explore_plan_relations``, calibrated against the question reduced
  to the entity; ``--plain``: on the plain scores, as graph_explore ranks with a specialist adapter), once
  without and once with the prompt's worked example. The chains whose reach best matches the gold answers
  (F1) are the right ones. One row per model x hops: the share chosen right without and with the example.
- ``relation``: knowledge_navigator's ranked relation choice followed ``hops`` times from the topic entity
  (its ``select_relations_rank`` prompt and options); a question counts when an entity reached at the
  end is a gold answer. Columns: ranked, calibrated (each relation's score less its score when the
  question is only the topic entity) and the free-generation route (``select_relations``) for comparison.
- ``specialist``: every ranked decision the specialist's teacher (``kg_agents.specialist``) meets walking
  each method along the gold paths, exactly as ``kg-agents train specialist`` records them on dev-train
  (decisions whose options are all right or none right are left out, as in training). One row per method
  x role, a column per model; ``--by-right`` splits graph_explore's End? by its right reply and
  graph_agent's actions by the right action's kind, and counts per model which kind it chose instead.

A model that does not pick better here cannot make a method better. Models are specs of
``resolve_chat_model`` (``local``, ``local:ADAPTER``...). Prints markdown tables.

    python benchmarks/decisions/probe.py --decision chain --hops 2 --limit 30
    python benchmarks/decisions/probe.py --decision chain --hops 3 --limit 45 --skip 20
    python benchmarks/decisions/probe.py --decision chain --models local:ADAPTER --plain
    python benchmarks/decisions/probe.py --decision relation --hops 1 2 3 --limit 20
    HF_HUB_OFFLINE=1 python benchmarks/decisions/probe.py --decision specialist --per-hop 10 \\
        --models local local:runs/specialist
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from kg_agents.core.chains import CHAIN_EXAMPLE, chain_text, relation_chains
from kg_agents.core.decide import rank
from kg_agents.core.prompts import prompt_templates
from kg_agents.eval.datasets import load_metaqa
from kg_agents.eval.metrics import normalize_answer
from kg_agents.kg.paths import follow_chain
from kg_agents.kg.text import relation_words
from kg_agents.llm import resolve_chat_model
from kg_agents.llm.ranking import rank_options

DECISIONS = ("chain", "relation", "specialist")
DEFAULTS: dict[str, dict[str, Any]] = {
    "chain": {"hops": [2, 3], "limit": 30, "models": ["local"]},
    "relation": {"hops": [1, 2, 3], "limit": 20, "models": ["local"]},
    "specialist": {"hops": [1, 2, 3], "limit": 10, "models": ["local", "local:specialist"]},
}
MAX_FRONTIER = 20


# --------------------------------------------------------------------------- chain
def chain_f1(kg: Any, start: str, chains: Any, gold: set[str]) -> list[float]:
    """Each chain's F1: the entities it reaches from ``start`` against the gold answers."""
    out = []
    for c in chains:
        reached = follow_chain(kg, {start}, c, 2000)
        hit = len(reached & gold)
        out.append(2 * hit / (len(reached) + len(gold)) if hit else 0.0)
    return out


def models_by_hops(args: argparse.Namespace) -> Iterator[tuple[str, Any, int, list[Any], Any]]:
    """``(model spec, chat model, hops, validation questions, KG)`` for each model and each ``--hops``: the
    seeded sample (``--seed``, ``--limit``) less its first ``--skip`` questions."""
    for spec in args.models:
        llm = resolve_chat_model(spec)
        for hops in args.hops:
            ds = list(load_metaqa(hops, "validation", seed=args.seed, limit=args.limit))[args.skip :]
            yield spec, llm, hops, ds, load_metaqa(hops, "validation", limit=1).default_kg()


def probe_chain(args: argparse.Namespace) -> None:
    tpl = prompt_templates("graph_cot", ["explore_plan_relations"], None)["explore_plan_relations"]
    print("| model | hops | n | best chain first, no example | with the example | s/question |")
    print("|---|---|---|---|---|---|")
    for spec, llm, hops, ds, kg in models_by_hops(args):
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
                base = tpl.format_messages(question=f"[{name}]", entity=name, example=example)
                ranking = rank(
                    llm,
                    tpl.format_messages(question=q.question, entity=name, example=example),
                    texts,
                    baseline=None if args.plain else base,
                )
                right[variant] += best > 0 and f1[ranking.order()[0]] >= best - 1e-9
        n = max(len(ds), 1)
        secs = (time.perf_counter() - t0) / n
        print(
            f"| {spec} | {hops} | {len(ds)} | {right['none'] / n:.3f} | {right['example'] / n:.3f} "
            f"| {secs:.1f} |",
            flush=True,
        )


# --------------------------------------------------------------------------- relation
def candidates(kg: Any, entities: list[str]) -> list[tuple[str, str]]:
    """The relations (with direction) of the frontier's entities, in a fixed order."""
    out: dict[tuple[str, str], None] = {}
    for e in entities:
        for d in ("out", "in"):
            for r in sorted(kg.relations(e, d)):
                out[(r, d)] = None
    return list(out)


def follow(kg: Any, entities: list[str], choice: tuple[str, str], seen: set[str]) -> list[str]:
    rel, d = choice
    nxt: list[str] = []
    for e in entities:
        for t in kg.neighbors(e, rel, d, limit=200):
            o = t.other(e)
            if o not in seen:
                seen.add(o)
                nxt.append(o)
    return nxt[:MAX_FRONTIER]


def _pick_relation(route: str, llm: Any, templates: Any, q: Any, name: str, opts: list) -> int:
    from kg_agents.methods.knowledge_navigator.knowledge import candidate_text, parse_selection
    from kg_agents.methods.knowledge_navigator.nodes import rank_options_text

    tpl = templates["select_relations_rank"]
    msgs = tpl.format_messages(question=q.question, entity=name)
    if route == "rank":
        return rank_options(llm, msgs, rank_options_text(opts, name)).order()[0]
    if route == "calibrated":
        base = tpl.format_messages(question=f"[{name}]", entity=name)
        return rank(llm, msgs, rank_options_text(opts, name), baseline=base).order()[0]
    texts = [candidate_text(r, d, name) for r, d in opts]
    listing = "\n".join(f"{i + 1}. {o}" for i, o in enumerate(texts))
    sel = templates["select_relations"]
    msgs = sel.format_messages(question=q.question, entity=name, options=listing, k=1)
    reply = str(llm.invoke(msgs, max_tokens=16).content)
    picked = parse_selection(reply, texts, 1, [relation_words(r) for r, _ in opts])
    return picked[0] if picked else 0


def probe_relation(args: argparse.Namespace) -> None:
    templates = prompt_templates("knowledge_navigator", ["select_relations", "select_relations_rank"], None)
    print("| model | hops | n | ranked: chain reaches a gold answer | calibrated | generated | s/question |")
    print("|---|---|---|---|---|---|---|")
    for spec, llm, hops, ds, kg in models_by_hops(args):
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
                    pick = _pick_relation(route, llm, templates, q, kg.label(frontier[0]), opts)
                    frontier = follow(kg, frontier, opts[pick], seen)
                ok[route] += any(normalize_answer(kg.label(e)) in golds for e in frontier)
        n = max(len(ds), 1)
        rates = " | ".join(f"{ok[r] / n:.3f}" for r in ok)
        secs = (time.perf_counter() - t0) / n
        print(f"| {spec} | {hops} | {len(ds)} | {rates} | {secs:.1f} |", flush=True)


# --------------------------------------------------------------------------- specialist
def kind(ex: Any, index: int) -> str | None:
    """The kind of option ``index`` of an End? decision or a graph_agent action (None for other roles)."""
    reply = ex.replies[index]
    if ex.method == "graph_explore" and ex.role == "end":
        return str(reply)
    if ex.method == "graph_agent" and ex.role == "action":
        return "Finish" if "Finish[" in reply else "NeighborCheck" if "NeighborCheck[" in reply else "other"
    return None


def probe_specialist(args: argparse.Namespace) -> None:
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from kg_agents.kg import open_kg
    from kg_agents.specialist.train import DEFAULT_METHODS, collect_examples

    roles = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}
    kg = open_kg("metaqa")
    qs = [q for h in args.hops for q in load_metaqa(h, "validation", seed=args.seed, limit=args.limit)]
    t0 = time.perf_counter()
    examples, _ = collect_examples(kg, qs, (args.methods or DEFAULT_METHODS).split(","))
    secs = time.perf_counter() - t0
    print(f"{len(examples)} decisions from {len(qs)} validation questions in {secs:.0f} s")
    right: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    total: dict[tuple[str, str], int] = defaultdict(int)
    options: dict[tuple[str, str], int] = defaultdict(int)
    # with --by-right, each End? decision and graph_agent action also counts in a row of its right kind
    right_kinds = [kind(ex, ex.right[0]) if args.by_right else None for ex in examples]
    for ex, rk in zip(examples, right_kinds, strict=True):
        for role in (ex.role, *([f"{ex.role}, right: {rk}"] if rk else [])):
            total[ex.method, role] += 1
            options[ex.method, role] += len(ex.replies)
    kinds: dict[tuple[str, str], int] = defaultdict(int)  # (model, "right kind -> chosen kind")
    for spec in args.models:
        llm = resolve_chat_model(spec)
        t0 = time.perf_counter()
        for ex, rk in zip(examples, right_kinds, strict=True):
            chat = [roles[m["role"]](content=m["content"]) for m in ex.chat]
            top = rank_options(llm, chat, ex.replies, complete=ex.complete).order()[0]
            right[ex.method, ex.role][spec] += top in ex.right
            if rk:
                right[ex.method, f"{ex.role}, right: {rk}"][spec] += top in ex.right
                kinds[spec, f"{rk} -> {kind(ex, top)}"] += 1
        print(f"{spec}: {len(examples)} rankings in {time.perf_counter() - t0:.0f} s")
    head = "| method | role | decisions | mean options | " + " | ".join(args.models) + " |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for key in sorted(total):
        n = total[key]
        accs = " | ".join(f"{right[key][m] / n:.3f}" for m in args.models)
        print(f"| {key[0]} | {key[1]} | {n} | {options[key] / n:.1f} | {accs} |")
    whole = [k for k in total if ", right: " not in k[1]]  # the split rows are not counted twice
    n = max(sum(total[k] for k in whole), 1)
    accs = " | ".join(f"{sum(right[k][m] for k in whole) / n:.3f}" for m in args.models)
    print(f"| all | all | {n} | | {accs} |")
    if args.by_right:
        print("\nright kind -> chosen kind, per model (End? and graph_agent actions):")
        for (spec, pair), count in sorted(kinds.items()):
            print(f"- {spec}: {pair}: {count}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--decision", required=True, choices=DECISIONS)
    ap.add_argument("--hops", type=int, nargs="+", help="hop counts (default: chain 2 3, else 1 2 3)")
    ap.add_argument("--limit", "--per-hop", type=int, help="the first N questions of each hop's seeded order")
    ap.add_argument("--skip", type=int, default=0, help="then leave out the first SKIP")
    ap.add_argument("--models", "--model", nargs="+", help="model specs (local:ADAPTER for an adapter)")
    ap.add_argument("--plain", action="store_true", help="chain: rank on the plain scores (no calibration)")
    ap.add_argument("--seed", type=int, default=0, help="the validation split's seed")
    ap.add_argument("--methods", help="specialist: the teacher's methods, comma-separated")
    ap.add_argument("--by-right", action="store_true", help="specialist: split End?/actions by kind")
    args = ap.parse_args(argv)
    for key, value in DEFAULTS[args.decision].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    {"chain": probe_chain, "relation": probe_relation, "specialist": probe_specialist}[args.decision](args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
