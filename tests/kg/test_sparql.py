"""SparqlKG: unit tests against an in-process endpoint, and the contract against real servers."""

from __future__ import annotations

import random
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from kg_agents.errors import ConfigError, EndpointError, EntityNotFound, KGError
from kg_agents.kg import open_kg
from kg_agents.kg.base import Triple, verify_path
from kg_agents.kg.servers import free_port
from kg_agents.kg.sparql import SparqlKG
from kg_agents.kg.testing import CONTRACT_TRIPLES, KnowledgeGraphContract, write_contract_ntriples
from tests.servers import CONTRACT_GRAPH, CONTRACT_PROFILE, METAQA_GRAPH


# ---------------------------------------------------------------------------- an in-process endpoint
class MiniEndpoint:
    """A SPARQL 1.1 protocol endpoint over an in-memory pyoxigraph store, recording every request.

    ``mode`` sets its behaviour: ``ok``; ``slow`` (sleeps ``delay`` s first); ``error500``,
    ``error400``, ``garbage``; ``flaky`` (HTTP 500 for the first ``fail_first`` requests).
    """

    def __init__(self, nt_path: Any) -> None:
        import pyoxigraph as ox

        self.store = ox.Store()
        self.store.load(path=str(nt_path), format=ox.RdfFormat.N_TRIPLES)
        self.requests: list[dict[str, Any]] = []
        self.mode = "ok"
        self.delay = 0.0
        self.fail_first = 0
        self.max_selects = 1_000_000
        self.in_flight = self.most_in_flight = 0  # requests being answered at once, and the most seen
        self._flight_lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self, params: dict[str, list[str]]) -> None:
                with outer._flight_lock:
                    outer.in_flight += 1
                    outer.most_in_flight = max(outer.most_in_flight, outer.in_flight)
                try:
                    self._answer(params)
                finally:
                    with outer._flight_lock:
                        outer.in_flight -= 1

            def _answer(self, params: dict[str, list[str]]) -> None:
                import pyoxigraph as ox

                ctype = self.headers.get("Content-Type", "")
                rec = {"method": self.command, "params": params, "content_type": ctype}
                outer.requests.append(rec)
                if outer.mode == "slow":
                    time.sleep(outer.delay)
                flaky = outer.mode == "flaky" and len(outer.requests) <= outer.fail_first
                if outer.mode == "error500" or flaky:
                    return self._reply(500, b"boom", "text/plain")
                if (
                    outer.mode == "complex"
                    and params.get("query", [""])[0].count("SELECT") > outer.max_selects
                ):
                    return self._reply(500, b"Virtuoso 42000 Error SQ200: Stack Overflow", "text/plain")
                if outer.mode == "error400":
                    return self._reply(400, b"bad query", "text/plain")
                if outer.mode == "garbage":
                    return self._reply(200, b"<html>not json</html>", "application/sparql-results+json")
                if "update" in params or "sparql-update" in ctype:
                    return self._reply(403, b"no updates here", "text/plain")
                try:
                    res = outer.store.query(params["query"][0])
                except (SyntaxError, KeyError) as exc:
                    return self._reply(400, str(exc).encode(), "text/plain")
                body = res.serialize(format=ox.QueryResultsFormat.JSON)
                return self._reply(200, body, "application/sparql-results+json")

            def _reply(self, code: int, body: bytes, ctype: str) -> None:
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                self._handle(urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query))

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n).decode("utf-8")
                ctype = self.headers.get("Content-Type", "")
                if "sparql-update" in ctype:
                    self._handle({"update": [body]})
                elif "sparql-query" in ctype:
                    self._handle({"query": [body]})
                else:
                    self._handle(urllib.parse.parse_qs(body))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/query"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MiniEndpoint]:
    ep = MiniEndpoint(write_contract_ntriples(tmp_path_factory.mktemp("mini") / "c.nt"))
    yield ep
    ep.close()


@pytest.fixture
def endpoint(mini: MiniEndpoint) -> MiniEndpoint:
    mini.mode, mini.delay, mini.fail_first, mini.max_selects = "ok", 0.0, 0, 1_000_000
    mini.most_in_flight = 0
    mini.requests.clear()
    return mini


def subqueries_kg(endpoint: MiniEndpoint, **options: Any) -> SparqlKG:
    """A ``SparqlKG`` on the mini endpoint that reads limited batches with their subqueries only (the
    request counts and batch halving these tests follow), no cache."""
    return SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, cache_size=0, values_first=False, **options)


