"""Graph factories for ``langgraph dev`` (see ``langgraph.json`` at the repository root).

One factory per registered method (read from the registry, so a new method needs no code here). The
LangGraph server calls it for each run with the run's ``RunnableConfig``; it builds the method over the
bundled MetaQA KG (``open_kg("metaqa")``) and the embedded local chat model, in a worker thread (loading a
KG or a checkpoint is blocking I/O, which the server does not allow on its event loop). The run's
``config["configurable"]`` may set:

- ``kg``: an ``open_kg`` spec (a bundled name, a triples file or a SPARQL URL);
- ``model``: a ``resolve_chat_model`` spec (``local``, ``openai:<model>``) or a chat model;
- ``max_tokens``: most new tokens per model call (for a model given by spec);
- ``options``: the method's factory options by name, as ``kg-agents ask --set`` takes them
  (``{"answer_with": "gnn"}`` for ``dualr``); a string value is typed from the option's annotation.

Per-run options of the method (the fields of its ``context_schema``, such as ``graph_rag``'s
``max_triples``) travel in the run's ``context``. The server brings its own checkpointer, so none is passed
here. ``langgraph.json`` names one ``kg_agents.langgraph_entry:<method>`` line per method (module syntax,
so it works wherever kg-agents is installed); a test checks that it lists every registered method.

Example:
    >>> from kg_agents import langgraph_entry
    >>> callable(langgraph_entry.graph_rag), "dualr" in langgraph_entry.METHODS
    (True, True)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from langchain_core.runnables import RunnableConfig

from kg_agents.core.registry import get_method, list_methods
from kg_agents.errors import ConfigError
from kg_agents.kg import open_kg
from kg_agents.llm import resolve_chat_model
from kg_agents.options import coerce, keyword_options, needs_model

#: The methods served: every registered one.
METHODS = tuple(m.name for m in list_methods())

#: Factory keywords that ``configurable.options`` cannot set (the model and the server's checkpointer).
RESERVED_OPTIONS = ("llm", "checkpointer")

__all__ = ["METHODS", "RESERVED_OPTIONS", "build", "factory_options", *METHODS]


def factory_options(method: str, options: Mapping[str, Any] | None) -> dict[str, Any]:
    """``options`` checked against ``method``'s factory keywords; string values typed from annotations.

    Raises:
        ConfigError: ``options`` is not a mapping, or names an option the factory does not take (the
            message lists the valid ones), or a string value does not fit the option's type.
    """
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ConfigError(f"configurable 'options' must be a mapping, got {type(options).__name__}")
    valid = {k: v for k, v in keyword_options(get_method(method).load()).items() if k not in RESERVED_OPTIONS}
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key not in valid:
            raise ConfigError(
                f"unknown option {key!r} for method {method!r}; valid options: {', '.join(sorted(valid))}"
            )
        out[key] = coerce(key, value, valid[key]) if isinstance(value, str) else value
    return out


def build(method: str, config: RunnableConfig | None = None) -> Any:
    """Build ``method`` over the configured KG (default ``metaqa``) and chat model (default ``local``).

    Raises:
        ConfigError: an unknown method, KG spec, model spec or option.
    """
    factory = get_method(method).load()
    conf = dict((config or {}).get("configurable") or {})
    options = factory_options(method, conf.get("options"))
    kg = open_kg(str(conf.get("kg", "metaqa")))
    if needs_model(factory, options):
        model_options: dict[str, Any] = (
            {"max_tokens": int(conf["max_tokens"])} if conf.get("max_tokens") else {}
        )
        options["llm"] = resolve_chat_model(conf.get("model", "local"), **model_options)
    return factory(kg, **options)


def _entry(method: str) -> Callable[[RunnableConfig], Coroutine[Any, Any, Any]]:
    async def entry(config: RunnableConfig) -> Any:
        return await asyncio.to_thread(build, method, config)

    entry.__name__ = entry.__qualname__ = method
    entry.__doc__ = f"``{method}`` for ``langgraph dev`` (built in a worker thread)."
    return entry


globals().update({name: _entry(name) for name in METHODS})


def __getattr__(name: str) -> Any:  # for type checkers; the entries are set above
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
