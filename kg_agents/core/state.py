"""The input/output contract every reasoning graph shares.

Input: ``{"question": str, "topic_entities": list[str] | None}``.
Output: ``answers``, ``paths`` (each verified against the KG), ``evidence``, ``usage``, ``trace``,
``errors`` (:class:`ErrorRecord` each). ``usage`` is measured per node (:mod:`kg_agents.core.metering`)
and added up by its reducer, also across parallel branches.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, NotRequired, TypedDict

from kg_agents.kg.base import Path

__all__ = [
    "USAGE_KEYS",
    "ErrorRecord",
    "ReasoningInput",
    "ReasoningOutput",
    "ReasoningState",
    "Usage",
    "add_usage",
]

USAGE_KEYS = ("llm_calls", "input_tokens", "output_tokens", "kg_calls", "seconds")


class Usage(TypedDict, total=False):
    """Resources one question used."""

    llm_calls: int
    input_tokens: int
    output_tokens: int
    kg_calls: int
    seconds: float


def add_usage(a: Usage | None, b: Usage | None) -> Usage:
    """Reducer: add two usage records key by key."""
    out: dict[str, Any] = {k: 0 for k in USAGE_KEYS}
    out["seconds"] = 0.0
    for u in (a, b):
        for k, v in (u or {}).items():
            out[k] = out.get(k, 0) + (v or 0)
    return out  # type: ignore[return-value]


class ErrorRecord(TypedDict):
    """One problem a graph met with a question, recorded instead of raised.

    Attributes:
        node: the node that met it.
        type: the exception class (``EndpointError``, ``ModelError``...) or a name for a problem that
            is not an exception (``NoAnswer``, ``NoEntity``, ``EmptyQuestion``...).
        message: what happened, for a person.
        endpoint: the SPARQL endpoint that failed, for an ``EndpointError``; else None.
        halted: True when the graph ended the question because of it.
    """

    node: str
    type: str
    message: str
    endpoint: str | None
    halted: bool


class ReasoningInput(TypedDict):
    """What every reasoning graph takes."""

    question: str
    topic_entities: NotRequired[list[str] | None]


class ReasoningOutput(TypedDict, total=False):
    """What every reasoning graph returns."""

    question: str
    answers: list[str]
    paths: list[Path]
    evidence: list[str]
    usage: Usage
    trace: list[dict[str, Any]]
    errors: list[ErrorRecord]


class ReasoningState(TypedDict, total=False):
    """Base state; methods extend it with their own fields.

    ``paths`` is set once, by the node that verifies them (:func:`verified_paths_update`);
    ``evidence``, ``usage``, ``trace`` and ``errors`` accumulate over nodes.
    """

    question: str
    topic_entities: list[str] | None
    answers: list[str]
    paths: list[Path]
    evidence: Annotated[list[str], operator.add]
    usage: Annotated[Usage, add_usage]
    trace: Annotated[list[dict[str, Any]], operator.add]
    errors: Annotated[list[ErrorRecord], operator.add]
