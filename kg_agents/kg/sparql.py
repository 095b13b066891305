"""``SparqlKG``: a read-only ``KnowledgeGraph`` over any SPARQL 1.1 endpoint (SPARQLWrapper).

Virtuoso, the Oxigraph server, Fuseki, QLever... Only ``SELECT`` and ``ASK`` queries are ever
sent (checked before each request). Every term is bound in a ``VALUES`` block rendered by
:mod:`kg_agents.kg.terms` through a :class:`~kg_agents.kg.profiles.Profile`; an id that cannot be
rendered is not in the KG (no neighbours, :class:`~kg_agents.errors.EntityNotFound` for its label),
never a query error.

``neighbors_many`` over N entities is one request when N <= ``batch_size``: with a limit, one
subquery per entity (``ORDER BY .. LIMIT limit+1``) joined by ``UNION``, so the limit is exact per
entity and truncation is reported; without a limit, one ``VALUES`` block. Larger reads send
``parallel_requests`` batches at once. ``max_neighbors`` (10,000)
caps every neighbour list whatever the limit, and a list longer than ``page_size`` (5,000) is read in
pages: a hub's neighbourhood never comes whole into the client.

Each attempt waits at most ``timeout`` seconds (enforced by a deadline, not only the socket
timeout); failed attempts are retried ``retries`` times with exponential backoff
(``backoff * 2**i`` seconds), then :class:`~kg_agents.errors.EndpointError` names the endpoint and the
reason. HTTP 4xx answers (a rejected query) are not retried.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import threading
import time
import urllib.error
from typing import Any

from kg_agents.errors import ConfigError, EndpointError
from kg_agents.kg._query import Node, Row, SparqlBackedKG, check_read_only, count_query
from kg_agents.kg.base import Direction, TripleList
from kg_agents.kg.profiles import PROFILES, Profile, get_profile

__all__ = ["PROFILES", "Profile", "QueryRejected", "SparqlKG"]

_USER_AGENT = "kg-agents (SparqlKG)"
#: HTTP statuses that say the endpoint is unavailable (overloaded, or the server behind a proxy is
#: down), not that it rejects this query: a batch answered so is not split in halves.
_UNAVAILABLE = frozenset({429, 502, 503, 504})


class _Retryable(Exception):
    """An attempt failed in a way that another attempt may fix."""

    def __init__(self, reason: str, status: int | None = None) -> None:
        super().__init__(reason)
        self.status = status


class _Fatal(_Retryable):
    """An attempt failed in a way that retrying cannot fix."""


class QueryRejected(EndpointError):
    """The endpoint answered a query with an HTTP error (4xx/5xx): e.g. a batch too complex for it.

    ``neighbors_many`` splits a rejected batch in halves and retries them.
    """

    def __init__(self, endpoint: str, reason: str, status: int) -> None:
        super().__init__(endpoint, reason)
        self.status = status


def _node(b: dict[str, Any]) -> Node:
    kind = b.get("type", "literal")
    if kind == "typed-literal":
        kind = "literal"
    return Node(kind, str(b.get("value", "")), b.get("xml:lang"))


class SparqlKG(SparqlBackedKG):
    """A read-only knowledge graph behind a SPARQL 1.1 endpoint.

    Args:
        endpoint: the query URL (``http://127.0.0.1:7878/query``, ``http://host:8890/sparql``).
        profile: the id scheme: ``"generic"`` (full IRIs), ``"metaqa"``, ``"freebase"``,
            ``"wikidata"`` or a :class:`~kg_agents.kg.profiles.Profile`.
        timeout: seconds one attempt may take, connection to last byte.
        retries: extra attempts after a failed one (connection errors, timeouts, HTTP 5xx/429).
        backoff: seconds before the first retry; doubled for each next one.
        cache_size: entries in the LRU cache of neighbour / label results (0 disables it).
        graph: a default graph IRI sent as ``default-graph-uri`` (Virtuoso's default dataset is
            every graph, its system graphs included).
        batch_size: entities per ``neighbors_many`` request (halved for good when the endpoint
            rejects a batch, e.g. Virtuoso's stack overflow on very large ``UNION`` s). A limited
            read sends one subquery per entity and direction; Virtuoso's time to compile the query
            grows faster than its branches, so small batches answer sooner.
        parallel_requests: ``neighbors_many`` batches sent at once, each on its own thread (1: one
            after another).
        readahead: the entities met in neighbour lists wait, the last this many, for their labels;
            the first ``label`` asked of one reads the labels of it and of the entities met after it
            in one query (``values_batch_size``, 128, at most), so that labelling a neighbour list
            costs a request, not one per entity, and a label-less entity (a mediator) is not asked
            about again. 0 reads each label alone.
        values_first: a batch of limited neighbour lists is read first as one ``VALUES`` block
            (at most 1,000 rows, and no more than its subqueries could give; a block that comes back
            full is read again with them), and only the entities past the limit again
            with a ``LIMIT`` subquery each, so every list is the one the subqueries alone give. Virtuoso
            compiles a ``VALUES`` block of 32 entities in a fraction of the time it takes for their 64
            ``UNION`` ed subqueries. False: the subqueries only.
        walk_rows: the walks of a chosen relation path read in one request (``LIMIT``) by
            ``chain_ends`` and ``chain_witnesses`` before their grouped queries: a topic with at most
            this many walks gets its ends and a witness of each from that read (the same as the grouped
            queries give), and a hub's first walks give the ends and witnesses they hold, so the engine
            does not enumerate every walk through the hub to pick one per end. 0: the grouped queries
            only.
        post_threshold: queries longer than this many characters are POSTed (shorter ones use GET).
        name: a short name (default: the endpoint URL).
        headers: extra HTTP headers (e.g. ``Authorization``).
        ordered: when a ``limit`` cuts a neighbour list, keep the first edges by relation and
            IRI (the same on every store) instead of the store's index order; this sorts all of a
            hub's edges on the server, which is much slower (see ``benchmarks/kg/stores.py``).
        max_neighbors: the most edges one entity's neighbour list holds, and the most ends
            ``chain_ends`` returns, whatever ``limit`` asks (a larger limit, or None, becomes this;
            ``TripleList.truncated`` says when it cut): a hub's neighbourhood never comes whole into
            the client. None lifts the cap.
        page_size: the most rows one request asks for: a neighbour list (or ``chain_ends``) longer than
            this is read in pages (``ORDER BY .. LIMIT .. OFFSET``), one entity at a time. Keep it
            below the endpoint's own row cap (Virtuoso's ``ResultSetMaxRows``, 10,000 by default),
            which otherwise cuts a large answer silently.

    Raises:
        ConfigError: an unknown profile.

    Example:
        >>> kg = SparqlKG("http://127.0.0.1:7878/query", profile="metaqa")  # doctest: +SKIP
        >>> kg.neighbors("Tom Hanks", direction="in", limit=3)  # doctest: +SKIP
        [Triple(head='Bachelor Party', relation='starred_actors', tail='Tom Hanks'), ...]
    """

    def __init__(
        self,
        endpoint: str,
        *,
        profile: str | Profile = "generic",
        timeout: float = 10.0,
        retries: int = 2,
        backoff: float = 0.5,
        cache_size: int = 10_000,
        graph: str | None = None,
        batch_size: int = 32,
        parallel_requests: int = 2,
        post_threshold: int = 2000,
        name: str | None = None,
        headers: dict[str, str] | None = None,
        ordered: bool = False,
        max_neighbors: int | None = 10_000,
        page_size: int = 5_000,
        readahead: int = 4096,
        walk_rows: int = 2000,
        values_first: bool = True,
    ) -> None:
        super().__init__(cache_size=cache_size, ordered=ordered)
        for option, value in (("readahead", readahead), ("walk_rows", walk_rows)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigError(f"{option} must be a non-negative integer, got {value!r}")
        self.readahead = readahead
        self.walk_rows = walk_rows
        if not isinstance(values_first, bool):
            raise ConfigError(f"values_first must be True or False, got {values_first!r}")
        self.values_first = values_first
        if timeout <= 0:
            raise ConfigError(f"timeout must be > 0 seconds, got {timeout!r}")
        if max_neighbors is not None and (not _positive(max_neighbors)):
            raise ConfigError(f"max_neighbors must be a positive integer or None, got {max_neighbors!r}")
        if not _positive(page_size):
            raise ConfigError(f"page_size must be a positive integer, got {page_size!r}")
        self.max_neighbors = max_neighbors
        self.page_size = page_size
        if retries < 0:
            raise ConfigError(f"retries must be >= 0, got {retries!r}")
        self.endpoint = endpoint
        self.profile = get_profile(profile)
        self.timeout = float(timeout)
        self.retries = int(retries)
        self.backoff = float(backoff)
        self.graph = graph
        if not _positive(batch_size):
            raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not _positive(parallel_requests):
            raise ConfigError(f"parallel_requests must be a positive integer, got {parallel_requests!r}")
        self.batch_size = int(batch_size)
        self.parallel_requests = int(parallel_requests)
        self.post_threshold = int(post_threshold)
        self.name = name or endpoint
        self.headers = dict(headers or {})
        self._fingerprint: str | None = None
        #: Number of HTTP requests sent (attempts included); useful in tests and usage reports.
        self.requests_sent = 0
        self._count_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"SparqlKG({self.endpoint!r}, profile={self.profile.name!r})"

    # ------------------------------------------------------------------ transport
    def _make_wrapper(self, query: str) -> Any:
        from SPARQLWrapper import GET, JSON, POST, URLENCODED, SPARQLWrapper

        sw = SPARQLWrapper(self.endpoint, agent=_USER_AGENT)
        sw.setQuery(query)
        if sw.isSparqlUpdateRequest():  # a second, independent check of check_read_only
            raise _Fatal("refusing to send an update: stores are read-only")
        sw.setReturnFormat(JSON)
        sw.setOnlyConneg(True)  # no 'format=' / 'output=' parameters; Accept header only
        if len(query) > self.post_threshold:
            sw.setMethod(POST)
            sw.setRequestMethod(URLENCODED)  # query=... form body: a query operation, never update=
        else:
            sw.setMethod(GET)
        if self.graph:
            sw.addDefaultGraph(self.graph)
        for k, v in self.headers.items():
            sw.addCustomHttpHeader(k, v)
        # SPARQLWrapper.setTimeout truncates to int seconds; the attribute takes a float.
        sw.timeout = self.timeout  # type: ignore[assignment]
        return sw

    def _attempt(self, query: str) -> dict[str, Any]:
        from SPARQLWrapper.SPARQLExceptions import (
            EndPointInternalError,
            EndPointNotFound,
            QueryBadFormed,
            Unauthorized,
            URITooLong,
        )

        sw = self._make_wrapper(query)
        try:
            res = sw.query()
            raw = res.response.read()
        except (QueryBadFormed, EndPointNotFound, Unauthorized, URITooLong) as exc:
            status = {QueryBadFormed: 400, EndPointNotFound: 404, Unauthorized: 401, URITooLong: 414}
            raise _Fatal(f"{type(exc).__name__}: {_short(exc)}", status[type(exc)]) from exc
        except EndPointInternalError as exc:
            raise _Retryable(f"HTTP 500: {_short(exc)}", 500) from exc
        except urllib.error.HTTPError as exc:
            if exc.code >= 500 or exc.code == 429:
                raise _Retryable(f"HTTP {exc.code} {exc.reason}", exc.code) from exc
            raise _Fatal(f"HTTP {exc.code} {exc.reason}", exc.code) from exc
        except urllib.error.URLError as exc:
            raise _Retryable(f"unreachable: {exc.reason}") from exc
        except (TimeoutError, ConnectionError, http.client.HTTPException, OSError) as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
        try:
            data = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise _Fatal(f"answer is not SPARQL JSON results: {raw[:120]!r}") from exc
        if not isinstance(data, dict) or ("boolean" not in data and "results" not in data):
            raise _Fatal(f"answer is not SPARQL JSON results: {raw[:120]!r}")
        return data

    def _attempt_with_deadline(self, query: str) -> dict[str, Any]:
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["ok"] = self._attempt(query)
            except (_Retryable, _Fatal) as exc:
                box["err"] = exc

        t = threading.Thread(target=work, name="SparqlKG-request", daemon=True)
        t.start()
        t.join(self.timeout)
        if t.is_alive():
            raise _Retryable(f"timed out after {self.timeout:g}s")
        if "err" in box:
            raise box["err"]
        return box["ok"]  # type: ignore[no-any-return]

    def _request(self, query: str) -> dict[str, Any]:
        """Send one read-only query with timeout, retries and backoff; return the JSON answer.

        Raises:
            KGError: the query is not SELECT/ASK (never sent).
            EndpointError: every attempt failed, or the endpoint rejected the query.
        """
        check_read_only(query)
        last: _Retryable | None = None
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            with self._count_lock:  # batches of one call may be sent from several threads
                self.requests_sent += 1
            try:
                return self._attempt_with_deadline(query)
            except _Fatal as exc:
                if exc.status is not None:
                    raise QueryRejected(self.endpoint, str(exc), exc.status) from exc
                raise EndpointError(self.endpoint, str(exc)) from exc
            except _Retryable as exc:
                last = exc
        assert last is not None
        reason = f"{last} ({self.retries + 1} attempts)"
        if last.status is not None:
            raise QueryRejected(self.endpoint, reason, last.status) from last
        raise EndpointError(self.endpoint, reason) from last

    def _fetch_edges(
        self, chunk: list[tuple[str, str]], rterm: str | None, direction: Direction, limit: int | None
    ) -> dict[str, TripleList]:
        """One request per chunk; a chunk the endpoint rejects (HTTP error) is split in halves.

        Virtuoso 7, for one, overflows its stack on a few hundred ``UNION`` branches. The smaller
        size is kept as ``batch_size`` for later calls once a half was answered. An endpoint that
        is unavailable (HTTP 429/502/503/504) is not a rejected batch: nothing is split.
        """
        try:
            return super()._fetch_edges(chunk, rterm, direction, limit)
        except QueryRejected as exc:
            if len(chunk) <= 1 or exc.status in _UNAVAILABLE:
                raise
            half = len(chunk) // 2
            # The first half fails too (the endpoint is failing, not this batch): the error
            # propagates and no other half is tried, so a failing endpoint costs log2(n) + 1 tries.
            out = self._fetch_edges(chunk[:half], rterm, direction, limit)
            self.batch_size = max(1, min(self.batch_size, half))  # kept only once a half succeeded
            out.update(self._fetch_edges(chunk[half:], rterm, direction, limit))
            return out

    def _select(self, query: str) -> list[Row]:
        data = self._request(query)
        try:
            bindings = data["results"]["bindings"]
            return [{k: _node(v) for k, v in b.items()} for b in bindings]
        except (KeyError, TypeError, AttributeError) as exc:
            raise EndpointError(self.endpoint, f"malformed SELECT results: {exc!r}") from exc

    def _ask(self, query: str) -> bool:
        data = self._request(query)
        if not isinstance(data.get("boolean"), bool):
            raise EndpointError(self.endpoint, "malformed ASK result")
        return bool(data["boolean"])

    # ------------------------------------------------------------------ info
    def count_triples(self) -> int:
        """The number of triples in the endpoint's default graph (one COUNT query)."""
        rows = self._select(count_query())
        return int(rows[0]["n"].value) if rows else 0

    def fingerprint(self) -> str:
        """Hash of the endpoint, default graph, profile and triple count (counted once)."""
        if self._fingerprint is None:
            d = hashlib.blake2b(digest_size=12)
            parts = [self.endpoint, self.graph or "", self.profile.describe(), str(self.count_triples())]
            d.update("\n".join(parts).encode())
            self._fingerprint = d.hexdigest()
        return self._fingerprint


def _positive(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _short(exc: BaseException, n: int = 300) -> str:
    return " ".join(str(exc).split())[:n]
