"""Nodes and helpers that several reasoning graphs share.

- :func:`make_link_entities_node`: the ``link_entities`` node (topic entities given or linked).
- :func:`parse_answers`: answers out of free LLM text.
- :func:`verified_paths_update`: the one place where a graph's paths are checked against the KG.
- :func:`error_update`: an error recorded in ``errors`` and ``trace`` instead of raised.
- :func:`guarded` / :func:`end_on_error`: a node whose KG call fails ends the question.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from kg_agents.core.state import ReasoningState, metered
from kg_agents.errors import EndpointError, KGAgentsError, KGError
from kg_agents.kg.base import KnowledgeGraph, Path, verify_paths

_F = TypeVar("_F", bound=Callable[..., Any])


def error_update(node: str, error: BaseException | str) -> dict[str, Any]:
    """A partial update recording ``error`` from ``node`` (for graphs that end instead of raising).

    The trace step names the exception class (``error_type``); for an
    :class:`~kg_agents.errors.EndpointError` also the ``endpoint`` that failed, which the evaluation
    runner reads to count the question as an error (to be run again) rather than a wrong answer.
    """
    if isinstance(error, str):
        return {"errors": [f"{node}: {error}"], "trace": [{"node": node, "error": error}]}
    text = f"{type(error).__name__}: {error}"
    step: dict[str, Any] = {"node": node, "error": text, "error_type": type(error).__name__}
    if isinstance(error, EndpointError):
        step["endpoint"] = error.endpoint
    return {"errors": [f"{node}: {text}"], "trace": [step]}


def no_answer_error(node: str, raw: object) -> list[str]:
    """The ``errors`` entry for a model output that held no usable answer (empty, junk).

    Example:
        >>> no_answer_error("answer", "")
        ["answer: no answer in the model's output (0 characters)"]
    """
    text = raw if isinstance(raw, str) else str(raw)
    return [f"{node}: no answer in the model's output ({len(text)} characters)"]


def guarded(node: str) -> Callable[[_F], _F]:
    """Decorate a graph node so that a failed KG call ends the question instead of raising.

    Any :class:`~kg_agents.errors.KGError` the node raises (an unreachable, slow or failing SPARQL
    endpoint: :class:`~kg_agents.errors.EndpointError`) becomes ``answers=[]``, ``paths=[]`` and an
    :func:`error_update`; route the node's successors with :func:`end_on_error` so the graph then
    ends. A :class:`~kg_agents.errors.ModelError` (the model server is down) still raises: it concerns
    every question, and the evaluation runner stops on it. Put ``guarded`` under
    :func:`~kg_agents.core.state.metered`, so the calls made before the failure are still counted.

    Example:
        >>> from kg_agents.errors import KGError
        >>> @guarded("retrieve")
        ... def retrieve(state):
        ...     raise KGError("endpoint down")
        >>> retrieve({})["errors"]
        ['retrieve: KGError: endpoint down']
    """

    def deco(fn: _F) -> _F:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def aguard(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await fn(*args, **kwargs)
                except KGError as exc:
                    return _halt(node, exc)

            return aguard  # type: ignore[return-value]

        @functools.wraps(fn)
        def guard(*args: Any, **kwargs: Any) -> Any:
            try:
                return fn(*args, **kwargs)
            except KGError as exc:
                return _halt(node, exc)

        return guard  # type: ignore[return-value]

    return deco


def _halt(node: str, exc: BaseException) -> dict[str, Any]:
    update = {"answers": [], "paths": [], **error_update(node, exc)}
    update["trace"][0]["halted"] = True
    return update


def end_on_error(next_node: str, *, on_answers: bool = False) -> Callable[[ReasoningState], str]:
    """A router: ``"end"`` once a :func:`guarded` node ended the question (a ``halted`` trace step),
    else ``next_node``. With ``on_answers``, also once any node recorded an error and set ``answers``
    (graphs whose own nodes end a question that way). Use with
    ``add_conditional_edges(node, end_on_error(nxt), {nxt: nxt, "end": END})``.
    """

    def route(state: ReasoningState) -> str:
        if any(isinstance(s, dict) and s.get("halted") for s in state.get("trace") or []):
            return "end"
        if on_answers and state.get("errors") and "answers" in state:
            return "end"
        return next_node

    return route


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
