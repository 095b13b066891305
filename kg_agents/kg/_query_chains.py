"""The chain queries (:class:`~kg_agents.kg.base.ChainQueries`) of the SPARQL-backed stores: a chosen
relation path walked whole by the engine, its ends and a walk to each, from one bounded read of the
path's walks where that suffices (:class:`ChainQueryMixin`, a base of
:class:`~kg_agents.kg._query.SparqlBackedKG`)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from kg_agents.kg._query_builders import Row, chain_ends_query, chain_walks_query, chain_witness_query
from kg_agents.kg.base import Hop, Path, check_limit, parse_relation_path
from kg_agents.kg.profiles import Profile

__all__ = ["ChainQueryMixin"]


class ChainQueryMixin:
    """``chain_ends`` and ``chain_witnesses`` over the primitives of
    :class:`~kg_agents.kg._query.SparqlBackedKG` (which declares the settings read here)."""

    profile: Profile
    page_size: int | None
    values_batch_size: int
    #: Walks read in one request by the chain queries before their grouped ones: a topic with at most this
    #: many walks along a path gets its ends and a witness of each from that read alone (the same ends
    #: and witnesses as the grouped queries); a hub's first walks give the ends and witnesses they hold,
    #: and the grouped queries run only for what they miss. 0: the grouped queries only.
    walk_rows: int = 2000

    if TYPE_CHECKING:

        def _select(self, query: str) -> list[Row]: ...
        def _eterm(self, entity: str) -> str | None: ...
        def _rterm(self, relation: str) -> str | None: ...
        def _capped(self, limit: int | None) -> int | None: ...
        def _paged(self, limit: int | None) -> bool: ...
        def _pages(self, query: str, order: str, want: int) -> list[Row]: ...
        def _cached(self, key: Hashable, compute: Any) -> Any: ...

    def _chain_terms(
        self, topic: str, relation_path: Sequence[str]
    ) -> tuple[str, list[tuple[str, bool]]] | None:
        steps = parse_relation_path(relation_path)
        term = self._eterm(topic)
        rterms = [(self._rterm(r), inv) for r, inv in steps]
        if term is None or any(r is None for r, _ in rterms):
            return None
        return term, rterms  # type: ignore[return-value]

    def chain_ends(
        self, topic: str, relation_path: Sequence[str], *, limit: int | None = None
    ) -> tuple[list[str], bool]:
        """The entities ``relation_path`` reaches from ``topic``, at most ``limit`` (and ``max_neighbors``),
        and whether there were more (see :class:`~kg_agents.kg.base.ChainQueries`): from the first
        ``walk_rows`` walks when they hold them all or more than ``limit`` ends, else one ``SELECT
        DISTINCT .. LIMIT limit+1``, or pages of ``page_size``."""
        check_limit(limit)
        limit = self._capped(limit)
        found = self._chain_terms(topic, relation_path)
        if found is None:
            return [], False
        term, steps = found

        def compute() -> tuple[list[str], bool]:
            read = self._walk_read(topic, relation_path, term, steps)
            if read is not None:
                walks, complete = read
                seen = list(dict.fromkeys(self.profile.entity_id(w[-1]) for w in walks))
                if limit is not None and len(seen) > limit:
                    return seen[:limit], True
                if complete:
                    return seen, False
            var = f"x{len(steps)}"
            paged = self._paged(limit)
            rows = self._select(chain_ends_query(term, steps, self.page_size if paged else limit))
            if paged and len(rows) > int(self.page_size):  # type: ignore[arg-type]
                # more than a page: read again, in pages
                rows = self._pages(chain_ends_query(term, steps, None), f"?{var}", int(limit) + 1)  # type: ignore[arg-type]
            ends = list(dict.fromkeys(self.profile.entity_id(r[var].value) for r in rows if var in r))
            if limit is not None and len(ends) > limit:
                return ends[:limit], True
            return ends, False

        ends, cut = self._cached(("chain", topic, tuple(relation_path), limit), compute)
        return list(ends), bool(cut)

    def chain_witnesses(
        self, topic: str, relation_path: Sequence[str], ends: Sequence[str]
    ) -> dict[str, Path]:
        """One walk from ``topic`` along ``relation_path`` to each of ``ends`` it reaches, the least by its
        inner nodes' IRIs: from the first ``walk_rows`` walks (one request, shared with ``chain_ends``),
        then, for the ends those walks miss when there were more, one grouped query per
        ``values_batch_size`` ends."""
        rel_steps = parse_relation_path(relation_path)
        found = self._chain_terms(topic, relation_path)
        out: dict[str, Path] = {}
        if found is None:
            return out
        term, steps = found

        def walk(end: str, inner: Sequence[str]) -> Path | None:
            nodes = [topic, *(self.profile.entity_id(x) for x in inner), end]
            if len(nodes) != len(steps) + 1:
                return None
            return Path(
                tuple(Hop(nodes[k], rel, nodes[k + 1], inverse) for k, (rel, inverse) in enumerate(rel_steps))
            )

        targets = {e: t for e in dict.fromkeys(ends) if e != topic and (t := self._eterm(e)) is not None}
        read = self._walk_read(topic, relation_path, term, steps)
        if read is not None:
            walks, complete = read
            wanted = {t[1:-1]: e for e, t in targets.items()}
            least: dict[str, tuple[str, tuple[str, ...]]] = {}  # end -> (inner IRIs joined, inner IRIs)
            for w in walks:
                end = wanted.get(w[-1])
                key = " ".join(w[:-1])
                if end is not None and (end not in least or key < least[end][0]):
                    least[end] = (key, w[:-1])
            for end, (_, inner) in least.items():
                if (p := walk(end, inner)) is not None:
                    out[end] = p
            if complete:
                return out
            targets = {e: t for e, t in targets.items() if e not in least}
        items = list(targets.items())
        var = f"x{len(steps)}"
        size = max(1, self.values_batch_size)
        for i in range(0, len(items), size):
            chunk = dict(items[i : i + size])
            by_iri = {t[1:-1]: e for e, t in chunk.items()}
            for row in self._select(chain_witness_query(term, steps, list(chunk.values()))):
                end = by_iri.get(row[var].value) if var in row else None
                if end is None or ("w" not in row and len(steps) > 1):
                    continue
                nodes = row["w"].value.split(" ") if len(steps) > 1 else []
                if (p := walk(end, nodes)) is not None:
                    out[end] = p
        return out

    def _walk_read(
        self, topic: str, relation_path: Sequence[str], term: str, steps: Sequence[tuple[str, bool]]
    ) -> tuple[list[tuple[str, ...]], bool] | None:
        """The first ``walk_rows`` walks from ``topic`` along ``relation_path`` (each the IRIs of its nodes
        after the topic) and whether they are all of them: one request, cached; None when ``walk_rows``
        is 0. Never more rows than ``page_size``."""
        want = min(self.walk_rows, self.page_size or self.walk_rows)
        if want < 1:
            return None
        n = len(steps)
        names = [f"x{i}" for i in range(1, n + 1)]

        def compute() -> tuple[list[tuple[str, ...]], bool]:
            rows = self._select(chain_walks_query(term, steps, want + 1))
            walks = [tuple(r[v].value for v in names) for r in rows[:want] if all(v in r for v in names)]
            return walks, len(rows) <= want

        return self._cached(("walks", topic, tuple(relation_path), want), compute)
