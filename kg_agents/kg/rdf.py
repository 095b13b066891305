"""``RdfKG``: a read-only ``KnowledgeGraph`` over any rdflib ``Graph`` (Oxigraph store by default).

Queries are SPARQL ``SELECT``/``ASK`` built by :mod:`kg_agents.kg._query`, with every term bound in
a ``VALUES`` block rendered by :mod:`kg_agents.kg.terms`; with the Oxigraph store (oxrdflib) they run
in Oxigraph's native engine.
"""

from __future__ import annotations

import gzip
import hashlib
import os
from collections.abc import Iterator
from pathlib import Path as FsPath
from typing import IO, Any

from kg_agents.errors import ConfigError, DataFormatError, KGError
from kg_agents.kg._query import Node, Row, SparqlBackedKG, check_read_only, count_query
from kg_agents.kg.base import Triple
from kg_agents.kg.memory import guess_format, read_delimited
from kg_agents.kg.profiles import RDFS_LABEL, Profile, get_profile

__all__ = ["DEFAULT_GRAPH_IRI", "RdfKG"]

#: The named graph RdfKG.from_file loads into.
DEFAULT_GRAPH_IRI = "urn:kg-agents:graph"


def _node(term: Any) -> Node:
    from rdflib import BNode, Literal, URIRef

    if isinstance(term, URIRef):
        return Node("uri", str(term))
    if isinstance(term, Literal):
        return Node("literal", str(term), term.language)
    if isinstance(term, BNode):
        return Node("bnode", str(term))
    return Node("literal", str(term))