class TestSparqlKGMiniEndpointContract(KnowledgeGraphContract):
    """The conformance suite over HTTP against the in-process endpoint (no server needed)."""

    @pytest.fixture(scope="class")
    @classmethod
    def kg(cls, mini: MiniEndpoint) -> SparqlKG:
        mini.mode = "ok"
        return SparqlKG(mini.url, profile=CONTRACT_PROFILE, cache_size=0)


def _exercise(kg: SparqlKG) -> None:
    kg.neighbors("Splash")
    kg.neighbors("Tom Hanks", direction="in", limit=2)
    kg.neighbors_many(["Splash", "Big", "Amélie"], direction="both", limit=1)
    kg.neighbors_many(["Splash", "Big"], relation="directed_by")
    kg.degree("Big", direction="both")
    kg.relations("Amélie", direction="both")
    kg.has_triple("Splash", "written_by", "Babaloo Mandel")
    kg.has_entity("Big")
    kg.label("Tom Hanks")
    kg.features("Splash")
    kg.all_relations()
    list(kg.iter_labels())
    kg.fingerprint()
    with pytest.raises(EntityNotFound):
        kg.label("nope } . ?s ?p ?o")


def test_only_select_and_ask_are_sent(endpoint: MiniEndpoint) -> None:
    from rdflib.plugins.sparql import prepareQuery

    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE)
    _exercise(kg)
    assert endpoint.requests, "no request reached the endpoint"
    for rec in endpoint.requests:
        assert "update" not in rec["params"]
        assert "sparql-update" not in rec["content_type"]
        (query,) = rec["params"]["query"]
        parsed = prepareQuery(query)  # an update would not parse as a query
        assert parsed.algebra.name in ("SelectQuery", "AskQuery")


def test_max_neighbors_caps_every_read_and_page_size_splits_it(endpoint: MiniEndpoint) -> None:
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, cache_size=0, max_neighbors=3, page_size=2)
    got = kg.neighbors("Tom Hanks", direction="in")  # 4 edges, no limit asked: the cap holds
    assert len(got) == 3 and got.truncated and got.total is None
    # a page-sized read first (3 rows: more than a page), then again in pages of 2 (the 4th row: the cut)
    assert len(endpoint.requests) == 3
    assert all("ORDER BY ?r ?s LIMIT 2" in r["params"]["query"][0] for r in endpoint.requests[1:])
    assert kg.neighbors("Tom Hanks", direction="in", limit=2) == got[:2]  # the same order, within a page
    both = kg.neighbors("Big", direction="both")  # out-edges, then in-edges, over pages
    assert set(both) == {Triple(h, r, t) for h, r, t in CONTRACT_TRIPLES if "Big" in (h, t)}
    ends, cut = kg.chain_ends("Tom Hanks", ["~starred_actors", "directed_by"])
    assert len(ends) == 3 and not cut
    assert kg.chain_ends("Tom Hanks", ["~starred_actors"]) == (["Big", "Cast Away", "Forrest Gump"], True)
    uncapped = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, max_neighbors=None)
    assert len(uncapped.neighbors("Tom Hanks", direction="in")) == 4
    for bad in ({"max_neighbors": 0}, {"page_size": 0}, {"page_size": None}, {"max_neighbors": True}):
        with pytest.raises(ConfigError):
            SparqlKG(endpoint.url, **bad)  # type: ignore[arg-type]


def test_update_is_refused_before_sending(endpoint: MiniEndpoint) -> None:
    kg = SparqlKG(endpoint.url)
    for q in (
        'INSERT DATA { <http://a> <http://b> "c" }',
        "PREFIX x: <http://x/> DELETE WHERE { ?s ?p ?o }",
        "CLEAR ALL",
        "LOAD <http://example.org/x.nt>",
        "CONSTRUCT { ?s ?p ?o } WHERE { ?s ?p ?o }",
    ):
        with pytest.raises(KGError, match="read-only"):
            kg._request(q)
    assert endpoint.requests == []


def test_neighbors_many_is_one_round_trip(endpoint: MiniEndpoint) -> None:
    kg = subqueries_kg(endpoint)
    ents = ["Splash", "Parenthood", "Big", "Amélie", "Cast Away", "Forrest Gump", "Tom Hanks", "Nope"]
    for direction in ("out", "in", "both"):
        for limit in (None, 1, 3):
            before = kg.requests_sent
            got = kg.neighbors_many(ents, direction=direction, limit=limit)
            assert kg.requests_sent - before == 1, (direction, limit)
            for e in ents:
                assert set(got[e]) <= set(kg.neighbors(e, direction=direction)), e
    got = kg.neighbors_many(ents, direction="in", limit=2)
    assert len(got["Tom Hanks"]) == 2 and got["Tom Hanks"].truncated
    assert got["Nope"] == [] and not got["Nope"].truncated


