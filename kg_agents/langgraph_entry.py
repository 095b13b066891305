"""Graph factories for ``langgraph dev`` (see ``langgraph.json`` at the repository root).

One factory per registered method (read from the registry, so a new method needs no code here), each
taking the ``RunnableConfig`` that the LangGraph server passes and building the method over the bundled
MetaQA KG (``open_kg("metaqa")``) and the embedded local chat model. ``config["configurable"]`` may
override them: ``kg`` (an ``open_kg`` spec) and ``model`` (a ``resolve_chat_model`` spec or a chat
model). The server brings its own checkpointer, so none is passed here. ``langgraph.json`` names one
``langgraph_entry.py:<method>`` line per method; a test checks that it lists every registered method.

Example:
    >>> from kg_agents import langgraph_entry
    >>> callable(langgraph_entry.graph_rag), "dualr" in langgraph_entry.METHODS
    (True, True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig

from kg_agents.core.registry import get_method, list_methods
from kg_agents.kg import open_kg
from kg_agents.llm import resolve_chat_model
from kg_agents.options import keyword_options

#: The methods served: every registered one.
METHODS = tuple(m.name for m in list_methods())

__all__ = ["METHODS", "build", *METHODS]


def build(method: str, config: RunnableConfig | None = None) -> Any:
    """Build ``method`` over the configured KG (default ``metaqa``) and chat model (default ``local``)."""
    spec = get_method(method)
    conf = dict((config or {}).get("configurable") or {})
    kg = open_kg(str(conf.get("kg", "metaqa")))
    options: dict[str, Any] = {}
    if "llm" in keyword_options(spec.load()):
        options["llm"] = resolve_chat_model(conf.get("model", "local"))
    return spec.load()(kg, **options)


def _entry(method: str) -> Callable[[RunnableConfig], Any]:
    def entry(config: RunnableConfig) -> Any:
        return build(method, config)

    entry.__name__ = entry.__qualname__ = method
    entry.__doc__ = f"``{method}`` for ``langgraph dev``."
    return entry


globals().update({name: _entry(name) for name in METHODS})


def __getattr__(name: str) -> Any:  # for type checkers; the entries are set above
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
