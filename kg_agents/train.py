"""Trainers behind ``kg-agents train <what>``: a registry, like the methods' one.

A trainer is a function with keyword-only options (set with ``--set KEY=VALUE``, typed from its
annotations) that trains something and returns a short JSON-able dict describing what it wrote
(checkpoint paths, figures). Methods plug theirs in with one line, imported only when run::

    register_trainer("dualr", "kg_agents.gnn.train:train_explorer", "DualR GNN explorer on MetaQA train")

Example:
    >>> [t.name for t in list_trainers()]  # doctest: +SKIP
    ['dualr', 'gcr', 'hops']
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.options import keyword_options, parse_options


@dataclass(frozen=True)
class TrainerSpec:
    """A registered trainer: a name, its ``"module:function"`` and one line of description."""

    name: str
    function_path: str
    description: str

    def load(self) -> Callable[..., Any]:
        """Import and return the trainer function."""
        module, _, attr = self.function_path.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)  # type: ignore[no-any-return]
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"trainer {self.name!r}: cannot import {self.function_path}: {exc}") from exc

    def options(self) -> dict[str, Any]:
        """The trainer's keyword-only options and their types."""
        return keyword_options(self.load())


_TRAINERS: dict[str, TrainerSpec] = {}


def register_trainer(name: str, function_path: str, description: str = "") -> None:
    """Register (or replace) the trainer ``name`` as ``"module:function"``."""
    if ":" not in function_path:
        raise ConfigError(f"trainer path must be 'module:function', got {function_path!r}")
    _TRAINERS[name] = TrainerSpec(name, function_path, description)


def unregister_trainer(name: str) -> None:
    """Remove a trainer (no error when absent)."""
    _TRAINERS.pop(name, None)


def list_trainers() -> list[TrainerSpec]:
    """Registered trainers, sorted by name."""
    return [_TRAINERS[k] for k in sorted(_TRAINERS)]


def get_trainer(name: str) -> TrainerSpec:
    """The trainer ``name``; ``ConfigError`` listing the registered ones otherwise."""
    try:
        return _TRAINERS[name]
    except KeyError:
        have = ", ".join(sorted(_TRAINERS)) or "(none registered)"
        raise ConfigError(f"unknown trainer {name!r}; valid trainers: {have}") from None


def run_trainer(name: str, settings: list[str] | None = None) -> Any:
    """Run trainer ``name`` with ``KEY=VALUE`` settings (typed and validated); return its result."""
    spec = get_trainer(name)
    options = parse_options(settings or [], spec.options(), what=f"trainer {name!r}")
    return spec.load()(**options)


# Built-in trainers. Each method adds its line here when it lands.
register_trainer(
    "dualr",
    "kg_agents.gnn.train:train_explorer",
    "DualR GNN explorer (MetaQA dev-train split, early stop on dev-validation Hits@1)",
)
register_trainer(
    "gcr",
    "kg_agents.graphs.gcr_train:train_gcr",
    "GCR path generator: LoRA on the local model, MetaQA dev-train shortest paths",
)
register_trainer(
    "hops",
    "kg_agents.hops:train_hop_classifier",
    "KnowledgeNavigator hop-count head on MetaQA dev-train (frozen MiniLM + softmax head)",
)