def test_values_first_gives_the_lists_of_the_subqueries(endpoint: MiniEndpoint) -> None:
    """A limited batch is one ``VALUES`` block when no entity is past the limit; those past it (and a
    block that comes back full) are read again with a subquery each; the lists are the same either way."""
    ents = ["Splash", "Parenthood", "Big", "Amélie", "Cast Away", "Forrest Gump", "Tom Hanks", "Nope"]
    plain = subqueries_kg(endpoint)
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, cache_size=0)
    assert kg.values_first is True
    for direction in ("out", "in", "both"):
        for limit in (0, 1, 3, 10):
            want = plain.neighbors_many(ents, direction=direction, limit=limit)
            first = len(endpoint.requests)
            got = kg.neighbors_many(ents, direction=direction, limit=limit)
            sent = [r["params"]["query"][0] for r in endpoint.requests[first:]]
            assert got == want and all(got[e].truncated == want[e].truncated for e in ents)
            assert "{ SELECT" not in sent[0] and "VALUES" in sent[0]  # the block first
            past = {e for e in ents if want[e].truncated}
            edges = sum(len(plain.neighbors(e, direction=direction)) for e in ents)
            if edges > len(ents) * (limit + 1):  # the block came back full: every entity again
                past = set(ents)
            if not past:
                assert len(sent) == 1, (direction, limit)
            else:  # the entities past the limit, and only they, read again with their subqueries
                assert len(sent) == 2 and "{ SELECT" in sent[1], (direction, limit)
                assert {e for e in ents if str(kg._eterm(e)) in sent[1]} == past, (direction, limit)
    # a block that comes back full (more rows than the subqueries could give) is read the usual way
    kg.page_size = 2  # the block holds 2 rows at most; Tom Hanks alone has 4 in-edges
    first = len(endpoint.requests)
    got = kg.neighbors_many(["Tom Hanks", "Splash"], direction="in", limit=1)
    sent = [r["params"]["query"][0] for r in endpoint.requests[first:]]
    assert got == plain.neighbors_many(["Tom Hanks", "Splash"], direction="in", limit=1)
    assert len(sent) == 2 and sent[0].endswith("LIMIT 3") and "{ SELECT" in sent[1]
    # one entity, or no limit: no block first
    kg.page_size = 5_000
    first = len(endpoint.requests)
    kg.neighbors_many(["Tom Hanks"], direction="in", limit=3)
    kg.neighbors_many(ents, direction="in")
    assert len(endpoint.requests) - first == 2
    with pytest.raises(ConfigError):
        SparqlKG(endpoint.url, values_first="yes")  # type: ignore[arg-type]


def test_relations_many_is_one_request_then_cached(endpoint: MiniEndpoint) -> None:
    ents = ["Splash", "Tom Hanks", "Amélie", "Nope", "Splash"]
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE)
    one = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, cache_size=0)
    for direction in ("out", "in", "both"):
        sent = kg.requests_sent
        got = kg.relations_many(ents, direction)
        assert kg.requests_sent - sent == 1, direction
        assert got == {e: one.relations(e, direction) for e in ents}  # the same lists, in order
        assert [kg.relations(e, direction) for e in ents] == [got[e] for e in ents]
        assert kg.requests_sent - sent == 1  # read from the cache
    kg.values_batch_size = 2
    kg.clear_cache()
    sent = kg.requests_sent
    assert kg.relations_many(ents, "out") == {e: one.relations(e, "out") for e in ents}
    assert kg.requests_sent - sent == 2  # 3 known entities, 2 a query ("Nope" is known to the profile)
    with pytest.raises(ValueError):
        kg.relations_many(ents, "sideways")  # type: ignore[arg-type]


def test_neighbors_limit_zero_and_truncation(endpoint: MiniEndpoint) -> None:
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE)
    got = kg.neighbors("Tom Hanks", direction="in", limit=0)
    assert got == [] and got.truncated
    got = kg.neighbors("Tom Hanks", direction="in", limit=4)
    assert len(got) == 4 and not got.truncated and got.total == 4
    got = kg.neighbors("Tom Hanks", direction="in", limit=3)
    assert len(got) == 3 and got.truncated
    assert len(kg.neighbors("Big", direction="both", limit=2)) == 2


def test_ordered_cut_is_reproducible(endpoint: MiniEndpoint) -> None:
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, ordered=True)
    got = kg.neighbors("Tom Hanks", direction="in", limit=2)
    assert [t.head for t in got] == ["Big", "Cast Away"] and got.truncated
    assert "ORDER BY" in endpoint.requests[-1]["params"]["query"][0]
    SparqlKG(endpoint.url, profile=CONTRACT_PROFILE).neighbors("Tom Hanks", direction="in", limit=2)
    assert "ORDER BY" not in endpoint.requests[-1]["params"]["query"][0]


