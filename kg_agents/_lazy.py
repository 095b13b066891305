"""Lazy attributes of a package: names whose module is imported on first use (PEP 562)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, modules: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: a name in ``modules``, imported from its module on first use.

    Example:
        >>> get = lazy_attributes("pkg", {"sqrt": "math"})
        >>> get("sqrt")(4.0)
        2.0
        >>> get("nope")
        Traceback (most recent call last):
        ...
        AttributeError: module 'pkg' has no attribute 'nope'
    """

    def __getattr__(name: str) -> Any:
        if name in modules:
            return getattr(importlib.import_module(modules[name]), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    return __getattr__
