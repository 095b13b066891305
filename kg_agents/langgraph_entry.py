"""Graph factories for ``langgraph dev`` (see ``langgraph.json`` at the repository root).

One factory per method, each taking the ``RunnableConfig`` that the LangGraph server passes and
building the method over the bundled MetaQA KG (``open_kg("metaqa")``) and the embedded local chat model.
``config["configurable"]`` may override them: ``kg`` (an ``open_kg`` spec) and ``model`` (a
``resolve_chat_model`` spec or a chat model). The server brings its own checkpointer, so none is passed here.

A method that is not registered (its branch not merged yet) raises ``ConfigError`` listing the valid ones.

Example:
    >>> from kg_agents import langgraph_entry
    >>> graph = langgraph_entry.graph_rag({"configurable": {}})     # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig

from kg_agents.core.registry import get_method

#: The methods ``langgraph.json`` exposes (DESIGN.md's names).
METHODS = (
    "llm_only",
    "graph_rag",
    "text_rag",
    "gcr",
    "dualr",
    "graph_agent",
    "graph_explore",
    "knowledge_navigator",
)


def build(method: str, config: RunnableConfig | None = None) -> Any:
    """Build ``method`` over the configured KG (default ``metaqa``) and chat model (default ``local``)."""
    from kg_agents.kg import open_kg
    from kg_agents.options import keyword_options

    spec = get_method(method)
    conf = dict((config or {}).get("configurable") or {})
    kg = open_kg(str(conf.get("kg", "metaqa")))
    options: dict[str, Any] = {}
    if "llm" in keyword_options(spec.load()):
        from kg_agents.llm import resolve_chat_model

        options["llm"] = resolve_chat_model(conf.get("model", "local"))
    return spec.load()(kg, **options)


def llm_only(config: RunnableConfig) -> Any:
    """``llm_only`` for ``langgraph dev``."""
    return build("llm_only", config)


def graph_rag(config: RunnableConfig) -> Any:
    """``graph_rag`` for ``langgraph dev``."""
    return build("graph_rag", config)


def text_rag(config: RunnableConfig) -> Any:
    """``text_rag`` for ``langgraph dev``."""
    return build("text_rag", config)


def gcr(config: RunnableConfig) -> Any:
    """``gcr`` for ``langgraph dev``."""
    return build("gcr", config)


def dualr(config: RunnableConfig) -> Any:
    """``dualr`` for ``langgraph dev``."""
    return build("dualr", config)


def graph_agent(config: RunnableConfig) -> Any:
    """``graph_agent`` for ``langgraph dev``."""
    return build("graph_agent", config)


def graph_explore(config: RunnableConfig) -> Any:
    """``graph_explore`` for ``langgraph dev``."""
    return build("graph_explore", config)


def knowledge_navigator(config: RunnableConfig) -> Any:
    """``knowledge_navigator`` for ``langgraph dev``."""
    return build("knowledge_navigator", config)