def test_rejected_batches_are_halved(endpoint: MiniEndpoint) -> None:
    endpoint.mode, endpoint.max_selects = "complex", 5  # at most 4 subqueries per request
    ents = ["Splash", "Parenthood", "Big", "Amélie", "Cast Away", "Forrest Gump", "Tom Hanks", "Nope"]
    kg = subqueries_kg(endpoint, retries=0)
    got = kg.neighbors_many(ents, direction="both", limit=3)
    assert kg.batch_size == 2  # 2 entities x 2 directions = 4 subqueries
    endpoint.mode = "ok"
    want = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE).neighbors_many(ents, direction="both", limit=3)
    assert got == want and all(got[e].truncated == want[e].truncated for e in ents)
    endpoint.mode, endpoint.max_selects = "complex", 1
    from kg_agents.kg.sparql import QueryRejected

    with pytest.raises(QueryRejected) as ei:
        kg.neighbors_many(ents, limit=3)
    assert ei.value.status == 500 and "Stack Overflow" in str(ei.value)


def test_a_batch_halved_mid_call_leaves_no_entity_out(endpoint: MiniEndpoint) -> None:
    """A transient HTTP 500 on the first of several batches halves batch_size during the call: the next
    batches take the smaller size and every entity is still fetched (it used to skip the entities between
    the old and the new batch ends, and the call raised KeyError)."""
    ents = ["Splash", "Parenthood", "Big", "Amélie", "Cast Away", "Forrest Gump", "Tom Hanks", "Ron Howard"]
    ents += ["Nope", "Nada"]
    want = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, cache_size=0).neighbors_many(ents, limit=3)
    endpoint.requests.clear()
    endpoint.mode, endpoint.fail_first = "flaky", 1  # the first request fails, then all pass
    kg = subqueries_kg(endpoint, batch_size=4, parallel_requests=1, retries=0)
    got = kg.neighbors_many(ents, limit=3)
    assert got == want and list(got) == ents
    assert kg.batch_size == 2 and kg.requests_sent == 1 + 5  # the failed batch of 4, then 5 batches of 2


def test_batches_are_sent_at_once_and_give_what_one_after_another_gives(endpoint: MiniEndpoint) -> None:
    """``parallel_requests`` batches are in flight together; the answer is the sequential one, in the
    order asked, and every request is counted. A batch rejected in a wave is halved like any other."""
    ents = ["Splash", "Parenthood", "Big", "Amélie", "Cast Away", "Forrest Gump", "Tom Hanks", "Ron Howard"]
    ents += ["Nope", "Nada"]
    one = subqueries_kg(endpoint, batch_size=2, parallel_requests=1)
    want = one.neighbors_many(ents, direction="both", limit=3)
    assert one.requests_sent == 5
    assert endpoint.most_in_flight == 1
    endpoint.mode, endpoint.delay = "slow", 0.2  # long enough for the other threads' requests to arrive
    kg = subqueries_kg(endpoint, batch_size=2, parallel_requests=3)
    got = kg.neighbors_many(ents, direction="both", limit=3)
    assert got == want and list(got) == ents
    assert all(got[e].truncated == want[e].truncated for e in ents)
    assert kg.requests_sent == 5 and endpoint.most_in_flight >= 2
    endpoint.requests.clear()
    endpoint.mode, endpoint.max_selects = "complex", 3  # one entity x 2 directions a request at most
    kg = subqueries_kg(endpoint, batch_size=2, parallel_requests=3, retries=0)
    assert kg.neighbors_many(ents, direction="both", limit=3) == want and kg.batch_size == 1


def test_chain_witnesses_send_one_values_block_per_witness_batch(endpoint: MiniEndpoint) -> None:
    """Without the walk read, witnesses are grouped by ``values_batch_size``, not by ``neighbors_many``'s
    ``batch_size``."""
    path = ["~starred_actors", "directed_by"]
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, batch_size=1, cache_size=0, walk_rows=0)
    ends = [*kg.chain_ends("Tom Hanks", path)[0], "Steve Martin", "No Such Movie"]
    sent = kg.requests_sent
    want = kg.chain_witnesses("Tom Hanks", path, ends)
    assert len(want) >= 2 and kg.requests_sent - sent == 1
    kg.values_batch_size = 1
    sent = kg.requests_sent
    got = kg.chain_witnesses("Tom Hanks", path, ends)
    assert got == want and kg.requests_sent - sent == len(ends)


