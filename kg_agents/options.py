"""Typed ``KEY=VALUE`` options from the command line (``--set``), checked against a function's signature.

Values are coerced to the parameter's annotation: ``int``, ``float``, ``bool`` (true/false, yes/no,
1/0, on/off), ``str``, ``Literal[...]``, ``pathlib.Path``, ``list[...]`` (comma-separated), unions
(``int | None``: ``none`` gives None) and ``Any`` (``none`` gives None, anything else stays a string).

Example:
    >>> def f(kg, *, beam_size: int = 3, strategy: "Literal['cot', 'tot']" = "cot"): ...
    >>> parse_options(["beam_size=5", "strategy=tot"], keyword_options(f))
    {'beam_size': 5, 'strategy': 'tot'}
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin

from kg_agents.errors import ConfigError

__all__ = ["coerce", "keyword_options", "needs_model", "parse_options"]

_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}
_NONE = {"none", "null"}


def keyword_options(fn: Callable[..., Any]) -> dict[str, Any]:
    """The keyword-only parameters of ``fn`` with their resolved annotations (``Any`` if none)."""
    try:
        hints = typing.get_type_hints(fn)
    except (NameError, TypeError):
        hints = {}
    sig = inspect.signature(fn)
    kw = inspect.Parameter.KEYWORD_ONLY
    return {n: hints.get(n, Any) for n, p in sig.parameters.items() if p.kind is kw}


def needs_model(factory: Callable[..., Any], options: Mapping[str, Any]) -> bool:
    """Whether a graph built by ``factory`` with ``options`` calls a chat model.

    False when the factory takes no ``llm``, or when an option (given, or its default) has a value that
    the factory's module lists in ``NO_LLM_OPTIONS`` (``{"answer_with": ("gnn",)}`` for ``dualr``): then
    no model need be resolved, so none is loaded.
    """
    params = inspect.signature(factory).parameters
    if "llm" not in params:
        return False
    no_llm: Mapping[str, Sequence[Any]] = getattr(inspect.getmodule(factory), "NO_LLM_OPTIONS", {})
    for name, values in no_llm.items():
        default = params[name].default if name in params else None
        if options.get(name, default) in values:
            return False
    return True


def coerce(name: str, raw: str, annotation: Any) -> Any:
    """``raw`` converted to ``annotation``; ``ConfigError`` naming the option when it does not fit."""
    origin = get_origin(annotation)
    if annotation is Any or annotation is inspect.Parameter.empty:
        return None if raw.strip().lower() in _NONE else raw
    if origin in (Union, types.UnionType):
        args = get_args(annotation)
        if raw.strip().lower() in _NONE and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(name, raw, arg)
            except ConfigError as exc:
                errors.append(str(exc))
        raise ConfigError(f"option {name}: {raw!r} fits none of {_type_name(annotation)}")
    if origin is Literal:
        choices = get_args(annotation)
        for c in choices:
            if str(c) == raw or (isinstance(c, str) and c.lower() == raw.lower()):
                return c
        raise ConfigError(f"option {name}: {raw!r} is not one of {', '.join(map(str, choices))}")
    if origin in (list, tuple, set, frozenset, Iterable) or annotation in (list, tuple):
        inner = (get_args(annotation) or (str,))[0]
        items = [coerce(name, s.strip(), inner) for s in raw.split(",") if s.strip()]
        return tuple(items) if origin is tuple else items
    if annotation is bool:
        v = raw.strip().lower()
        if v in _TRUE:
            return True
        if v in _FALSE:
            return False
        raise ConfigError(f"option {name}: {raw!r} is not a boolean (true/false)")
    if annotation in (int, float):
        try:
            return annotation(raw)
        except ValueError:
            article = "an" if annotation is int else "a"
            raise ConfigError(f"option {name}: {raw!r} is not {article} {annotation.__name__}") from None
    if annotation is str:
        return raw
    if annotation is type(None):
        if raw.strip().lower() in _NONE:
            return None
        raise ConfigError(f"option {name}: expected none, got {raw!r}")
    if annotation is Path:
        return Path(raw)
    raise ConfigError(f"option {name} (type {_type_name(annotation)}) cannot be set from the command line")


def _type_name(annotation: Any) -> str:
    return getattr(annotation, "__name__", None) or str(annotation).replace("typing.", "")


def parse_options(pairs: Iterable[str], valid: dict[str, Any], *, what: str = "") -> dict[str, Any]:
    """Parse ``KEY=VALUE`` strings against ``valid`` (name -> annotation).

    Raises:
        ConfigError: a pair without ``=``, an unknown key (the message lists the valid ones), or a value
            that does not fit the option's type.
    """
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"expected KEY=VALUE, got {pair!r}")
        if key not in valid:
            where = f" for {what}" if what else ""
            names = ", ".join(sorted(valid)) or "(none)"
            raise ConfigError(f"unknown option {key!r}{where}; valid options: {names}")
        out[key] = coerce(key, raw, valid[key])
    return out
