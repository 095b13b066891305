"""The registry: reasoning methods (``name -> graph factory``) and trainers (``name -> training function``).

Both are referenced as ``"module:function"`` strings and imported on first use, so listing them never
imports torch or a model. A new method is one folder under ``kg_agents/methods/`` plus one
:func:`register_method` line at the bottom of this file; the CLI, ``kg-agents train``,
``langgraph_entry`` and the evaluation runner read the registry.

Every factory has the signature ``create_<name>_graph(kg, *, llm=None, prompts=None,
checkpointer=None, **options) -> CompiledStateGraph``. A trainer has keyword-only options (set with
``--set KEY=VALUE``, typed from its annotations) and returns a short JSON-able dict of what it wrote.

Example:
    >>> [m.name for m in list_methods()][:3]
    ['dualr', 'gcr', 'graph_agent']
    >>> [t.name for t in list_trainers()]
    ['dualr', 'gcr', 'hops', 'specialist']
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.options import keyword_options, parse_options

__all__ = [
    "Registered",
    "create_graph",
    "get_method",
    "get_trainer",
    "list_methods",
    "list_trainers",
    "register_method",
    "register_trainer",
    "run_trainer",
    "unregister_trainer",
]


@dataclass(frozen=True)
class Registered:
    """A registered method or trainer: its name, ``"module:function"`` and one line of description."""

    kind: str
    name: str
    function_path: str
    description: str

    @property
    def factory_path(self) -> str:
        """The ``"module:function"`` of a method's factory (alias of ``function_path``)."""
        return self.function_path

    def load(self) -> Callable[..., Any]:
        """Import and return the function."""
        module, _, attr = self.function_path.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]
        except (ImportError, AttributeError) as exc:
            raise ConfigError(
                f"{self.kind} {self.name!r}: cannot import {self.function_path}: {exc}"
            ) from exc

    def options(self) -> dict[str, inspect.Parameter]:
        """The function's keyword-only parameters (what ``--set KEY=VALUE`` accepts), with defaults."""
        kw = inspect.Parameter.KEYWORD_ONLY
        return {n: p for n, p in inspect.signature(self.load()).parameters.items() if p.kind is kw}


_METHODS: dict[str, Registered] = {}
_TRAINERS: dict[str, Registered] = {}


def _register(table: dict[str, Registered], kind: str, name: str, path: str, description: str) -> None:
    if ":" not in path:
        raise ConfigError(f"{kind} path must be 'module:function', got {path!r}")
    table[name] = Registered(kind, name, path, description)


def _get(table: dict[str, Registered], kind: str, name: str) -> Registered:
    try:
        return table[name]
    except KeyError:
        have = ", ".join(sorted(table)) or "(none registered)"
        raise ConfigError(f"unknown {kind} {name!r}; valid {kind}s: {have}") from None


def register_method(name: str, factory_path: str, description: str) -> None:
    """Register (or replace) a reasoning method under ``name`` as ``"module:function"``."""
    _register(_METHODS, "method", name, factory_path, description)


def list_methods() -> list[Registered]:
    """Registered methods, sorted by name."""
    return [_METHODS[k] for k in sorted(_METHODS)]


def get_method(name: str) -> Registered:
    """The method registered as ``name``; ``ConfigError`` listing the valid names otherwise."""
    return _get(_METHODS, "method", name)


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


def register_trainer(name: str, function_path: str, description: str = "") -> None:
    """Register (or replace) the trainer ``name`` as ``"module:function"``."""
    _register(_TRAINERS, "trainer", name, function_path, description)


def unregister_trainer(name: str) -> None:
    """Remove a trainer (no error when absent)."""
    _TRAINERS.pop(name, None)


def list_trainers() -> list[Registered]:
    """Registered trainers, sorted by name."""
    return [_TRAINERS[k] for k in sorted(_TRAINERS)]


def get_trainer(name: str) -> Registered:
    """The trainer ``name``; ``ConfigError`` listing the registered ones otherwise."""
    return _get(_TRAINERS, "trainer", name)


def run_trainer(name: str, settings: list[str] | None = None) -> Any:
    """Run trainer ``name`` with ``KEY=VALUE`` settings (typed and validated); return its result."""
    spec = get_trainer(name)
    options = parse_options(settings or [], keyword_options(spec.load()), what=f"trainer {name!r}")
    return spec.load()(**options)


# Built-in methods: one line each.
register_method(
    "llm_only",
    "kg_agents.methods.baselines:create_llm_only_graph",
    "zero-shot LLM, no knowledge graph (baseline)",
)
register_method(
    "graph_rag",
    "kg_agents.methods.baselines:create_graph_rag_graph",
    "1-hop neighbourhood of the topic entities as context (baseline)",
)
register_method(
    "text_rag",
    "kg_agents.methods.baselines:create_text_rag_graph",
    "FAISS retrieval over verbalised triples as context (baseline)",
)
register_method(
    "dualr",
    "kg_agents.methods.dualr:create_dualr_graph",
    "DualR: question-conditioned GNN explorer, reasoning chains, one multiple-choice LLM call",
)
register_method(
    "gcr",
    "kg_agents.methods.gcr:create_gcr_graph",
    "graph-constrained reasoning: KG-Trie-constrained path decoding + inductive reasoning (GCR)",
)
register_method(
    "graph_agent",
    "kg_agents.methods.graph_cot:create_graph_agent_graph",
    "Graph-CoT/ToT/GoT agent: ReAct over RetrieveNode/NodeFeature/NeighborCheck/NodeDegree",
)
register_method(
    "graph_explore",
    "kg_agents.methods.graph_cot:create_graph_explore_graph",
    "Graph-CoT/ToT/GoT with automatic graph exploration (LLM-pruned BFS)",
)
register_method(
    "knowledge_navigator",
    "kg_agents.methods.knowledge_navigator:create_knowledge_navigator_graph",
    "KnowledgeNavigator: predicted hops, similar questions, relation vote, templated knowledge",
)

# Built-in trainers: one line each.
register_trainer(
    "dualr",
    "kg_agents.methods.dualr.train:train_explorer",
    "DualR GNN explorer (MetaQA dev-train split, early stop on dev-validation Hits@1)",
)
register_trainer(
    "gcr",
    "kg_agents.methods.gcr.train:train_gcr",
    "GCR path generator: LoRA on the local model, MetaQA dev-train shortest paths",
)
register_trainer(
    "hops",
    "kg_agents.methods.knowledge_navigator.train:train_hop_classifier",
    "KnowledgeNavigator hop-count head on MetaQA dev-train (frozen MiniLM + softmax head)",
)
register_trainer(
    "specialist",
    "kg_agents.specialist.train:train_specialist",
    "one LoRA adapter on the local model for every ranked decision (relations, entities, End?, answers)",
)
