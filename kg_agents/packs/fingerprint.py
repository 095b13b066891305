"""A knowledge graph's content fingerprint: what a pack names its KG by.

The fingerprint is computed from the edges alone (``head``, ``relation``, ``tail`` as ids), not from the
graph's name, file or store: MetaQA opened as the bundled graph, from a TSV file, from N-Triples in an
Oxigraph store with the ``metaqa`` profile, or from a SPARQL endpoint with that profile has one
fingerprint. Each edge is hashed on its own (BLAKE2b, 16 bytes, of ``head<TAB>relation<TAB>tail``),
the hashes are summed modulo 2**128 and the sum is hashed with the number of edges, so the order in which
a store lists its edges does not matter (and a store lists each edge once).

A store is read through its ``iter_triples()`` (every store of :mod:`kg_agents.kg` has one; a SPARQL
endpoint's is paged). At most :data:`FINGERPRINT_MAX_TRIPLES` edges are read: above that, or for a store
without ``iter_triples``, there is no fingerprint, and :func:`fingerprint_status` says why.

A fingerprint is kept per KG object and, for a graph of :data:`DISK_CACHE_MIN_TRIPLES` edges or more, on
disk under ``cache_root("packs", "fingerprints")`` keyed by the store's own cheap ``fingerprint()``
where that names its content: ``MemoryKG``'s (a hash of its arrays), ``RdfKG``'s with a source file
(path, size, time, count), ``SparqlKG``'s (endpoint, graph, profile, triple count: an endpoint whose
content changes but not its count keeps its old fingerprint until that folder is removed).

Example:
    >>> from kg_agents.kg import MemoryKG
    >>> a = MemoryKG([("Splash", "directed_by", "Ron Howard"), ("Big", "directed_by", "Penny Marshall")])
    >>> b = MemoryKG([("Big", "directed_by", "Penny Marshall"), ("Splash", "directed_by", "Ron Howard")])
    >>> kg_fingerprint(a) == kg_fingerprint(b), len(kg_fingerprint(a))
    (True, 32)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import threading
import weakref
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from kg_agents.files import atomic_write, cache_root, safe_name
from kg_agents.kg.base import Triple
from kg_agents.kg.memory import MemoryKG
from kg_agents.kg.rdf import RdfKG
from kg_agents.kg.sparql import SparqlKG

__all__ = [
    "DISK_CACHE_MIN_TRIPLES",
    "FINGERPRINT_MAX_TRIPLES",
    "KGSummary",
    "base_kg",
    "edge_count",
    "fingerprint_status",
    "fingerprint_triples",
    "kg_fingerprint",
    "kg_summary",
]

#: The most edges a fingerprint reads (a SPARQL endpoint pages them: about 100 requests of 10,000);
#: a larger graph has no fingerprint, so ``pack="auto"`` finds nothing for it: name its pack instead.
FINGERPRINT_MAX_TRIPLES = 1_000_000
#: Graphs of at least this many edges keep their fingerprint on disk (smaller ones hash in milliseconds).
DISK_CACHE_MIN_TRIPLES = 10_000
_MOD = 2**128
_LOCK = threading.Lock()
_BY_OBJECT: weakref.WeakKeyDictionary[Any, KGSummary] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class KGSummary:
    """What a fingerprint pass reads: the fingerprint and the numbers of edges, of entities on them and
    of relations (what a pack's manifest records under ``"kg"``)."""

    fingerprint: str
    triples: int
    entities: int
    relations: int


def base_kg(kg: Any) -> Any:
    """``kg`` without its wrappers (a metered graph's ``.inner``, and any proxy that has one)."""
    seen = 0
    while getattr(kg, "inner", None) is not None and seen < 10:
        kg, seen = kg.inner, seen + 1
    return kg


def fingerprint_triples(triples: Iterable[Triple | tuple[str, str, str]]) -> KGSummary:
    """The :class:`KGSummary` of ``triples`` (each listed once), in any order.

    Example:
        >>> fingerprint_triples([("a", "r", "b")]).triples
        1
    """
    total = n = 0
    entities: set[str] = set()
    relations: set[str] = set()
    blake2b = hashlib.blake2b
    for t in triples:
        h, r, o = (t.head, t.relation, t.tail) if isinstance(t, Triple) else t
        text = f"{h}\t{r}\t{o}".encode("utf-8", "surrogatepass")
        total += int.from_bytes(blake2b(text, digest_size=16).digest(), "big")
        n += 1
        entities.add(h)
        entities.add(o)
        relations.add(r)
    digest = hashlib.blake2b(f"{n}:{total % _MOD:032x}".encode(), digest_size=16).hexdigest()
    return KGSummary(digest, n, len(entities), len(relations))


def edge_count(kg: Any) -> int | None:
    """The number of edges ``kg`` lists, where that is cheap to know (``MemoryKG``: its length; a
    SPARQL-backed store: one ``COUNT`` query), else None.

    Raises:
        KGError: the store failed to count (an endpoint down).
    """
    kg = base_kg(kg)
    if isinstance(kg, MemoryKG):
        return len(kg)
    count = getattr(kg, "count_edges", None)
    return int(count()) if callable(count) else None


def _store_key(kg: Any) -> str | None:
    """The store's own fingerprint where it names the store's content (see the module docstring)."""
    if isinstance(kg, MemoryKG) or (isinstance(kg, RdfKG) and kg.source) or isinstance(kg, SparqlKG):
        return f"{type(kg).__name__}-{kg.fingerprint()}"
    return None


def _read_disk(key: str) -> KGSummary | None:
    path = cache_root("packs", "fingerprints", safe_name(key) + ".json")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("store") != key:
            return None
        return KGSummary(
            str(data["fingerprint"]), *(int(data[k]) for k in ("triples", "entities", "relations"))
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent or unreadable: computed again and rewritten


def _write_disk(key: str, summary: KGSummary) -> None:
    path = cache_root("packs", "fingerprints", safe_name(key) + ".json")
    with contextlib.suppress(OSError):  # a read-only cache folder costs a rehash next time, nothing else
        atomic_write(path, json.dumps({"store": key, **asdict(summary)}, indent=2) + "\n")


def fingerprint_status(
    kg: Any, *, max_triples: int = FINGERPRINT_MAX_TRIPLES
) -> tuple[KGSummary | None, str]:
    """The :class:`KGSummary` of ``kg``'s content, or None and the reason there is none.

    Kept per KG object and, for large graphs, on disk (see the module docstring).

    Args:
        kg: any knowledge graph (a metered wrapper is looked through).
        max_triples: the most edges read (default :data:`FINGERPRINT_MAX_TRIPLES`).

    Raises:
        KGError: the store failed while it was read (an endpoint down or too slow).
    """
    kg = base_kg(kg)
    try:
        hit = _BY_OBJECT.get(kg)
    except TypeError:  # not weak-referenceable: not kept per object
        hit = None
    if hit is not None:
        return hit, ""
    if not callable(getattr(kg, "iter_triples", None)):
        return None, f"{kg!r} cannot list its triples (it has no iter_triples), so it has no fingerprint"
    n = edge_count(kg)
    if n is not None and n > max_triples:
        return None, (
            f"{kg!r} has {n:,} edges, more than the {max_triples:,} a fingerprint reads "
            "(kg_agents.packs.FINGERPRINT_MAX_TRIPLES)"
        )
    key = _store_key(kg) if n is None or n >= DISK_CACHE_MIN_TRIPLES else None
    summary = _read_disk(key) if key is not None else None
    if summary is None:
        try:
            summary = fingerprint_triples(_capped(kg.iter_triples(), max_triples))
        except _TooMany:
            return None, (
                f"{kg!r} lists more than the {max_triples:,} edges a fingerprint reads "
                "(kg_agents.packs.FINGERPRINT_MAX_TRIPLES)"
            )
        if key is not None and summary.triples >= DISK_CACHE_MIN_TRIPLES:
            _write_disk(key, summary)
    with _LOCK, contextlib.suppress(TypeError):  # not weak-referenceable: not kept per object
        _BY_OBJECT[kg] = summary
    return summary, ""


class _TooMany(Exception):
    """A store listed more edges than a fingerprint reads."""


def _capped(triples: Iterable[Any], cap: int) -> Iterable[Any]:
    for i, t in enumerate(triples):
        if i >= cap:
            raise _TooMany
        yield t


def kg_summary(kg: Any, *, max_triples: int = FINGERPRINT_MAX_TRIPLES) -> KGSummary | None:
    """:func:`fingerprint_status` without the reason: the summary, or None (too large, or no
    ``iter_triples``).

    Raises:
        KGError: the store failed while it was read.
    """
    return fingerprint_status(kg, max_triples=max_triples)[0]


def kg_fingerprint(kg: Any, *, max_triples: int = FINGERPRINT_MAX_TRIPLES) -> str | None:
    """The content fingerprint of ``kg`` (32 hex digits), or None for a graph of more than
    ``max_triples`` edges or a store that cannot list its triples.

    Raises:
        KGError: the store failed while it was read.
    """
    summary = kg_summary(kg, max_triples=max_triples)
    return summary.fingerprint if summary is not None else None
