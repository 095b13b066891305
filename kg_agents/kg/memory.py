"""``MemoryKG``: a compact in-memory store, the embedded default.

Entities and relations are interned to integers and the triples kept twice in CSR form (sorted by
head and by tail) in numpy arrays, so a neighbour query is two binary searches and a slice, and
MetaQA's 133,582 triples take a few megabytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path as FsPath
from typing import IO

import numpy as np

from kg_agents.errors import DataFormatError, EntityNotFound
from kg_agents.kg import base
from kg_agents.kg.base import Direction, Hop, Path, Triple, TripleList, check_direction, parse_relation_path

__all__ = ["RDFS_LABEL", "MemoryKG", "guess_format", "read_delimited"]

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"


def _open_text(path: FsPath) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


class MemoryKG(base.KnowledgeGraph):
    """An in-memory, read-only knowledge graph.

    Build one from triples (``MemoryKG(triples)``) or a file (``MemoryKG.from_file(path)``: MetaQA
    ``s|r|o``, TSV ``head<TAB>relation<TAB>tail``, N-Triples or Turtle, optionally gzipped).

    Args:
        triples: ``(head, relation, tail)`` string triples; duplicates are dropped.
        labels: optional display labels by entity id (defaults to the id itself).
        features: optional literal attributes by entity id.
        name: a short name for messages and caches.

    Example:
        >>> kg = MemoryKG([("Splash", "written_by", "Babaloo Mandel")])
        >>> [t.head for t in kg.neighbors("Babaloo Mandel", direction="in")]
        ['Splash']
    """

    def __init__(
        self,
        triples: Iterable[tuple[str, str, str] | Triple],
        *,
        labels: dict[str, str] | None = None,
        features: dict[str, dict[str, str]] | None = None,
        name: str = "memory",
    ) -> None:
        self.name = name
        ent: dict[str, int] = {}
        rel: dict[str, int] = {}
        hs: list[int] = []
        rs: list[int] = []
        ts: list[int] = []
        digest = hashlib.blake2b(digest_size=12)
        for tr in triples:
            h, r, t = (tr.head, tr.relation, tr.tail) if isinstance(tr, Triple) else tr
            hs.append(ent.setdefault(h, len(ent)))
            rs.append(rel.setdefault(r, len(rel)))
            ts.append(ent.setdefault(t, len(ent)))
        for extra in (labels or {}, features or {}):
            for e in extra:
                ent.setdefault(e, len(ent))
        self._ent = ent
        self._ents: list[str] = list(ent)
        self._rel = rel
        self._rels: list[str] = list(rel)
        n = len(ent)
        trip = np.array([hs, rs, ts], dtype=np.int64).reshape(3, -1)
        if trip.shape[1]:
            # Drop duplicate triples.
            key = (trip[0] * max(len(rel), 1) + trip[1]) * max(n, 1) + trip[2]
            _, first = np.unique(key, return_index=True)
            trip = trip[:, np.sort(first)]
        h, r, t = (trip[i].astype(np.int32) for i in range(3))
        self._n_triples = int(h.size)
        o = np.lexsort((t, r, h))
        self._out_ptr = np.concatenate([[0], np.cumsum(np.bincount(h, minlength=n))]).astype(np.int64)
        self._out_r, self._out_o = r[o], t[o]
        i = np.lexsort((h, r, t))
        self._in_ptr = np.concatenate([[0], np.cumsum(np.bincount(t, minlength=n))]).astype(np.int64)
        self._in_r, self._in_o = r[i], h[i]
        self._labels = dict(labels or {})
        self._features = {k: dict(v) for k, v in (features or {}).items()}
        for a in (h[o], self._out_r, self._out_o):
            digest.update(a.tobytes())
        for s in self._ents:
            digest.update(s.encode("utf-8", "surrogatepass") + b"\0")
        for s in self._rels:
            digest.update(s.encode("utf-8", "surrogatepass") + b"\0")
        digest.update(repr(sorted(self._labels.items())).encode("utf-8", "surrogatepass"))
        self._fingerprint = digest.hexdigest()

    # ------------------------------------------------------------------ loading
    @classmethod
    def from_file(cls, path: str | FsPath, *, fmt: str | None = None, name: str | None = None) -> MemoryKG:
        """Load a triples file. ``fmt`` is ``metaqa``, ``tsv``, ``nt`` or ``ttl``; guessed when None.

        Raises:
            DataFormatError: a line that is not a triple (with file name and line number).
            FileNotFoundError: the file does not exist.
        """
        p = FsPath(path)
        if not p.exists():
            raise FileNotFoundError(f"no such KG file: {p}")
        fmt = fmt or guess_format(p)
        name = name or p.name.split(".")[0]
        if fmt in ("nt", "ttl"):
            return cls._from_rdf(p, fmt, name)
        if fmt not in ("metaqa", "tsv"):
            raise DataFormatError(str(p), None, f"unknown triples format {fmt!r}")
        sep = "|" if fmt == "metaqa" else "\t"
        return cls(read_delimited(p, sep), name=name)

    @classmethod
    def _from_rdf(cls, p: FsPath, fmt: str, name: str) -> MemoryKG:
        import pyoxigraph as ox

        rdf_format = ox.RdfFormat.N_TRIPLES if fmt == "nt" else ox.RdfFormat.TURTLE
        triples: list[tuple[str, str, str]] = []
        labels: dict[str, str] = {}
        features: dict[str, dict[str, str]] = {}
        with _open_text(p) as fh:
            data = fh.read().encode("utf-8")
        try:
            for q in ox.parse(data, format=rdf_format):
                s, pr, o = q.subject, q.predicate.value, q.object
                s_id = s.value if isinstance(s, ox.NamedNode) else f"_:{s.value}"
                if isinstance(o, ox.Literal):
                    if pr == RDFS_LABEL:
                        labels.setdefault(s_id, o.value)
                    else:
                        features.setdefault(s_id, {})[pr] = o.value
                else:
                    o_id = o.value if isinstance(o, ox.NamedNode) else f"_:{o.value}"
                    triples.append((s_id, pr, o_id))
        except SyntaxError as exc:
            line = getattr(exc, "lineno", None)
            raise DataFormatError(str(p), line, f"invalid {fmt}: {exc}") from exc
        return cls(triples, labels=labels, features=features, name=name)

    # ------------------------------------------------------------------ protocol
    def __len__(self) -> int:
        return self._n_triples

    def __repr__(self) -> str:
        return (
            f"MemoryKG(name={self.name!r}, entities={len(self._ents)}, "
            f"relations={len(self._rels)}, triples={self._n_triples})"
        )

    @property
    def num_entities(self) -> int:
        return len(self._ents)

    def has_entity(self, entity: str) -> bool:
        return entity in self._ent

    def label(self, entity: str) -> str:
        if entity not in self._ent:
            raise EntityNotFound(entity)
        return self._labels.get(entity, entity)

    def features(self, entity: str) -> dict[str, str]:
        if entity not in self._ent:
            raise EntityNotFound(entity)
        out = {"label": self._labels.get(entity, entity)}
        out.update(self._features.get(entity, {}))
        return out

    def all_relations(self) -> list[str]:
        return list(self._rels)

    def iter_labels(self) -> Iterator[tuple[str, str]]:
        for e in self._ents:
            yield e, self._labels.get(e, e)

    def iter_triples(self) -> Iterator[Triple]:
        """Every triple, grouped by head."""
        ents, rels = self._ents, self._rels
        for hid in range(len(ents)):
            a, b = int(self._out_ptr[hid]), int(self._out_ptr[hid + 1])
            for j in range(a, b):
                yield Triple(ents[hid], rels[int(self._out_r[j])], ents[int(self._out_o[j])])

    def fingerprint(self) -> str:
        return self._fingerprint

    def _slice(self, eid: int, rid: int | None, inverse: bool) -> tuple[int, int]:
        ptr, rr = (self._in_ptr, self._in_r) if inverse else (self._out_ptr, self._out_r)
        a, b = int(ptr[eid]), int(ptr[eid + 1])
        if rid is None or a == b:
            return a, b
        seg = rr[a:b]
        return a + int(np.searchsorted(seg, rid, "left")), a + int(np.searchsorted(seg, rid, "right"))

    def relations(self, entity: str, direction: Direction = "out") -> list[str]:
        check_direction(direction)
        eid = self._ent.get(entity)
        if eid is None:
            return []
        found: list[str] = []
        for inverse in _sides(direction):
            a, b = self._slice(eid, None, inverse)
            rr = self._in_r if inverse else self._out_r
            for rid in np.unique(rr[a:b]).tolist():
                name = self._rels[rid]
                if name not in found:
                    found.append(name)
        return found

    def neighbors(
        self,
        entity: str,
        relation: str | None = None,
        direction: Direction = "out",
        limit: int | None = None,
    ) -> TripleList:
        check_direction(direction)
        _check_limit(limit)
        eid = self._ent.get(entity)
        rid = self._rel.get(relation) if relation is not None else None
        if eid is None or (relation is not None and rid is None):
            return TripleList(total=0)
        out: list[Triple] = []
        total = 0
        ents, rels = self._ents, self._rels
        for inverse in _sides(direction):
            a, b = self._slice(eid, rid, inverse)
            total += b - a
            room = b - a if limit is None else max(0, min(b - a, limit - len(out)))
            rr, oo = (self._in_r, self._in_o) if inverse else (self._out_r, self._out_o)
            for r_i, o_i in zip(rr[a : a + room].tolist(), oo[a : a + room].tolist(), strict=True):
                if inverse:
                    out.append(Triple(ents[o_i], rels[r_i], entity))
                else:
                    out.append(Triple(entity, rels[r_i], ents[o_i]))
        return TripleList(out, truncated=total > len(out), total=total)

    def degree(self, entity: str, relation: str | None = None, direction: Direction = "out") -> int:
        check_direction(direction)
        eid = self._ent.get(entity)
        rid = self._rel.get(relation) if relation is not None else None
        if eid is None or (relation is not None and rid is None):
            return 0
        n = 0
        for inverse in _sides(direction):
            a, b = self._slice(eid, rid, inverse)
            n += b - a
        return n

    def has_triple(self, head: str, relation: str, tail: str) -> bool:
        hid, rid, tid = self._ent.get(head), self._rel.get(relation), self._ent.get(tail)
        if hid is None or rid is None or tid is None:
            return False
        a, b = self._slice(hid, rid, False)
        seg = self._out_o[a:b]
        k = int(np.searchsorted(seg, tid))
        return k < seg.size and int(seg[k]) == tid

    # ------------------------------------------------------------------ relation paths (ChainQueries)
    def _levels(self, topic: str, relation_path: Sequence[str]) -> list[dict[int, tuple[int, int]]] | None:
        """Each hop's reached entities with one parent ``(entity, relation)`` each; None: nothing reached."""
        steps = parse_relation_path(relation_path)
        eid = self._ent.get(topic)
        if eid is None:
            return None
        levels: list[dict[int, tuple[int, int]]] = []
        frontier = [eid]
        for rel, inverse in steps:
            rid = self._rel.get(rel)
            if rid is None:
                return None
            oo = self._in_o if inverse else self._out_o
            reached: dict[int, tuple[int, int]] = {}
            for e in frontier:
                a, b = self._slice(e, rid, inverse)
                for o in oo[a:b].tolist():
                    if o != eid and o not in reached:  # a walk never passes through the topic again
                        reached[o] = (e, rid)
            if not reached:
                return None
            levels.append(reached)
            frontier = sorted(reached)
        return levels

    def chain_ends(
        self, topic: str, relation_path: Sequence[str], *, limit: int | None = None
    ) -> tuple[list[str], bool]:
        """The entities ``relation_path`` reaches from ``topic`` (sorted by id; see
        :class:`~kg_agents.kg.base.ChainQueries`), at most ``limit``, and whether there were more."""
        _check_limit(limit)
        levels = self._levels(topic, relation_path)
        if levels is None:
            return [], False
        ends = sorted(self._ents[i] for i in levels[-1])
        if limit is not None and len(ends) > limit:
            return ends[:limit], True
        return ends, False

    def chain_witnesses(
        self, topic: str, relation_path: Sequence[str], ends: Sequence[str]
    ) -> dict[str, Path]:
        """One walk from ``topic`` along ``relation_path`` to each of ``ends`` it reaches."""
        steps = parse_relation_path(relation_path)
        levels = self._levels(topic, relation_path)
        out: dict[str, Path] = {}
        if levels is None:
            return out
        for end in dict.fromkeys(ends):
            cur = self._ent.get(end)
            if cur is None or cur not in levels[-1]:
                continue
            hops: list[Hop] = []
            for k in range(len(levels) - 1, -1, -1):
                prev, rid = levels[k][cur]
                hops.append(Hop(self._ents[prev], self._rels[rid], self._ents[cur], steps[k][1]))
                cur = prev
            out[end] = Path(tuple(reversed(hops)))
        return out