def test_chain_queries_of_a_topic_with_few_walks_read_them_once(endpoint: MiniEndpoint) -> None:
    """``chain_ends`` and ``chain_witnesses`` share one read of the walks (no ``DISTINCT``, no grouping),
    and give what the grouped queries give."""
    path = ["~starred_actors", "directed_by"]
    grouped = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, walk_rows=0)
    want_ends, want_cut = grouped.chain_ends("Tom Hanks", path)
    asked = [*want_ends, "Steve Martin", "No Such Movie"]
    want = grouped.chain_witnesses("Tom Hanks", path, asked)
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE)
    first = len(endpoint.requests)
    ends, cut = kg.chain_ends("Tom Hanks", path)
    got = kg.chain_witnesses("Tom Hanks", path, asked)
    assert sorted(ends) == sorted(want_ends) and cut is want_cut is False
    assert got == want and len(got) == 3
    sent = [r["params"]["query"][0] for r in endpoint.requests[first:]]
    assert len(sent) == 1 and "LIMIT 2001" in sent[0] and "DISTINCT" not in sent[0] and "GROUP" not in sent[0]
    assert kg.chain_ends("Tom Hanks", path, limit=2) == (ends[:2], True)  # from the same read
    assert len(endpoint.requests) == first + 1


def test_chain_witnesses_beyond_the_walk_read(endpoint: MiniEndpoint) -> None:
    """More walks than ``walk_rows``: the walks read witness the ends they reach, a grouped query the
    others; every witness is a walk of the path, and the ends are those of the grouped queries."""
    path = ["~starred_actors", "directed_by"]
    grouped = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, walk_rows=0)
    want_ends = grouped.chain_ends("Tom Hanks", path)[0]
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, walk_rows=1)
    ends, cut = kg.chain_ends("Tom Hanks", path)  # one walk read (cut), then the DISTINCT query
    assert sorted(ends) == sorted(want_ends) and not cut
    assert kg.chain_ends("Tom Hanks", path, limit=0) == ([], True)
    first = len(endpoint.requests)
    got = kg.chain_witnesses("Tom Hanks", path, ends)
    (grouped_query,) = [r["params"]["query"][0] for r in endpoint.requests[first:]]  # the read was cached
    assert set(got) == set(ends)
    for end, p in got.items():
        assert p.start == "Tom Hanks" and p.end == end and verify_path(grouped, p)
    # the one end the read's walk reaches is not asked again
    assert "GROUP BY" in grouped_query
    assert sum(str(kg._eterm(e)) in grouped_query for e in ends) == len(ends) - 1
    for bad in (-1, True, 1.5):
        with pytest.raises(ConfigError):
            SparqlKG(endpoint.url, walk_rows=bad)  # type: ignore[arg-type]


def test_batches_are_split(endpoint: MiniEndpoint) -> None:
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, batch_size=2, cache_size=0)
    kg.neighbors_many(["Splash", "Big", "Amélie", "Cast Away", "Parenthood"], limit=5)
    assert kg.requests_sent == 3


def test_cache_avoids_round_trips(endpoint: MiniEndpoint) -> None:
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE)
    a = kg.neighbors("Splash")
    n = kg.requests_sent
    b = kg.neighbors("Splash")
    assert a == b and kg.requests_sent == n
    b.append(b[0])  # results are copies: mutating one does not poison the cache
    assert kg.neighbors("Splash") == a
    kg.neighbors_many(["Splash", "Big"])
    assert kg.requests_sent == n + 1  # only Big was fetched
    kg.label("Splash")
    kg.label("Splash")
    assert kg.cache_info["hits"] >= 3
    kg.clear_cache()
    kg.neighbors("Splash")
    assert kg.requests_sent == n + 3


def test_labels_of_a_neighbour_list_are_read_in_one_request(endpoint: MiniEndpoint) -> None:
    """An entity met in a neighbour list has its label read with those met after it, in one request."""
    alone = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, readahead=0)
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE)
    films = [t.head for t in kg.neighbors("Tom Hanks", direction="in")]
    alone.neighbors("Tom Hanks", direction="in")
    assert len(films) == 4
    sent, sent_alone = kg.requests_sent, alone.requests_sent
    labels = [kg.label(f) for f in films]
    assert labels == [alone.label(f) for f in films] == films
    assert kg.requests_sent - sent == 1 and alone.requests_sent - sent_alone == 4
    assert kg.label("Tom Hanks") == "Tom Hanks" and kg.requests_sent - sent == 1  # read with the films
    with pytest.raises(EntityNotFound):  # an entity no list held is still asked about alone
        kg.label("No Such Film")
    # the last ``readahead`` entities met wait; the first film met is no longer among them
    short = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, readahead=2)
    met = [t.head for t in short.neighbors("Tom Hanks", direction="in")]
    sent = short.requests_sent
    assert [short.label(f) for f in met] == met and short.requests_sent - sent == 3
    kg.clear_cache()
    sent = kg.requests_sent
    assert kg.label(films[1]) == films[1] and kg.requests_sent - sent == 1


