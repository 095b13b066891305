"""What a command line's method settings build: the chat model, the KG and the method's graph.

:class:`MethodSetup` splits ``--set KEY=VALUE`` pairs into factory options and per-run context, and builds
the graph (``kg-agents ask``, ``eval`` and ``eval --grid`` share it).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.options import needs_model
from kg_agents.packs.manifest import CHAT_ADAPTER_OPTIONS

__all__ = ["CHAT_ADAPTER_OPTIONS", "MethodSetup", "open_kg_spec", "resolve_model"]


def resolve_model(spec: str, **options: Any) -> Any:
    """The chat model for ``--model SPEC`` (``local``, ``openai:<model>``, ...).

    A server (``openai:``) is checked at once, so an unreachable one fails before any question runs.
    ``options`` go to the model (``max_tokens``).
    """
    from kg_agents.llm import resolve_chat_model

    return resolve_chat_model(spec, check=spec.startswith("openai:"), **options)


def open_kg_spec(spec: str) -> Any:
    """The knowledge graph for ``--kg SPEC`` (a bundled name, a triples file or a SPARQL URL)."""
    from kg_agents.kg import open_kg

    return open_kg(spec)


@dataclasses.dataclass
class MethodSetup:
    """A method with its command-line settings split into factory options and per-run context."""

    name: str
    factory_options: dict[str, Any]
    context_pairs: list[str]
    model_spec: str | None
    model_options: dict[str, Any] = dataclasses.field(default_factory=dict)
    _model: Any = None

    @classmethod
    def from_args(
        cls, name: str, settings: Sequence[str], model_spec: str | None, max_tokens: int | None = None
    ) -> MethodSetup:
        from kg_agents.core.registry import get_method
        from kg_agents.options import keyword_options, parse_options

        factory = get_method(name).load()
        valid = keyword_options(factory)
        valid.pop("checkpointer", None)
        mine = [p for p in settings if p.partition("=")[0].strip() in valid]
        rest = [p for p in settings if p.partition("=")[0].strip() not in valid]
        options = parse_options(mine, valid, what=f"method {name!r}")
        model_options = {"max_tokens": max_tokens} if max_tokens is not None else {}
        use_model = model_spec if needs_model(factory, options) else None
        return cls(name, options, rest, use_model, model_options)

    def build(self, kg: Any) -> Any:
        """Build the graph over ``kg`` (the chat model is resolved once, on first need)."""
        from kg_agents.core.registry import get_method

        options = dict(self.factory_options)
        if self.model_spec is not None and "llm" not in options:
            if self._model is None:
                self._model = resolve_model(self.model_spec, **self.model_options)
            options["llm"] = self._model
        return get_method(self.name).load()(kg, **options)

    def model_used(self, kg: Any) -> str | None:
        """The name of the chat model the graph over ``kg`` runs (None: the method uses none): the
        embedded model's name with the specialist adapter where the method's ``adapter`` option gives it
        one (``SmolLM2-135M-Instruct+metaqa`` on MetaQA by default; knowledge_navigator's own is
        ``+metaqa-kn``; gcr's general reasoner's is its ``general_adapter``)."""
        from kg_agents.core.models import default_llm
        from kg_agents.core.registry import get_method

        if self.model_spec is None:
            return None
        model = self._model or resolve_model(self.model_spec, **self.model_options)
        name = CHAT_ADAPTER_OPTIONS.get(self.name, "adapter")
        adapter = get_method(self.name).options().get(name)
        if adapter is not None:
            # the factory's own default ("auto" or "none")
            default = adapter.default
            if default in ("auto", "none"):
                model = default_llm(
                    model,
                    kg=kg,
                    adapter=self.factory_options.get(name, default),
                    method=self.name,
                    pack=self.factory_options.get("pack", "auto"),
                )
        return str(getattr(model, "model_name", type(model).__name__))

    def pack_used(self, kg: Any) -> dict[str, str] | None:
        """What a run records of the KG pack the graph over ``kg`` runs with (its ``pack`` option
        resolved): name, fingerprint and, where it travels, folder (``package:<path>`` for a bundled pack,
        else relative to the working directory when below it; :meth:`~kg_agents.packs.Pack.record`), or
        None."""
        from pathlib import Path

        from kg_agents.core.registry import get_method
        from kg_agents.packs import pack_record, resolve_pack

        option = get_method(self.name).options().get("pack")
        if option is None:
            return None
        return pack_record(resolve_pack(kg, self.factory_options.get("pack", option.default)), Path.cwd())

    def context(self, graph: Any) -> Any:
        """The per-run context from the settings that are not factory options (None when none)."""
        from kg_agents.core.registry import get_method
        from kg_agents.options import keyword_options, parse_options

        schema = getattr(graph, "context_schema", None)
        fields = _context_fields(schema)
        if not self.context_pairs:
            return None
        unknown = [
            p.partition("=")[0].strip()
            for p in self.context_pairs
            if p.partition("=")[0].strip() not in fields
        ]
        if unknown:
            factory = set(keyword_options(get_method(self.name).load())) - {"checkpointer"}
            valid = sorted(factory | set(fields))
            raise ConfigError(
                f"unknown option {unknown[0]!r} for method {self.name!r}; valid options: {', '.join(valid)}"
            )
        values = parse_options(self.context_pairs, fields)
        return schema(**values) if schema is not None else values


def _context_fields(schema: Any) -> dict[str, Any]:
    if schema is None:
        return {}
    try:
        hints = typing.get_type_hints(schema)
    except (NameError, TypeError):
        hints = {}
    if dataclasses.is_dataclass(schema):
        return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(schema)}
    return dict(hints)
