"""What every method's factory does before it builds its own nodes, in one place.

A factory ``create_<name>_graph(kg, *, llm=None, adapter="auto", pack="auto", ...)`` resolves the same
things in the same order: the KG pack for the graph (:func:`~kg_agents.packs.resolve_pack`), the chat
model with the pack's specialist adapter (:func:`~kg_agents.core.models.default_llm`), the pack's hop
classifier (:func:`~kg_agents.core.hops.pack_hops`) and the metered KG its nodes read
(:class:`~kg_agents.core.metering.MeteredKG`): :func:`setup_method` does it once and returns a
:class:`MethodSetup`. :func:`context_defaults` builds the factory's full per-run context from its own
arguments of the same names, and :func:`reasoning_graph` starts the ``StateGraph`` every method wires,
with the shared input and output schemas and, for a method that links entities, its first node.

Example:
    >>> from kg_agents.kg import MemoryKG
    >>> setup = setup_method(MemoryKG([("a", "r", "b")]), "graph_rag", llm=object(), pack="none")
    >>> setup.pack is None, setup.hop_classifier, setup.auto_hops
    (True, None, False)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from langgraph.graph import START, StateGraph

from kg_agents.core.hops import pack_hops
from kg_agents.core.metering import MeteredKG
from kg_agents.core.models import default_llm
from kg_agents.core.nodes import make_link_entities_node
from kg_agents.core.state import ReasoningInput, ReasoningOutput
from kg_agents.errors import ConfigError
from kg_agents.kg.base import KnowledgeGraph
from kg_agents.packs import Pack, resolve_pack

__all__ = ["LINK_NODE", "MethodSetup", "context_defaults", "reasoning_graph", "setup_method"]

C = TypeVar("C")

#: The first node of every method that links the question's entities.
LINK_NODE = "link_entities"


@dataclass(frozen=True)
class MethodSetup:
    """What a factory resolved for its graph.

    Attributes:
        kg: the KG wrapped for metering (what the nodes read).
        pack: the KG pack the graph runs with (None: none).
        llm: the chat model (with the pack's specialist adapter where it is the embedded model), or None
            where the factory asked for no model.
        hop_classifier: the hop classifier (the factory's, else the pack's; None: none).
        auto_hops: what the method's ``"auto"`` hop setting follows: True the classifier, ``"chain"``
            the closest relation chain (see :func:`~kg_agents.core.hops.pack_hops`; None: a classifier
            was given).
    """

    kg: MeteredKG
    pack: Pack | None
    llm: Any
    hop_classifier: Any
    auto_hops: bool | str | None


def setup_method(
    kg: KnowledgeGraph | None,
    method: str,
    *,
    llm: Any = None,
    adapter: str = "auto",
    pack: str | Pack | None = "auto",
    hop_classifier: Any = None,
    hops_option: str | None = "hops",
    chat: bool = True,
) -> MethodSetup:
    """Resolve a factory's shared options for ``method`` over ``kg``, in the order every factory had.

    Args:
        kg: the factory's knowledge graph (None for a method that reads none).
        method: the method's registered name (it chooses the pack's specialist and route).
        llm: the factory's ``llm``: a chat model, a ``resolve_chat_model`` spec, or None (embedded).
        adapter: the factory's ``adapter`` option (see :func:`~kg_agents.core.models.default_llm`).
        pack: the factory's ``pack`` option, or a pack already resolved.
        hop_classifier: the factory's ``hop_classifier`` (None: the pack's, if any).
        hops_option: the route option the pack's hop classifier settles (``"hops"``, ``"answer_hops"``);
            None: the method predicts no hops (no classifier is loaded).
        chat: False: resolve no chat model (``llm`` is None in the setup).

    Raises:
        ConfigError: a bad ``pack`` or ``adapter``.
        DataFormatError: the pack's manifest is broken.
        ModelError: the pack's hop classifier cannot be read.
    """
    chosen = resolve_pack(kg, pack)
    model = default_llm(llm, kg=kg, adapter=adapter, method=method, pack=chosen) if chat else None
    classifier, auto = (
        pack_hops(chosen, method, hop_classifier, hops_option) if hops_option is not None else (None, False)
    )
    return MethodSetup(MeteredKG(kg), chosen, model, classifier, auto)  # type: ignore[arg-type]


def context_defaults(schema: type[C], options: Mapping[str, Any], **values: Any) -> C:
    """A factory's full per-run context: every field of ``schema`` from ``values`` where given there,
    else from ``options`` (the factory's arguments, ``locals()``), by the field's name.

    Raises:
        ConfigError: a field found in neither (a context field without its factory option).

    Example:
        >>> from dataclasses import make_dataclass
        >>> Ctx = make_dataclass("Ctx", [("top_k", int | None, None), ("hops", int | None, None)])
        >>> context_defaults(Ctx, {"top_k": 3, "other": 1}, hops=2)
        Ctx(top_k=3, hops=2)
    """
    fields = [f.name for f in dataclasses.fields(schema)]  # type: ignore[arg-type]
    missing = [n for n in fields if n not in values and n not in options]
    if missing:
        raise ConfigError(f"{schema.__name__}: no factory option for {missing}")
    return schema(**{n: values[n] if n in values else options[n] for n in fields})


def reasoning_graph(
    state: type[Any], context: type[Any], setup: MethodSetup | None = None, index: Any = None
) -> StateGraph[Any, Any, Any, Any]:
    """A method's ``StateGraph`` over ``state`` with ``context`` as its per-run schema and the shared
    input and output (:class:`~kg_agents.core.state.ReasoningInput`, ``ReasoningOutput``). With
    ``setup``, the graph starts at :data:`LINK_NODE`, linking entities in ``setup.kg`` (with ``index``,
    an ``EntityIndex`` or None: built on first need)."""
    g: StateGraph[Any, Any, Any, Any] = StateGraph(
        state, context_schema=context, input_schema=ReasoningInput, output_schema=ReasoningOutput
    )
    if setup is not None:
        g.add_node(LINK_NODE, make_link_entities_node(setup.kg, index))
        g.add_edge(START, LINK_NODE)
    return g