def test_an_entity_met_without_a_label_is_not_asked_about(tmp_path: Any) -> None:
    """A label-less entity from a neighbour list is its own label, without an existence check."""
    ep = MiniEndpoint(write_contract_ntriples(tmp_path / "bare.nt", with_labels=False))
    try:
        kg = SparqlKG(ep.url, profile=CONTRACT_PROFILE)
        alone = SparqlKG(ep.url, profile=CONTRACT_PROFILE, readahead=0)
        films = [t.head for t in kg.neighbors("Tom Hanks", direction="in")]
        alone.neighbors("Tom Hanks", direction="in")
        sent, sent_alone = kg.requests_sent, alone.requests_sent
        assert [kg.label(f) for f in films] == [alone.label(f) for f in films] == films
        assert kg.requests_sent - sent == 1
        assert alone.requests_sent - sent_alone == 2 * len(films)  # its labels, then whether it exists
        with pytest.raises(EntityNotFound):
            kg.label("No Such Film")
    finally:
        ep.close()


def test_long_queries_are_posted(endpoint: MiniEndpoint) -> None:
    kg = subqueries_kg(endpoint, post_threshold=500)
    kg.neighbors("Splash")
    kg.neighbors_many(["Big", "Amélie", "Cast Away", "Parenthood", "Forrest Gump"], limit=3)
    methods = [r["method"] for r in endpoint.requests]
    assert methods == ["GET", "POST"]
    assert "query" in endpoint.requests[1]["params"]


def test_timeout_is_per_attempt_then_endpoint_error(endpoint: MiniEndpoint) -> None:
    endpoint.mode, endpoint.delay = "slow", 3.0
    kg = SparqlKG(endpoint.url, timeout=0.3, retries=2, backoff=0.05)
    t0 = time.monotonic()
    with pytest.raises(EndpointError) as ei:
        kg.has_entity("http://x.org/a")
    elapsed = time.monotonic() - t0
    assert ei.value.endpoint == endpoint.url and endpoint.url in str(ei.value)
    assert "timed out" in str(ei.value) and "3 attempts" in str(ei.value)
    assert kg.requests_sent == 3
    # 3 attempts of at most 0.3 s plus backoff 0.05 + 0.1 s, with slack for a loaded machine
    assert elapsed < 0.9 + 0.15 + 0.6


def test_server_errors_are_retried(endpoint: MiniEndpoint) -> None:
    endpoint.mode, endpoint.fail_first = "flaky", 2
    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, retries=2, backoff=0.01)
    assert kg.has_triple("Splash", "written_by", "Babaloo Mandel")
    assert len(endpoint.requests) == 3
    endpoint.mode = "error500"
    endpoint.requests.clear()
    with pytest.raises(EndpointError, match="500"):
        SparqlKG(endpoint.url, retries=1, backoff=0.01).has_entity("http://x.org/a")
    assert len(endpoint.requests) == 2


def test_rejected_query_is_not_retried(endpoint: MiniEndpoint) -> None:
    endpoint.mode = "error400"
    kg = SparqlKG(endpoint.url, retries=3, backoff=0.01)
    with pytest.raises(EndpointError, match="QueryBadFormed"):
        kg.has_entity("http://x.org/a")
    assert len(endpoint.requests) == 1


def test_garbage_answer(endpoint: MiniEndpoint) -> None:
    endpoint.mode = "garbage"
    with pytest.raises(EndpointError, match="not SPARQL JSON"):
        SparqlKG(endpoint.url, retries=0).neighbors("http://x.org/a")


def test_unreachable_endpoint_names_it() -> None:
    url = f"http://127.0.0.1:{free_port()}/sparql"
    kg = SparqlKG(url, timeout=1.0, retries=1, backoff=0.01)
    with pytest.raises(EndpointError) as ei:
        kg.neighbors("http://x.org/a")
    assert ei.value.endpoint == url and "2 attempts" in str(ei.value)


