"""Knowledge-graph layer: the ``KnowledgeGraph`` protocol, stores, entity linking and paths."""

from __future__ import annotations

from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.kg.base import (
    Direction,
    Hop,
    KnowledgeGraph,
    Path,
    Triple,
    TripleList,
    verify_path,
    verify_paths,
)
from kg_agents.kg.encoder import get_sentence_encoder
from kg_agents.kg.index import EntityIndex, LinkedEntity
from kg_agents.kg.memory import MemoryKG
from kg_agents.kg.profiles import Profile
from kg_agents.kg.rdf import RdfKG
from kg_agents.kg.sparql import SparqlKG

__all__ = [
    "Direction",
    "EntityIndex",
    "Hop",
    "KnowledgeGraph",
    "LinkedEntity",
    "MemoryKG",
    "Path",
    "Profile",
    "RdfKG",
    "SparqlKG",
    "Triple",
    "TripleList",
    "get_sentence_encoder",
    "open_kg",
    "verify_path",
    "verify_paths",
]

_KG_CACHE: dict[tuple[str, str], Any] = {}


def open_kg(
    spec: str | KnowledgeGraph, *, store: str | None = None, cache: bool = True, **kwargs: Any
) -> Any:
    """Open a knowledge graph from one string.

    - a bundled name: ``"metaqa"``, ``"pq-2h"``, ``"pq-3h"``, ``"pql-2h"``, ``"pql-3h"``;
    - a triples file: MetaQA ``s|r|o``, TSV, ``.nt`` or ``.ttl`` (``.gz`` allowed);
    - a SPARQL endpoint URL ``http(s)://host/sparql`` (extra keyword arguments go to ``SparqlKG``).

    ``store`` picks the backend for files: ``"memory"`` (default) or ``"rdf"`` (rdflib over Oxigraph).
    An RDF store whose profile names mediator types comes as a
    :class:`~kg_agents.kg.mediators.MediatedKG` (mediators walked through as one step).
    A ``KnowledgeGraph`` instance is returned as it is. Bundled and file KGs are cached per process.

    Raises:
        ConfigError: an unknown bundled name or store.
        FileNotFoundError: a file path that does not exist.
    """
    if not isinstance(spec, str):
        return spec
    from kg_agents.data import BUNDLED_KGS, data_path

    if spec.startswith(("http://", "https://")):
        from kg_agents.kg.mediators import with_mediators
        from kg_agents.kg.sparql import SparqlKG

        return with_mediators(SparqlKG(spec, **kwargs))
    store = store or "memory"
    if store not in ("memory", "rdf"):
        raise ConfigError(f"unknown store {store!r}; valid: memory, rdf (or pass a SPARQL URL)")
    key = (spec, store)
    if cache and not kwargs and key in _KG_CACHE:
        return _KG_CACHE[key]
    if spec in BUNDLED_KGS:
        rel, fmt = BUNDLED_KGS[spec]
        path, name = data_path(rel), spec
    else:
        import os

        if not os.path.exists(spec):
            if "/" not in spec and "." not in spec:
                raise ConfigError(
                    f"unknown knowledge graph {spec!r}; bundled: {', '.join(sorted(BUNDLED_KGS))}, "
                    "or give a triples file path or a SPARQL endpoint URL"
                )
            raise FileNotFoundError(f"no such KG file: {spec}")
        path, fmt, name = spec, None, None  # type: ignore[assignment]
    if store == "memory":
        kg: Any = MemoryKG.from_file(path, fmt=fmt, name=name)
    else:
        from kg_agents.kg.mediators import with_mediators
        from kg_agents.kg.rdf import RdfKG

        kg = with_mediators(RdfKG.from_file(path, fmt=fmt, name=name, **kwargs))
    if cache and not kwargs:
        _KG_CACHE[key] = kg
    return kg