class RdfKG(SparqlBackedKG):
    """A read-only knowledge graph over an rdflib ``Graph``.

    Args:
        graph: any rdflib ``Graph``; ``Graph(store="Oxigraph")`` (oxrdflib) is much faster than the
            default in-memory store.
        profile: how IRIs map to ids (``"generic"``: full IRIs; ``"metaqa"``, ``"freebase"``,
            ``"wikidata"`` or a :class:`~kg_agents.kg.profiles.Profile`).
        name: a short name for messages and caches.
        cache_size: entries in the LRU cache of neighbour / label results (0 disables it).
        source: a description of where the graph came from (part of the fingerprint).
        ordered: when a ``limit`` cuts a neighbour list, keep the first edges by relation and IRI
            instead of the store's index order (slower on hubs).

    Example:
        >>> from rdflib import Graph, URIRef
        >>> g = Graph(store="Oxigraph")
        >>> _ = g.add((URIRef("http://ex.org/a"), URIRef("http://ex.org/knows"), URIRef("http://ex.org/b")))
        >>> kg = RdfKG(g)
        >>> [t.tail for t in kg.neighbors("http://ex.org/a")]
        ['http://ex.org/b']
    """

    def __init__(
        self,
        graph: Any,
        *,
        profile: str | Profile = "generic",
        name: str = "rdf",
        cache_size: int = 10_000,
        source: str = "",
        ordered: bool = False,
    ) -> None:
        super().__init__(cache_size=cache_size, ordered=ordered)
        self.graph = graph
        self.profile = get_profile(profile)
        self.name = name
        self._source = source
        self._fingerprint: str | None = None

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        fmt: str | None = None,
        name: str | None = None,
        profile: str | Profile | None = None,
        store: str = "Oxigraph",
        cache_size: int = 10_000,
        ordered: bool = False,
    ) -> RdfKG:
        """Load ``.nt`` / ``.ttl`` (RDF) or MetaQA ``s|r|o`` / TSV triples, optionally gzipped.

        RDF files keep their IRIs (default profile ``generic``). Delimited files become IRIs under
        the profile's namespaces (default ``metaqa``), with an ``rdfs:label`` per entity, so ids are
        the same strings as in :class:`~kg_agents.kg.memory.MemoryKG`.

        Args:
            path: the file.
            fmt: ``nt``, ``ttl``, ``metaqa`` or ``tsv``; guessed from the name or first line when None.
            name: the KG's name (default: the file name up to its first dot).
            profile: the id scheme (see above).
            store: the rdflib store plugin (``"Oxigraph"``; ``"default"`` for rdflib's own).
            cache_size: see :class:`RdfKG`.
            ordered: see :class:`RdfKG`.

        Raises:
            FileNotFoundError: no such file.
            DataFormatError: a malformed file (with the line when known).
            ConfigError: a delimited file with a profile that has no namespaces.

        Example:
            >>> kg = RdfKG.from_file("kg_agents/data/metaqa/kb.txt.gz")  # doctest: +SKIP
            >>> kg.has_triple("Splash", "written_by", "Babaloo Mandel")  # doctest: +SKIP
            True
        """
        p = FsPath(path)
        if not p.exists():
            raise FileNotFoundError(f"no such KG file: {p}")
        fmt = fmt or guess_format(p)
        name = name or p.name.split(".")[0]
        st = p.stat()
        source = f"{p.resolve()}:{st.st_size}:{st.st_mtime_ns}"
        if fmt in ("nt", "ttl"):
            prof = get_profile(profile or "generic")
            graph = _load_rdf(p, fmt, store)
        elif fmt in ("metaqa", "tsv"):
            prof = get_profile(profile or "metaqa")
            if prof.entity_ns is None or prof.relation_ns is None:
                raise ConfigError(
                    f"profile {prof.name!r} has no namespaces; delimited files need one such as 'metaqa'"
                )
            graph = _load_delimited(p, "|" if fmt == "metaqa" else "\t", prof, store)
        else:
            raise DataFormatError(str(p), None, f"unknown triples format {fmt!r}")
        return cls(graph, profile=prof, name=name, cache_size=cache_size, source=source, ordered=ordered)

    # ------------------------------------------------------------------ backend
    def _run(self, query: str) -> Any:
        check_read_only(query)
        try:
            return self.graph.query(query)
        except (SyntaxError, ValueError, OSError, RuntimeError, NotImplementedError) as exc:
            raise KGError(f"{self.name}: SPARQL query failed: {exc}") from exc

    def _select(self, query: str) -> list[Row]:
        result = self._run(query)
        names = [str(v) for v in result.vars]
        rows: list[Row] = []
        for sol in result:
            row: Row = {}
            for n, term in zip(names, sol, strict=True):
                if term is not None:
                    row[n] = _node(term)
            rows.append(row)
        return rows

    def _ask(self, query: str) -> bool:
        return bool(self._run(query).askAnswer)

    # ------------------------------------------------------------------ info
    def __len__(self) -> int:
        rows = self._select(count_query())
        return int(rows[0]["n"].value) if rows else 0

    def __repr__(self) -> str:
        store = type(self.graph.store).__name__
        return f"RdfKG(name={self.name!r}, profile={self.profile.name!r}, store={store})"

    def fingerprint(self) -> str:
        """Hash of the profile, the source file (path, size, mtime) and the triple count."""
        if self._fingerprint is None:
            d = hashlib.blake2b(digest_size=12)
            d.update(f"{self.profile.describe()}\n{self._source}\n{len(self)}".encode())
            self._fingerprint = d.hexdigest()
        return self._fingerprint

    @property
    def source(self) -> str:
        """Where the graph came from (``from_file``: the file's path, size and time), or ``""``."""
        return self._source

    def iter_triples(self) -> Iterator[Triple]:
        """Every edge ``(head, relation, tail)`` as ids (literal-valued triples and blank nodes left out),
        read from the graph directly."""
        from rdflib import URIRef

        for s, p, o in self.graph.triples((None, None, None)):
            if isinstance(s, URIRef) and isinstance(o, URIRef):
                yield Triple(
                    self.profile.entity_id(str(s)),
                    self.profile.relation_id(str(p)),
                    self.profile.entity_id(str(o)),
                )


