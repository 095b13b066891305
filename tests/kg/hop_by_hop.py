"""Store proxies that choose a method's route: without the optional chain queries (the hop-by-hop walk),
or with them answered as if by a query engine (the chain walked whole, as on a SPARQL store)."""

from __future__ import annotations

from typing import Any


class HopByHopKG:
    """Everything of the wrapped store but ``chain_ends`` / ``chain_witnesses`` (an AttributeError, as
    on a store without :class:`~kg_agents.kg.base.ChainQueries`)."""

    _HIDDEN = frozenset({"chain_ends", "chain_witnesses"})

    def __init__(self, kg: Any) -> None:
        self.inner = kg
        self.name = getattr(kg, "name", "kg")

    def __getattr__(self, item: str) -> Any:
        if item in self._HIDDEN:
            raise AttributeError(item)
        return getattr(self.inner, item)

    # the protocol's methods, explicitly: isinstance(..., KnowledgeGraph) holds
    def has_entity(self, entity: str) -> bool:
        return bool(self.inner.has_entity(entity))

    def label(self, entity: str) -> str:
        return str(self.inner.label(entity))

    def features(self, entity: str) -> Any:
        return self.inner.features(entity)

    def relations(self, entity: str, direction: Any = "out") -> Any:
        return self.inner.relations(entity, direction)

    def neighbors(self, entity: str, relation: Any = None, direction: Any = "out", limit: Any = None) -> Any:
        return self.inner.neighbors(entity, relation, direction, limit)

    def neighbors_many(
        self, entities: Any, relation: Any = None, direction: Any = "out", limit: Any = None
    ) -> Any:
        return self.inner.neighbors_many(entities, relation, direction, limit)

    def degree(self, entity: str, relation: Any = None, direction: Any = "out") -> int:
        return int(self.inner.degree(entity, relation, direction))

    def has_triple(self, head: str, relation: str, tail: str) -> bool:
        return bool(self.inner.has_triple(head, relation, tail))

    def all_relations(self) -> Any:
        return self.inner.all_relations()

    def iter_labels(self) -> Any:
        return self.inner.iter_labels()

    def fingerprint(self) -> str:
        return str(self.inner.fingerprint())


class EngineJoinKG(HopByHopKG):
    """Everything of the wrapped store, its chain queries included, taken as a query engine's
    (``joins_in_engine``): a method walks a chosen chain whole, as it does over a SPARQL store."""

    _HIDDEN = frozenset()
    joins_in_engine = True
