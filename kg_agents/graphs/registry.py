"""The registry of reasoning graphs: name -> factory.

Factories are referenced as ``"module:function"`` strings and imported on first use, so listing the
methods never imports torch or a model. Every factory has the signature
``create_<method>_graph(kg, *, llm=None, ..., checkpointer=None) -> CompiledStateGraph``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kg_agents.errors import ConfigError


@dataclass(frozen=True)
class MethodSpec:
    """A registered reasoning method."""

    name: str
    factory_path: str
    description: str

    def load(self) -> Callable[..., Any]:
        module, _, attr = self.factory_path.partition(":")
        return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]

    def options(self) -> dict[str, inspect.Parameter]:
        """The factory's keyword-only options (what ``--set KEY=VALUE`` accepts)."""
        sig = inspect.signature(self.load())
        return {n: p for n, p in sig.parameters.items() if p.kind is inspect.Parameter.KEYWORD_ONLY}


_REGISTRY: dict[str, MethodSpec] = {}


def register_method(name: str, factory_path: str, description: str) -> None:
    """Register (or replace) a reasoning method under ``name``."""
    _REGISTRY[name] = MethodSpec(name, factory_path, description)


def list_methods() -> list[MethodSpec]:
    """Registered methods, sorted by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]


def get_method(name: str) -> MethodSpec:
    """The method registered as ``name``; ``ConfigError`` listing the valid names otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ConfigError(f"unknown method {name!r}; valid methods: {', '.join(sorted(_REGISTRY))}") from None


def create_graph(name: str, kg: Any, **options: Any) -> Any:
    """Build the reasoning graph registered as ``name`` over ``kg`` with keyword ``options``."""
    spec = get_method(name)
    valid = spec.options()
    bad = sorted(set(options) - set(valid))
    if bad:
        raise ConfigError(
            f"unknown option(s) {bad} for method {name!r}; valid options: {', '.join(sorted(valid))}"
        )
    return spec.load()(kg, **options)


# Built-in methods. Each module adds its line here when it lands.
register_method(
    "llm_only",
    "kg_agents.graphs.baselines:create_llm_only_graph",
    "zero-shot LLM, no knowledge graph (baseline)",
)
register_method(
    "graph_rag",
    "kg_agents.graphs.baselines:create_graph_rag_graph",
    "1-hop neighbourhood of the topic entities as context (baseline)",
)
register_method(
    "text_rag",
    "kg_agents.graphs.baselines:create_text_rag_graph",
    "FAISS retrieval over verbalised triples as context (baseline)",
)
register_method(
    "dualr",
    "kg_agents.graphs.dualr:create_dualr_graph",
    "DualR: question-conditioned GNN explorer, reasoning chains, one multiple-choice LLM call",
)
register_method(
    "gcr",
    "kg_agents.graphs.gcr:create_gcr_graph",
    "graph-constrained reasoning: KG-Trie-constrained path decoding + inductive reasoning (GCR)",
)
register_method(
    "graph_agent",
    "kg_agents.graphs.graph_cot:create_graph_agent_graph",
    "Graph-CoT/ToT/GoT agent: ReAct over RetrieveNode/NodeFeature/NeighborCheck/NodeDegree",
)
register_method(
    "graph_explore",
    "kg_agents.graphs.graph_cot:create_graph_explore_graph",
    "Graph-CoT/ToT/GoT with automatic graph exploration (LLM-pruned BFS)",
)
register_method(
    "knowledge_navigator",
    "kg_agents.graphs.knowledge_navigator:create_knowledge_navigator_graph",
    "KnowledgeNavigator: predicted hops, similar questions, relation vote, templated knowledge",
)
