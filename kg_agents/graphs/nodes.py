"""Nodes and helpers that several reasoning graphs share.

- :func:`make_link_entities_node`: the ``link_entities`` node (topic entities given or linked).
- :func:`parse_answers`: answers out of free LLM text.
- :func:`verified_paths_update`: the one place where a graph's paths are checked against the KG.
- :func:`error_update`: an error recorded in ``errors`` and ``trace`` instead of raised.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from kg_agents.errors import KGAgentsError
from kg_agents.graphs.state import ReasoningState, metered
from kg_agents.kg.base import KnowledgeGraph, Path, verify_paths


def error_update(node: str, error: BaseException | str) -> dict[str, Any]:
    """A partial update recording ``error`` from ``node`` (for graphs that end instead of raising)."""
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    return {"errors": [f"{node}: {text}"], "trace": [{"node": node, "error": text}]}


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
                from kg_agents.kg.index import EntityIndex

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
            return {"topic_entities": [], "answers": [], "paths": [], **error_update(name, "empty question")}
        given = state.get("topic_entities")
        try:
            if given:
                ids, unknown = resolve_entities(kg, get_index() if _needs_index(kg, given) else None, given)
                step = {"node": name, "given": list(given), "linked": ids, "unknown": unknown}
                update: dict[str, Any] = {"topic_entities": ids, "trace": [step]}
                if unknown:
                    update["errors"] = [f"{name}: unknown topic entities {unknown}"]
                if not ids:
                    update.update(answers=[], paths=[])
                return update
            ids = list(get_index().topic_entities(question))
        except KGAgentsError as exc:  # EntityNotFound, EndpointError, ...
            return {"topic_entities": [], "answers": [], "paths": [], **error_update(name, exc)}
        update = {"topic_entities": ids, "trace": [{"node": name, "linked": ids}]}
        if not ids:
            update.update(answers=[], paths=[], errors=[f"{name}: no entity of the KG found in the question"])
        return update

    return link_entities


def _needs_index(kg: KnowledgeGraph, names: Iterable[str]) -> bool:
    return any(not kg.has_entity(n) for n in names if isinstance(n, str) and n.strip())


# --------------------------------------------------------------------------- answers
_PREFIX = re.compile(
    r"^\s*(?:#+\s*)?(?:final\s+)?(?:answers?|the answers? (?:is|are)|ans)\s*[:：\-]\s*", re.IGNORECASE
)
_BULLET = re.compile(r"^\s*(?:[-*•]+|\(?\d{1,2}[.)]|[A-Z][.)](?=\s))\s*")
_QUOTES = "\"'`“”‘’"


def parse_answers(text: str, *, max_answers: int = 50) -> list[str]:
    """Answers out of free LLM text.

    One documented procedure: take the text after the last ``Answer:``-style marker if there is one
    (else the whole text); split it into lines and on ``|`` and ``;``; strip bullets, numbering,
    quotes, trailing punctuation and a leading "the answer is"; drop empties and duplicates
    (case-insensitively), keeping order. Commas are NOT split on (names contain commas).

    Example:
        >>> parse_answers("Reasoning...\\nAnswer: Ron Howard | Penny Marshall")
        ['Ron Howard', 'Penny Marshall']
    """
    if not isinstance(text, str) or not text.strip():
        return []
    marker = list(re.finditer(r"(?im)^\s*(?:#+\s*)?(?:final\s+)?answers?\s*[:：]", text))
    if marker:
        text = text[marker[-1].start() :]
    out: list[str] = []
    seen: set[str] = set()
    for line in re.split(r"[\n|;]", text):
        s = _PREFIX.sub("", line)
        s = _BULLET.sub("", s).strip().strip(_QUOTES).strip()
        s = re.sub(r"[\s.。!]+$", "", s).strip().strip(_QUOTES).strip()
        if not s or s.lower() in seen or len(s) > 200:
            continue
        seen.add(s.lower())
        out.append(s)
        if len(out) >= max_answers:
            break
    return out


def default_llm(llm: Any) -> Any:
    """The chat model a graph uses: ``llm`` itself, a ``resolve_chat_model`` spec resolved
    (``"local"``, ``"openai:<model>"``), or the embedded local model when None."""
    from kg_agents.llm import resolve_chat_model

    if llm is None:
        return resolve_chat_model("local")
    if isinstance(llm, str):
        return resolve_chat_model(llm)
    return llm