def test_options_are_checked() -> None:
    with pytest.raises(ConfigError):
        SparqlKG("http://127.0.0.1:1/sparql", profile="nosuch")
    with pytest.raises(ConfigError, match="timeout"):
        SparqlKG("http://127.0.0.1:1/sparql", timeout=0)
    with pytest.raises(ConfigError, match="retries"):
        SparqlKG("http://127.0.0.1:1/sparql", retries=-1)
    for bad in (0, -2, 1.5, True, "4"):
        with pytest.raises(ConfigError, match="batch_size"):
            SparqlKG("http://127.0.0.1:1/sparql", batch_size=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match="parallel_requests"):
            SparqlKG("http://127.0.0.1:1/sparql", parallel_requests=bad)  # type: ignore[arg-type]
    for bad in (-1, 1.5, True, "4"):
        with pytest.raises(ConfigError, match="readahead"):
            SparqlKG("http://127.0.0.1:1/sparql", readahead=bad)  # type: ignore[arg-type]
    kg = open_kg("http://127.0.0.1:1/sparql", profile="freebase", timeout=2.0)
    assert isinstance(kg, SparqlKG) and kg.profile.name == "freebase" and kg.timeout == 2.0


def test_unrenderable_ids_are_not_in_the_kg(endpoint: MiniEndpoint) -> None:
    kg = SparqlKG(endpoint.url)  # generic profile: ids must be IRIs
    for bad in ("Tom Hanks", "http://a b", "<http://x>", "\ud800", "x" * 10_000, ""):
        assert kg.neighbors(bad) == []
        assert kg.neighbors_many([bad], limit=2) == {bad: []}
        assert kg.degree(bad) == 0 and kg.relations(bad) == [] and not kg.has_entity(bad)
        assert not kg.has_triple(bad, bad, bad)
        with pytest.raises(EntityNotFound):
            kg.label(bad)
    assert endpoint.requests == []  # nothing was even sent


def test_edges_are_listed_in_pages_each_once(endpoint: MiniEndpoint) -> None:
    from kg_agents.kg._query import triple_page_query
    from kg_agents.kg.testing import CONTRACT_TRIPLES

    kg = SparqlKG(endpoint.url, profile=CONTRACT_PROFILE, cache_size=0)
    kg.edge_page_size = 3  # a subject's edges fall on two pages
    assert kg.count_edges() == len(CONTRACT_TRIPLES)
    listed = [(t.head, t.relation, t.tail) for t in kg.iter_triples()]
    assert sorted(listed) == sorted(tuple(t) for t in CONTRACT_TRIPLES)
    queries = [r["params"]["query"][0] for r in endpoint.requests if "ORDER BY ?k" in r["params"]["query"][0]]
    assert len(queries) == len(CONTRACT_TRIPLES) // 3 + 1 and "OFFSET" not in "".join(queries)
    # the key a page starts after is a literal, escaped like every other
    hostile = triple_page_query('x" } . ?s ?p ?o . FILTER("', 10)
    assert '?k > "x\\" } . ?s ?p ?o . FILTER(\\""' in hostile


# ---------------------------------------------------------------------------- real servers
@pytest.mark.server
class TestSparqlKGOxigraphServerContract(KnowledgeGraphContract):
    @pytest.fixture(scope="class")
    @classmethod
    def kg(cls, oxigraph_server: Any) -> SparqlKG:
        return SparqlKG(oxigraph_server.endpoint, profile=CONTRACT_PROFILE, graph=CONTRACT_GRAPH)


@pytest.mark.server
class TestSparqlKGVirtuosoContract(KnowledgeGraphContract):
    @pytest.fixture(scope="class")
    @classmethod
    def kg(cls, virtuoso_server: Any) -> SparqlKG:
        return SparqlKG(virtuoso_server.endpoint, profile=CONTRACT_PROFILE, graph=CONTRACT_GRAPH)


def _sample_entities(n: int = 30, seed: int = 7) -> list[str]:
    mem = open_kg("metaqa")
    ents = sorted(e for e, _ in mem.iter_labels())
    return [*random.Random(seed).sample(ents, n), "Tom Hanks", "Ron Howard", "1984", "English"]


