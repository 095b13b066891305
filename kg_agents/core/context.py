"""Per-run options: one context dataclass per method, merged over the factory's values by one helper.

A method's context dataclass has every field default to ``None``, meaning "not set for this run".
The factory builds a full context from its own options (:func:`dataclasses.replace` of the method's
defaults); at run time :func:`merge_context` lays the fields the run did set over it. So
``graph.invoke(inp, context={"max_answers": 3})`` changes the number of answers and nothing else
(a graph built with ``num_beams=5`` still decodes 5 beams).

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Ctx:
    ...     num_beams: int | None = None
    ...     max_answers: int | None = None
    >>> merge_context(Ctx(num_beams=5, max_answers=10), {"max_answers": 3})
    Ctx(num_beams=5, max_answers=3)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar

from kg_agents.errors import ConfigError

__all__ = ["merge_context", "run_context"]

C = TypeVar("C")


def merge_context(defaults: C, given: C | Mapping[str, Any] | None) -> C:
    """``defaults`` with every field that ``given`` sets (not None) laid over it.

    Args:
        defaults: the factory's full context (a dataclass instance).
        given: the run's context: an instance of the same dataclass, a mapping of its fields, or None.

    Raises:
        ConfigError: ``given`` names a field the context does not have, or is of another type.
    """
    if given is None:
        return defaults
    names = {f.name for f in dataclasses.fields(defaults)}  # type: ignore[arg-type]
    if isinstance(given, Mapping):
        values = dict(given)
    elif type(given) is type(defaults):
        values = {n: getattr(given, n) for n in names}
    else:
        raise ConfigError(
            f"context must be a {type(defaults).__name__} or a mapping, got {type(given).__name__}"
        )
    unknown = sorted(set(values) - names)
    if unknown:
        raise ConfigError(
            f"unknown context field(s) {unknown} for {type(defaults).__name__}; "
            f"valid: {', '.join(sorted(names))}"
        )
    return dataclasses.replace(defaults, **{k: v for k, v in values.items() if v is not None})  # type: ignore[type-var]


def run_context(runtime: Any, defaults: C) -> C:
    """The context of this run (``runtime.context`` merged over ``defaults``); for use inside a node."""
    return merge_context(defaults, getattr(runtime, "context", None))
