"""Write a knowledge graph as N-Triples, to load into a SPARQL server (Virtuoso, Oxigraph...).

Ids become IRIs through a :class:`~kg_agents.kg.profiles.Profile` (``metaqa`` by default: entities
under :data:`~kg_agents.kg.profiles.METAQA_ENTITY_NS`, relations under
:data:`~kg_agents.kg.profiles.METAQA_RELATION_NS`), and every entity gets an ``rdfs:label`` (its
label, or its id). A ``SparqlKG`` / ``RdfKG`` opened with the same profile then answers with the same
ids as the source KG. Output is streamed line by line; a ``.gz`` path is gzipped.
"""

from __future__ import annotations

import gzip
import io
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import IO, Any

from kg_agents.files import atomic_target
from kg_agents.kg.base import KnowledgeGraph, Triple
from kg_agents.kg.profiles import Profile, get_profile
from kg_agents.kg.terms import iri, literal

__all__ = ["ExportStats", "write_ntriples"]


@dataclass(frozen=True, slots=True)
class ExportStats:
    """What :func:`write_ntriples` wrote."""

    path: FsPath
    triples: int
    labels: int


def _iter_kg_triples(kg: Any) -> Iterator[tuple[str, str, str]]:
    if hasattr(kg, "iter_triples"):
        for t in kg.iter_triples():
            yield (t.head, t.relation, t.tail) if isinstance(t, Triple) else tuple(t)  # type: ignore[misc]
        return
    # Any KnowledgeGraph: walk the out-edges of every labelled entity.
    for e, _ in kg.iter_labels():
        for t in kg.neighbors(e, direction="out"):
            yield t.head, t.relation, t.tail


def _open_out(path: FsPath, gz: bool) -> IO[str]:
    if gz:
        return io.TextIOWrapper(gzip.open(path, "wb", compresslevel=5), encoding="utf-8", newline="\n")
    return open(path, "w", encoding="utf-8", newline="\n")


def write_ntriples(
    source: KnowledgeGraph | Iterable[tuple[str, str, str] | Triple],
    path: str | os.PathLike[str],
    *,
    profile: str | Profile = "metaqa",
    labels: Mapping[str, str] | None = None,
    label_predicate: str | None = None,
) -> ExportStats:
    """Write ``source`` as N-Triples with an ``rdfs:label`` for every entity.

    Args:
        source: a KnowledgeGraph (its ``iter_triples()`` when it has one, else the out-edges of
            every entity ``iter_labels()`` lists) or ``(head, relation, tail)`` triples.
        path: the output file; ``.gz`` compresses it.
        profile: how ids become IRIs (default ``metaqa``).
        labels: labels by entity id; for a KnowledgeGraph, its own labels are used by default.
        label_predicate: the label predicate IRI (default: the profile's first label predicate).

    Returns:
        An :class:`ExportStats` with the path and the numbers of edge and label triples written.

    Raises:
        InvalidTermError: an id that the profile cannot turn into an IRI (e.g. a non-IRI id
            with the ``generic`` profile).

    Example:
        >>> from kg_agents.kg import open_kg
        >>> write_ntriples(open_kg("metaqa"), "/tmp/metaqa.nt.gz").triples  # doctest: +SKIP
        133582
    """
    prof = get_profile(profile)
    out = FsPath(path)
    lab_pred = iri(label_predicate or prof.label_predicates[0])
    is_kg = isinstance(source, KnowledgeGraph)
    if labels is None and is_kg:
        labels = dict(source.iter_labels())  # type: ignore[union-attr]
    labels = labels or {}
    triples_iter: Iterable[Any] = _iter_kg_triples(source) if is_kg else source  # type: ignore[assignment]
    seen: dict[str, str] = {}
    rels: dict[str, str] = {}
    n_triples = n_labels = 0
    with atomic_target(out, suffix=".part") as tmp, _open_out(tmp, out.suffix == ".gz") as fh:
        for tr in triples_iter:
            h, r, t = (tr.head, tr.relation, tr.tail) if isinstance(tr, Triple) else tr
            hs = seen.get(h) or seen.setdefault(h, prof.entity_term(h))
            ts = seen.get(t) or seen.setdefault(t, prof.entity_term(t))
            rs = rels.get(r) or rels.setdefault(r, prof.relation_term(r))
            fh.write(f"{hs} {rs} {ts} .\n")
            n_triples += 1
        for e in labels:
            if e not in seen:
                seen[e] = prof.entity_term(e)
        for e, term in seen.items():
            fh.write(f"{term} {lab_pred} {literal(labels.get(e, e))} .\n")
            n_labels += 1
    return ExportStats(out, n_triples, n_labels)