def _open_binary(p: FsPath) -> IO[bytes]:
    if p.suffix == ".gz":
        return gzip.open(p, "rb")  # type: ignore[return-value]
    return open(p, "rb")


def _new_graph(store: str) -> Any:
    from rdflib import Graph, URIRef

    if store.lower() == "oxigraph":
        return Graph(store="Oxigraph", identifier=URIRef(DEFAULT_GRAPH_IRI))
    return Graph(store=store, identifier=URIRef(DEFAULT_GRAPH_IRI))


def _load_rdf(p: FsPath, fmt: str, store: str) -> Any:
    graph = _new_graph(store)
    if store.lower() == "oxigraph":
        import pyoxigraph as ox
        from oxrdflib import OxigraphStore

        rdf_format = ox.RdfFormat.N_TRIPLES if fmt == "nt" else ox.RdfFormat.TURTLE
        ox_store = ox.Store()
        try:
            with _open_binary(p) as fh:
                ox_store.bulk_load(input=fh, format=rdf_format, to_graph=ox.NamedNode(DEFAULT_GRAPH_IRI))
        except SyntaxError as exc:
            raise DataFormatError(str(p), getattr(exc, "lineno", None), f"invalid {fmt}: {exc}") from exc
        from rdflib import Graph, URIRef

        return Graph(store=OxigraphStore(store=ox_store), identifier=URIRef(DEFAULT_GRAPH_IRI))
    with _open_binary(p) as fh:
        data = fh.read()
    try:
        graph.parse(data=data, format="nt" if fmt == "nt" else "turtle")
    except (SyntaxError, ValueError) as exc:
        raise DataFormatError(str(p), None, f"invalid {fmt}: {exc}") from exc
    return graph


def _load_delimited(p: FsPath, sep: str, profile: Profile, store: str) -> Any:
    from rdflib import Literal, URIRef

    label = profile.label_predicates[0] if profile.label_predicates else RDFS_LABEL
    seen: set[str] = set()
    graph = _new_graph(store)

    def triples() -> Iterator[tuple[Any, Any, Any]]:
        lab = URIRef(label)
        for h, r, t in read_delimited(p, sep):
            hi, ti = URIRef(profile.entity_iri(h)), URIRef(profile.entity_iri(t))
            yield hi, URIRef(profile.relation_iri(r)), ti
            for e, ei in ((h, hi), (t, ti)):
                if e not in seen:
                    seen.add(e)
                    yield ei, lab, Literal(e)

    if store.lower() == "oxigraph":
        # Write N-Triples text (terms rendered by kg_agents.kg.terms) and bulk-load it: much faster
        # than building one Python object per term.
        import pyoxigraph as ox
        from oxrdflib import OxigraphStore
        from rdflib import Graph

        from kg_agents.kg.terms import iri, literal

        lab_term = iri(label)
        terms: dict[str, str] = {}
        rels: dict[str, str] = {}
        lines: list[str] = []
        for h, r, t in read_delimited(p, sep):
            hs = terms.get(h) or terms.setdefault(h, profile.entity_term(h))
            ts = terms.get(t) or terms.setdefault(t, profile.entity_term(t))
            rs = rels.get(r) or rels.setdefault(r, profile.relation_term(r))
            lines.append(f"{hs} {rs} {ts} .\n")
        lines.extend(f"{term} {lab_term} {literal(e)} .\n" for e, term in terms.items())
        ox_store = ox.Store()
        ox_store.load(
            input="".join(lines).encode("utf-8"),
            format=ox.RdfFormat.N_TRIPLES,
            to_graph=ox.NamedNode(DEFAULT_GRAPH_IRI),
        )
        return Graph(store=OxigraphStore(store=ox_store), identifier=URIRef(DEFAULT_GRAPH_IRI))
    graph.addN((s, pr, o, graph) for s, pr, o in triples())
    return graph