def _sides(direction: Direction) -> tuple[bool, ...]:
    return {"out": (False,), "in": (True,), "both": (False, True)}[direction]


def _check_limit(limit: int | None) -> None:
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")


def guess_format(path: FsPath) -> str:
    """Guess a triples file's format from its name (``.nt``, ``.ttl``, ``.tsv``) or first line."""
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".nt"):
        return "nt"
    if name.endswith(".ttl"):
        return "ttl"
    if name.endswith(".tsv"):
        return "tsv"
    with _open_text(path) as fh:
        first = fh.readline()
    if first.count("\t") == 2:
        return "tsv"
    if first.count("|") == 2:
        return "metaqa"
    raise DataFormatError(str(path), 1, "cannot tell the triples format (expected s|r|o or TSV)")


def read_delimited(path: FsPath, sep: str) -> Iterator[tuple[str, str, str]]:
    """``(head, relation, tail)`` rows of a ``sep``-delimited triples file (gzip allowed); a bad row names
    the file and line."""
    with _open_text(path) as fh:
        for lineno, line in enumerate(fh, 1):
            line = line.rstrip("\r\n")
            if not line.strip():
                continue
            parts = line.split(sep)
            if len(parts) != 3 or not all(p.strip() for p in parts):
                raise DataFormatError(
                    str(path), lineno, f"expected head{sep}relation{sep}tail, got {line[:80]!r}"
                )
            yield parts[0].strip(), parts[1].strip(), parts[2].strip()
