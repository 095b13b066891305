"""Usage metering: what each node of a reasoning graph spends, measured rather than estimated.

Wrap a node with :func:`metered` and it reports, as a partial ``usage`` update, the KG calls made
through a :class:`MeteredKG`, the LLM calls and tokens made through :func:`invoke_llm` (or counted
with :func:`record_usage`), and its wall-clock seconds.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from langchain_core.messages import AIMessage, BaseMessage

from kg_agents.core.state import USAGE_KEYS, add_usage
from kg_agents.kg.base import KnowledgeGraph

__all__ = [
    "MeteredKG",
    "ainvoke_llm",
    "invoke_llm",
    "metered",
    "record_llm_usage",
    "record_usage",
]


class _Meter:
    __slots__ = ("usage",)

    def __init__(self) -> None:
        self.usage: dict[str, Any] = {k: 0 for k in USAGE_KEYS}


_METER: ContextVar[_Meter | None] = ContextVar("kg_agents_meter", default=None)


def _count(key: str, n: int = 1) -> None:
    m = _METER.get()
    if m is not None:
        m.usage[key] = m.usage.get(key, 0) + n


def metered(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a graph node so it adds its KG calls, LLM calls, tokens and seconds to ``usage``.

    Works for sync and async nodes with any LangGraph node signature.
    """

    def _finish(meter: _Meter, t0: float, result: Any) -> Any:
        meter.usage["seconds"] = time.perf_counter() - t0
        if isinstance(result, dict):
            result = dict(result)
            result["usage"] = add_usage(result.get("usage"), meter.usage)  # type: ignore[arg-type]
        return result

    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def awrapper(*args: Any, **kwargs: Any) -> Any:
            meter = _Meter()
            token = _METER.set(meter)
            t0 = time.perf_counter()
            try:
                result = await fn(*args, **kwargs)
            finally:
                _METER.reset(token)
            return _finish(meter, t0, result)

        return awrapper

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        meter = _Meter()
        token = _METER.set(meter)
        t0 = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
        finally:
            _METER.reset(token)
        return _finish(meter, t0, result)

    return wrapper


def record_llm_usage(message: BaseMessage) -> None:
    """Count one LLM call and its tokens (from ``usage_metadata``) on the current node's meter."""
    _count("llm_calls")
    meta = getattr(message, "usage_metadata", None) or {}
    _count("input_tokens", int(meta.get("input_tokens", 0) or 0))
    _count("output_tokens", int(meta.get("output_tokens", 0) or 0))


def record_usage(**counts: int) -> None:
    """Add arbitrary counts (``llm_calls=1, input_tokens=...``) to the current node's meter.

    For model calls that do not go through a chat model (a constrained decoder, a GNN).
    """
    for k, v in counts.items():
        _count(k, int(v))


def invoke_llm(llm: Any, messages: Sequence[BaseMessage] | str, **kwargs: Any) -> AIMessage:
    """Call a chat model and record the call and its tokens on the current node's meter."""
    msg = llm.invoke(messages, **kwargs)
    record_llm_usage(msg)
    return msg  # type: ignore[no-any-return]


async def ainvoke_llm(llm: Any, messages: Sequence[BaseMessage] | str, **kwargs: Any) -> AIMessage:
    """Async :func:`invoke_llm`."""
    msg = await llm.ainvoke(messages, **kwargs)
    record_llm_usage(msg)
    return msg  # type: ignore[no-any-return]


P = ParamSpec("P")
R = TypeVar("R")

#: Optional store methods that MeteredKG counts as KG calls when the store has them.
_COUNTED_OPTIONAL = frozenset(
    {"chain_ends", "chain_witnesses", "has_triples", "labels_many", "relations_many"}
)


def _counted(method: Callable[Concatenate[KnowledgeGraph, P], R]) -> Callable[Concatenate[MeteredKG, P], R]:
    """A ``MeteredKG`` method: counts a KG call, then calls the wrapped store's method of that name."""
    name = method.__name__

    @functools.wraps(method)
    def counted(self: MeteredKG, *args: P.args, **kwargs: P.kwargs) -> R:
        _count("kg_calls")
        return cast("Callable[P, R]", getattr(self.inner, name))(*args, **kwargs)

    return counted


class MeteredKG:
    """A ``KnowledgeGraph`` proxy that counts every call on the current node's meter.

    Graph factories wrap the KG they are given (``MeteredKG(kg)``); nodes use it like the KG.
    """

    def __init__(self, kg: KnowledgeGraph) -> None:
        self.inner: KnowledgeGraph = kg.inner if isinstance(kg, MeteredKG) else kg
        self.name = getattr(self.inner, "name", "kg")

    def __repr__(self) -> str:
        return f"MeteredKG({self.inner!r})"

    def __getattr__(self, item: str) -> Any:
        attr = getattr(self.inner, item)
        if (
            item in _COUNTED_OPTIONAL
        ):  # an optional store method (ChainQueries): present when the store has it

            def counted(*args: Any, **kwargs: Any) -> Any:
                _count("kg_calls")
                return attr(*args, **kwargs)

            return counted
        return attr

    has_entity = _counted(KnowledgeGraph.has_entity)
    label = _counted(KnowledgeGraph.label)
    features = _counted(KnowledgeGraph.features)
    relations = _counted(KnowledgeGraph.relations)
    neighbors = _counted(KnowledgeGraph.neighbors)
    neighbors_many = _counted(KnowledgeGraph.neighbors_many)
    degree = _counted(KnowledgeGraph.degree)
    has_triple = _counted(KnowledgeGraph.has_triple)

    def all_relations(self) -> list[str]:
        return self.inner.all_relations()

    def iter_labels(self) -> Any:
        return self.inner.iter_labels()

    def fingerprint(self) -> str:
        return self.inner.fingerprint()