@pytest.mark.server
@pytest.mark.integration
def test_metaqa_matches_memorykg(sparql_server: Any) -> None:
    mem = open_kg("metaqa")
    kg = SparqlKG(sparql_server.endpoint, profile="metaqa", graph=METAQA_GRAPH, cache_size=0)
    ents = _sample_entities()
    assert set(kg.all_relations()) == set(mem.all_relations())
    for d in ("out", "in", "both"):
        kg.values_first = False
        before = kg.requests_sent
        many = kg.neighbors_many(ents, direction=d, limit=10)
        assert kg.requests_sent - before == -(-len(ents) // kg.batch_size)  # one request a batch
        kg.values_first = True  # a VALUES block first: the same lists
        assert kg.neighbors_many(ents, direction=d, limit=10) == many
        for e in ents:
            want = mem.neighbors(e, direction=d)
            got = kg.neighbors(e, direction=d)
            assert set(got) == set(want), (e, d)
            assert kg.degree(e, direction=d) == len(want)
            assert set(kg.relations(e, d)) == set(mem.relations(e, d))
            assert set(many[e]) <= set(want) and len(many[e]) == min(10, len(want))
            assert many[e].truncated == (len(want) > 10)
    hub = kg.neighbors("English", direction="in", limit=50)
    assert len(hub) == 50 and hub.truncated
    # ordered=True: a cut keeps the first edges by relation IRI, then other end's IRI
    from kg_agents.kg.profiles import PROFILES

    ordered = SparqlKG(sparql_server.endpoint, profile="metaqa", graph=METAQA_GRAPH, ordered=True)
    iri_of = PROFILES["metaqa"].entity_iri
    for e in ("Drama", "Tom Hanks"):
        full = sorted(mem.neighbors(e, direction="in"), key=lambda t: (t.relation, iri_of(t.head)))
        got = ordered.neighbors(e, direction="in", limit=7)
        assert got == full[:7] and got.truncated
    assert kg.has_triple("Splash", "written_by", "Babaloo Mandel")
    assert not kg.has_triple("Babaloo Mandel", "written_by", "Splash")
    assert kg.label("Tom Hanks") == "Tom Hanks"
    assert kg.features("Splash") == {"label": "Splash"}


@pytest.mark.server
@pytest.mark.integration
def test_webqsp_freebase_profile_on_oxigraph(tmp_path: Any) -> None:
    """The docs/sparql.md example: the WebQSP sample as Freebase-style RDF behind Oxigraph."""
    import gzip
    import json

    from kg_agents.data import data_path
    from kg_agents.kg import MemoryKG
    from kg_agents.kg.export import write_ntriples
    from kg_agents.kg.servers import OxigraphServer

    triples: dict[tuple[str, str, str], None] = {}
    with gzip.open(data_path("webqsp/webqsp_sample.jsonl.gz"), "rt", encoding="utf-8") as fh:
        for line in fh:
            for h, r, t in json.loads(line)["graph"]:
                triples[(h, r, t)] = None
    mem = MemoryKG(triples)
    stats = write_ntriples(list(triples), tmp_path / "webqsp.nt.gz", profile="freebase")
    assert stats.triples == len(mem)
    with OxigraphServer([stats.path]) as srv:
        kg = open_kg(srv.endpoint, profile="freebase")
        rel = "location.country.languages_spoken"
        got = kg.neighbors("Jamaica", relation=rel)
        assert got and {t.tail for t in got} == {t.tail for t in mem.neighbors("Jamaica", rel)}
        sample = random.Random(1).sample(sorted(e for e, _ in mem.iter_labels()), 20)
        for e in ["Jamaica", "m.0nf4wmg", *sample]:
            assert set(kg.neighbors(e, direction="both")) == set(mem.neighbors(e, direction="both")), e
        assert kg.label("Jamaica") == "Jamaica"
        assert set(kg.all_relations()) == set(mem.all_relations())


@pytest.mark.server
def test_oxigraph_server_that_cannot_load_says_why(tmp_path: Any) -> None:
    from kg_agents.kg.servers import OxigraphServer

    bad = tmp_path / "bad.nt"
    bad.write_text("<http://a> <http://b> .\n", encoding="utf-8")
    srv = OxigraphServer([bad])
    with pytest.raises(EndpointError, match="oxigraph load failed"):
        srv.start()
    srv.stop()
    with pytest.raises(FileNotFoundError):
        OxigraphServer([tmp_path / "missing.nt"])


@pytest.mark.server
def test_virtuoso_server_reports_bulk_load_errors(tmp_path: Any) -> None:
    from kg_agents.kg.servers import VirtuosoServer

    bad = tmp_path / "bad.nt"
    bad.write_text("<http://a> <http://b> .\n", encoding="utf-8")
    srv = VirtuosoServer([bad], graph="urn:bad")
    with pytest.raises(EndpointError, match="bulk load reported errors"):
        srv.start()
    assert srv.pid is None  # stopped
    with pytest.raises(ConfigError):
        VirtuosoServer({None: [bad]})


@pytest.mark.server
def test_servers_stop_and_clean_up(tmp_path: Any) -> None:
    import os

    from kg_agents.kg.servers import OxigraphServer

    p = write_contract_ntriples(tmp_path / "c.nt")
    with OxigraphServer([p]) as srv:
        pid, directory = srv.pid, srv.directory
        assert SparqlKG(srv.endpoint).count_triples() == 37
    assert srv.pid is None and not directory.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
