"""``kg-agents pack``: show, list, register and unregister KG packs.

Examples::

    kg-agents pack show auto                 # the pack pack="auto" finds for the MetaQA graph
    kg-agents pack show auto --kg kb.tsv     # ... for the graph in kb.tsv
    kg-agents pack show runs/my-pack
    kg-agents pack list
    kg-agents pack register runs/my-pack
    kg-agents pack unregister runs/my-pack
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.packs.fingerprint import fingerprint_status
from kg_agents.packs.manifest import Pack
from kg_agents.packs.registry import (
    bundled_packs,
    find_pack,
    register_pack,
    registered_packs,
    registry_path,
    unregister_pack,
)

__all__ = ["add_pack_commands", "cmd_pack", "describe_pack", "format_figures"]


def format_figures(figures: Mapping[str, Any]) -> str:
    """``key value`` pairs on one line; a nested mapping as ``key a=x b=y``, floats to three places.

    Example:
        >>> format_figures({"n_per_hop": 200, "hits@1": {"1": 0.96, "2": 0.975}})
        'n_per_hop 200; hits@1 1=0.960 2=0.975'
    """

    def one(v: Any) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    parts = []
    for key, value in figures.items():
        if isinstance(value, Mapping):
            parts.append(f"{key} " + " ".join(f"{k}={one(v)}" for k, v in value.items()))
        else:
            parts.append(f"{key} {one(value)}")
    return "; ".join(parts)


def describe_pack(pack: Pack) -> str:
    """What ``kg-agents pack show`` prints: the pack's name and folder, its KG, each component with its
    record's headline and validation figures, each route change, and, for a pack built by ``kg-agents
    specialise``, its stages' seconds and the evaluate stage's figures (your questions with the pack and
    with none where it was given them)."""
    kg = pack.manifest.kg
    lines = [
        f"pack {pack.name}  ({pack.directory})",
        f"KG: fingerprint {pack.fingerprint}, {kg['triples']:,} triples, {kg['entities']:,} entities, "
        f"{kg['relations']:,} relations" + (f"; {kg['source']}" if kg.get("source") else ""),
        f"created {pack.manifest.created or '(not recorded)'}",
        "components:" if pack.manifest.components else "components: (none)",
    ]
    for name, comp in sorted(pack.manifest.components.items()):
        lines.append(f"  {name}: {comp['path']}")
        record = dict(comp.get("record") or {})
        headline = record.pop("headline", None)
        if headline:
            lines.append(f"    trained: {headline}")
        rest = {k: v for k, v in record.items() if not isinstance(v, (Mapping, list))}
        if rest:
            lines.append(f"    record: {format_figures(rest)}")
        if comp.get("validation"):
            lines.append(f"    validation: {format_figures(comp['validation'])}")
    lines.append("routes:" if pack.routes else "routes: (none: the methods run as without a pack)")
    for method, route in sorted(pack.routes.items()):
        changes = ", ".join(f"{k}={v}" for k, v in route.items() if k != "summary")
        lines.append(f"  {method}: {changes}" if changes else f"  {method}:")
        lines.append(f"    {route['summary']}")
    lines += _stage_lines(pack.manifest.stages)
    return "\n".join(lines)


#: How ``pack show`` names the evaluate stage's question sets.
_EVAL_SETS = {
    "synthesised": "synthesised validation questions, with the pack",
    "own": "your questions, with the pack",
    "own_no_pack": "your questions, with no pack",
}


def _stage_lines(stages: Mapping[str, Any]) -> list[str]:
    """The build's stages with their seconds, and the evaluate stage's figures a set a line (exact
    Hits@1 / F1 and the questions a method); a stage record of another shape is printed as it is."""
    if not stages:
        return []

    def took(record: Any) -> str:
        ok = isinstance(record, Mapping) and isinstance(record.get("seconds"), int | float)
        return f"{record['seconds']:.0f} s" if ok else str(record)

    lines = ["stages: " + ", ".join(f"{name} {took(rec)}" for name, rec in stages.items())]
    evaluate = stages.get("evaluate")
    figures = evaluate.get("validation") if isinstance(evaluate, Mapping) else None
    if isinstance(figures, Mapping) and figures:
        lines.append("evaluation (exact Hits@1 / F1, questions):")
        for name, by_method in figures.items():
            if not isinstance(by_method, Mapping):
                continue
            runs = ", ".join(
                f"{m} {_figure(v, 'hits@1')} / {_figure(v, 'f1')} ({v.get('n', '?')})"
                for m, v in sorted(by_method.items())
                if isinstance(v, Mapping)
            )
            lines.append(f"  {_EVAL_SETS.get(name, name)}: {runs}")
    return lines


def _figure(run: Mapping[str, Any], key: str) -> str:
    value = run.get(key)
    return f"{value:.3f}" if isinstance(value, int | float) else "-"


def _show(args: argparse.Namespace) -> int:
    if args.target != "auto":
        print(describe_pack(Pack.load(args.target)))
        return 0
    from kg_agents.kg import open_kg

    kg = open_kg(args.kg)
    pack = find_pack(kg)
    if pack is None:
        summary, why = fingerprint_status(kg)
        said = f"fingerprint {summary.fingerprint}" if summary is not None else why
        raise ConfigError(
            f"no pack is registered for the KG {args.kg} ({said}); "
            "register one with `kg-agents pack register DIR`"
        )
    print(describe_pack(pack))
    return 0


def _list(args: argparse.Namespace) -> int:
    rows = [(p, "bundled") for p in bundled_packs()] + [(p, "registered") for p in registered_packs()]
    for pack, kind in rows:
        print(f"{pack.name}  {pack.fingerprint}  {pack.triples:,} triples  {kind}  {pack.directory}")
    print(f"registry: {registry_path()}")
    return 0


def _register(args: argparse.Namespace) -> int:
    pack = register_pack(args.directory)
    print(
        f"registered pack {pack.name} for the KG of fingerprint {pack.fingerprint} "
        f"({pack.triples:,} triples): pack='auto' finds it there"
    )
    return 0


def _unregister(args: argparse.Namespace) -> int:
    if not unregister_pack(args.directory):
        raise ConfigError(f"{args.directory} is not registered (see `kg-agents pack list`)")
    print(f"unregistered {args.directory}")
    return 0


def cmd_pack(args: argparse.Namespace) -> int:
    """Run ``kg-agents pack <action>``."""
    return int(args.pack_func(args))


def add_pack_commands(parser: argparse.ArgumentParser) -> None:
    """Add the ``pack`` actions (show, list, register, unregister) to ``parser``."""
    actions = parser.add_subparsers(dest="pack_action", required=True)
    show = actions.add_parser("show", help="a pack's KG, components, records, figures and route changes")
    show.add_argument("target", metavar="DIR|auto", help="a pack's folder, or auto: the pack found for --kg")
    show.add_argument(
        "--kg", default="metaqa", help="with auto: bundled name, triples file or SPARQL URL (default: metaqa)"
    )
    show.set_defaults(pack_func=_show)
    actions.add_parser("list", help="the bundled and registered packs").set_defaults(pack_func=_list)
    reg = actions.add_parser("register", help="register a pack for its KG (pack='auto' finds it)")
    reg.add_argument("directory", metavar="DIR")
    reg.set_defaults(pack_func=_register)
    unreg = actions.add_parser("unregister", help="remove a pack from the registry")
    unreg.add_argument("directory", metavar="DIR")
    unreg.set_defaults(pack_func=_unregister)
    parser.set_defaults(func=cmd_pack)
