"""Errors inside a reasoning graph are records, not exceptions: a graph records a failure and ends.

A node that meets a problem returns :func:`error_update` (an :class:`~kg_agents.core.state.ErrorRecord`
in ``errors`` and a step in ``trace``); a node whose KG call fails is wrapped with :func:`guarded`,
which ends the question (``halted``), and its successors are routed with :func:`end_on_error`.
The CLI and the evaluation runner read the records' ``type``, ``endpoint`` and ``halted`` fields.

Example:
    >>> update = error_update("answer", "the model wrote nothing", type="NoAnswer")
    >>> update["errors"][0]["type"], update["errors"][0]["halted"], update["trace"][0]["error"]
    ('NoAnswer', False, 'NoAnswer: the model wrote nothing')
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from kg_agents.core.state import ErrorRecord, ReasoningState
from kg_agents.errors import EndpointError, KGError

__all__ = [
    "RUN_LEVEL_TYPES",
    "end_on_error",
    "error_record",
    "error_text",
    "error_update",
    "guarded",
    "halted",
    "no_answer_error",
    "run_level_errors",
]

_F = TypeVar("_F", bound=Callable[..., Any])

#: Error types that concern every question (a server or endpoint is down), not one.
RUN_LEVEL_TYPES = frozenset({"EndpointError", "ModelError"})


def error_record(
    node: str, error: BaseException | str, *, type: str | None = None, halted: bool = False
) -> ErrorRecord:
    """The record of ``error`` met by ``node``: an exception, or a message with its ``type``
    (default ``"ReasoningError"``)."""
    if isinstance(error, BaseException):
        endpoint = error.endpoint if isinstance(error, EndpointError) else None
        return ErrorRecord(
            node=node,
            type=type or error.__class__.__name__,
            message=str(error),
            endpoint=endpoint,
            halted=halted,
        )
    return ErrorRecord(
        node=node, type=type or "ReasoningError", message=str(error), endpoint=None, halted=halted
    )


def error_text(record: Mapping[str, Any] | str) -> str:
    """One line for a person: ``"node: Type: message"`` (a plain string passes through)."""
    if isinstance(record, str):
        return record
    return f"{record.get('node')}: {record.get('type')}: {record.get('message')}"


def error_update(
    node: str, error: BaseException | str, *, type: str | None = None, halted: bool = False
) -> dict[str, Any]:
    """A partial update recording ``error`` from ``node`` in ``errors`` and ``trace``.

    The trace step carries the same facts (``error``, ``error_type``, ``endpoint``, ``halted``), so a
    trace read alone still shows where a question went wrong.
    """
    rec = error_record(node, error, type=type, halted=halted)
    step: dict[str, Any] = {
        "node": node,
        "error": f"{rec['type']}: {rec['message']}",
        "error_type": rec["type"],
    }
    if rec["endpoint"]:
        step["endpoint"] = rec["endpoint"]
    if halted:
        step["halted"] = True
    return {"errors": [rec], "trace": [step]}


def no_answer_error(node: str, raw: object) -> list[ErrorRecord]:
    """The ``errors`` entry for a model output that held no usable answer (empty, junk).

    Example:
        >>> no_answer_error("answer", "")[0]["message"]
        "no answer in the model's output (0 characters)"
    """
    text = raw if isinstance(raw, str) else str(raw)
    return [error_record(node, f"no answer in the model's output ({len(text)} characters)", type="NoAnswer")]


def halted(state: Mapping[str, Any]) -> bool:
    """True once a node ended the question (an error record with ``halted``)."""
    return any(isinstance(e, Mapping) and e.get("halted") for e in state.get("errors") or [])


def run_level_errors(errors: Iterable[Mapping[str, Any] | str]) -> list[Mapping[str, Any]]:
    """The records among ``errors`` that concern the whole run (:data:`RUN_LEVEL_TYPES`)."""
    return [e for e in errors if isinstance(e, Mapping) and e.get("type") in RUN_LEVEL_TYPES]


def guarded(node: str) -> Callable[[_F], _F]:
    """Decorate a graph node so that a failed KG call ends the question instead of raising.

    Any :class:`~kg_agents.errors.KGError` the node raises (an unreachable, slow or failing SPARQL
    endpoint: :class:`~kg_agents.errors.EndpointError`) becomes ``answers=[]``, ``paths=[]`` and an
    :func:`error_update`; route the node's successors with :func:`end_on_error` so the graph then
    ends. A :class:`~kg_agents.errors.ModelError` (the model server is down) still raises: it concerns
    every question, and the evaluation runner stops on it. Put ``guarded`` under
    :func:`~kg_agents.core.metering.metered`, so the calls made before the failure are still counted.

    Example:
        >>> from kg_agents.errors import KGError
        >>> @guarded("retrieve")
        ... def retrieve(state):
        ...     raise KGError("endpoint down")
        >>> retrieve({})["errors"][0]["message"], retrieve({})["errors"][0]["halted"]
        ('endpoint down', True)
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
    return {"answers": [], "paths": [], **error_update(node, exc, halted=True)}


def end_on_error(next_node: str, *, on_answers: bool = False) -> Callable[[ReasoningState], str]:
    """A router: ``"end"`` once a :func:`guarded` node ended the question (a ``halted`` trace step),
    else ``next_node``. With ``on_answers``, also once any node recorded an error and set ``answers``
    (graphs whose own nodes end a question that way). Use with
    ``add_conditional_edges(node, end_on_error(nxt), {nxt: nxt, "end": END})``.
    """

    def route(state: ReasoningState) -> str:
        if halted(state):
            return "end"
        if on_answers and state.get("errors") and "answers" in state:
            return "end"
        return next_node

    return route
