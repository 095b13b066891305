"""Decision accuracy per method and role: does a model rank a right option first?

The specialist's teacher (``kg_agents.specialist``) walks each method along the gold paths of seeded MetaQA
dev-**validation** questions and records every ranked decision it meets (the prompt, the options, the right
ones), exactly as ``kg-agents train specialist`` does on dev-train. Each model then ranks the same options
with ``rank_options``; a decision counts as right when the top-ranked option is one of the right ones.
This isolates the decisions from the methods' control flow: a model that does not pick better here cannot
make a method better. Decisions whose options are all right or none right are not recorded (as in training).

    HF_HUB_OFFLINE=1 python benchmarks/specialist_decisions.py --per-hop 10 \\
        --models local local:runs/specialist

Prints a markdown table: method, role, decisions, and the top-1 accuracy of each model, plus the options'
mean count (chance is about 1 / options for a single right option). ``--by-right`` splits the two
decisions whose right option is of one of few kinds: graph_explore's End? by its right reply (``[Yes]``,
``[No]``) and graph_agent's actions by the right action's kind (``Finish``, ``NeighborCheck``), and adds,
per model, how often it chose each kind where another was right.
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from kg_agents.eval.datasets import load_metaqa
from kg_agents.kg import open_kg
from kg_agents.llm import resolve_chat_model
from kg_agents.llm.ranking import rank_options
from kg_agents.specialist.teacher import Example
from kg_agents.specialist.train import DEFAULT_METHODS, collect_examples

ROLES = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


def to_messages(chat: list[dict[str, str]]) -> list[BaseMessage]:
    return [ROLES[m["role"]](content=m["content"]) for m in chat]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-hop", type=int, default=10, help="validation questions per hop (1, 2, 3)")
    ap.add_argument("--methods", default=DEFAULT_METHODS)
    ap.add_argument("--models", nargs="+", default=["local", "local:specialist"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--by-right", action="store_true", help="split End? and graph_agent actions by right kind"
    )
    args = ap.parse_args()

    kg = open_kg("metaqa")
    qs = [q for h in (1, 2, 3) for q in load_metaqa(h, "validation", seed=args.seed, limit=args.per_hop)]
    t0 = time.perf_counter()
    examples, _ = collect_examples(kg, qs, args.methods.split(","))
    seconds = time.perf_counter() - t0
    print(f"{len(examples)} decisions from {len(qs)} validation questions in {seconds:.0f} s")
    right: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    total: dict[tuple[str, str], int] = defaultdict(int)
    options: dict[tuple[str, str], int] = defaultdict(int)
    for ex in examples:
        total[ex.method, ex.role] += 1
        options[ex.method, ex.role] += len(ex.replies)
    # with --by-right, each End? decision and graph_agent action also counts in a row of its right kind
    right_kinds = [kind(ex, ex.right[0]) if args.by_right else None for ex in examples]
    for ex, rk in zip(examples, right_kinds, strict=True):
        if rk:
            total[ex.method, f"{ex.role}, right: {rk}"] += 1
            options[ex.method, f"{ex.role}, right: {rk}"] += len(ex.replies)
    kinds: dict[tuple[str, str], int] = defaultdict(int)  # (model, "right kind -> chosen kind")
    for spec in args.models:
        llm = resolve_chat_model(spec)
        t0 = time.perf_counter()
        for ex, rk in zip(examples, right_kinds, strict=True):
            ranking = rank_options(llm, to_messages(ex.chat), ex.replies, complete=ex.complete)
            top = ranking.order()[0]
            if top in ex.right:
                right[ex.method, ex.role][spec] += 1
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
    n = sum(total[k] for k in whole)
    accs = " | ".join(f"{sum(right[k][m] for k in whole) / n:.3f}" for m in args.models)
    print(f"| all | all | {n} | | {accs} |")
    if args.by_right:
        print("\nright kind -> chosen kind, per model (End? and graph_agent actions):")
        for (spec, pair), count in sorted(kinds.items()):
            print(f"- {spec}: {pair}: {count}")


def kind(ex: Example, index: int) -> str | None:
    """The kind of option ``index`` of an End? decision or a graph_agent action (None for other roles)."""
    reply = ex.replies[index]
    if ex.method == "graph_explore" and ex.role == "end":
        return reply
    if ex.method == "graph_agent" and ex.role == "action":
        return "Finish" if "Finish[" in reply else "NeighborCheck" if "NeighborCheck[" in reply else "other"
    return None


if __name__ == "__main__":
    main()
