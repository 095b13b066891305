"""Nodes every reasoning graph shares: linking the topic entities, verifying the paths.

- :func:`make_link_entities_node`: the ``link_entities`` node (topic entities given or linked).
- :func:`verified_paths_update`: the one place where a graph's paths are checked against the KG.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kg_agents.core.metering import metered
from kg_agents.core.records import error_update
from kg_agents.core.state import ReasoningState
from kg_agents.errors import KGAgentsError
from kg_agents.kg.base import KnowledgeGraph, Path, verify_paths
from kg_agents.kg.index import EntityIndex

__all__ = ["make_link_entities_node", "resolve_entities", "verified_paths_update"]


def verified_paths_update(
    kg: KnowledgeGraph, paths: Iterable[Path], node: str = "verify_paths"
) -> dict[str, Any]:
    """Keep the paths whose every hop is a KG triple; report how many were dropped.

    Returns a partial state update ``{"paths": kept, "trace": [{"node", "kept", "dropped"}]}``.
    """
    unique = list(dict.fromkeys(paths))
    kept, dropped = verify_paths(kg, unique)
    return {"paths": kept, "trace": [{"node": node, "paths_kept": len(kept), "paths_dropped": dropped}]}


def resolve_entities(kg: KnowledgeGraph, index: Any, names: Iterable[str]) -> tuple[list[str], list[str]]:
    """Map given topic entities (ids or labels) to ids; return ``(ids, unknown names)``."""
    ids: list[str] = []
    unknown: list[str] = []
    for name in names:
        if not isinstance(name, str) or not name.strip():
            continue
        if kg.has_entity(name):
            ids.append(name)
            continue
        found: list[str] = []
        if index is not None:
            try:
                found = list(index.lookup(name))
            except KGAgentsError:
                found = []
        if found:
            ids.extend(found[:1])
        else:
            unknown.append(name)
    return list(dict.fromkeys(ids)), unknown


def make_link_entities_node(
    kg: KnowledgeGraph, index: Any | Callable[[], Any] | None = None, *, name: str = "link_entities"
) -> Callable[..., dict[str, Any]]:
    """Build the ``link_entities`` node.

    Given ``topic_entities`` (ids or labels) are resolved; otherwise the question's entities are
    linked with the :class:`~kg_agents.kg.index.EntityIndex` (``index`` may be a zero-argument
    factory, so the index is built only when a question needs it). An empty question or no entity
    found is recorded in ``errors``; the node never raises.
    """
    cache: dict[str, Any] = {}

    def get_index() -> Any:
        if "index" not in cache:
            if index is None:
                cache["index"] = EntityIndex(kg)
            elif callable(index) and not hasattr(index, "lookup"):
                cache["index"] = index()
            else:
                cache["index"] = index
        return cache["index"]

    @metered
    def link_entities(state: ReasoningState) -> dict[str, Any]:
        question = (state.get("question") or "").strip()
        if not question:
            empty = error_update(name, "empty question", type="EmptyQuestion")
            return {"topic_entities": [], "answers": [], "paths": [], **empty}
        given = state.get("topic_entities")
        try:
            if given:
                ids, unknown = resolve_entities(kg, get_index() if _needs_index(kg, given) else None, given)
                step = {"node": name, "given": list(given), "linked": ids, "unknown": unknown}
                update: dict[str, Any] = {"topic_entities": ids, "trace": [step]}
                if unknown:
                    update["errors"] = error_update(
                        name, f"unknown topic entities {unknown}", type="NoEntity"
                    )["errors"]
                if not ids:
                    update.update(answers=[], paths=[])
                return update
            ids = list(get_index().topic_entities(question))
        except KGAgentsError as exc:  # EntityNotFound, EndpointError, ...
            return {"topic_entities": [], "answers": [], "paths": [], **error_update(name, exc)}
        update = {"topic_entities": ids, "trace": [{"node": name, "linked": ids}]}
        if not ids:
            none = error_update(name, "no entity of the KG found in the question", type="NoEntity")
            update.update(answers=[], paths=[], errors=none["errors"])
        return update

    return link_entities


def _needs_index(kg: KnowledgeGraph, names: Iterable[str]) -> bool:
    return any(not kg.has_entity(n) for n in names if isinstance(n, str) and n.strip())
