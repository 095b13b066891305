"""Fault injection between ``SparqlKG`` and a real Oxigraph server (marker ``server``).

A :class:`~tests.faultproxy.FaultProxy` on 127.0.0.1 forwards to the session's Oxigraph server and is
switched per test to a fault: responses slower than the timeout, HTTP 500, truncated bodies, closed
connections, a stopped upstream (HTTP 502). A private Oxigraph server is also stopped for real between
two calls. Expected: bounded retries with backoff, then ``EndpointError`` naming the endpoint; no call
waits longer than its bound; recovery once the fault clears; reasoning graphs end the question with the
error in ``errors``/``trace``; the evaluation runner goes on to the next question.

The time bounds are correctness bounds (timeout x attempts + backoff, with generous slack for a shared
machine), not benchmarks.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kg_agents import create_graph
from kg_agents.errors import EndpointError
from kg_agents.eval.datasets import Question
from kg_agents.eval.runner import PREDICTIONS, run_eval
from kg_agents.kg import SparqlKG, verify_path
from kg_agents.kg.servers import OxigraphServer
from kg_agents.kg.testing import write_contract_ntriples
from tests.fakes import FakeChat
from tests.faultproxy import FaultProxy
from tests.integration.test_garbage import CASE_IDS, CASES, CONTEXT, QUESTION, build, feed
from tests.servers import CONTRACT_GRAPH, CONTRACT_PROFILE, METAQA_GRAPH

pytestmark = [pytest.mark.server]

TIMEOUT, RETRIES, BACKOFF = 0.5, 2, 0.2
#: the neighbour queries (SELECT ?e ?r ?o ?s ...); linking uses ASK and label queries
NEIGHBOUR_QUERY = "SELECT ?e ?r ?o ?s"


def bound(timeout: float = TIMEOUT, retries: int = RETRIES, backoff: float = BACKOFF) -> float:
    """The longest a call may take: every attempt timing out plus every backoff, with slack."""
    nominal = timeout * (retries + 1) + sum(backoff * 2**i for i in range(retries))
    return 1.5 * nominal + 1.0


@pytest.fixture
def proxy(oxigraph_server: Any) -> Iterator[FaultProxy]:
    with FaultProxy(oxigraph_server.endpoint) as p:
        yield p


def faulty_kg(proxy: FaultProxy, **kw: Any) -> SparqlKG:
    opts: dict[str, Any] = {"timeout": TIMEOUT, "retries": RETRIES, "backoff": BACKOFF, "cache_size": 0}
    return SparqlKG(proxy.endpoint, profile="metaqa", graph=METAQA_GRAPH, **(opts | kw))


# ---------------------------------------------------------------------------- SparqlKG under faults
@pytest.mark.parametrize("mode", ["delay", "http500", "truncate", "close", "down"])
def test_fault_gives_bounded_retries_then_endpoint_error(proxy: FaultProxy, mode: str) -> None:
    kg = faulty_kg(proxy)
    assert kg.neighbors("Splash", direction="out")  # the path through the proxy works
    proxy.set(mode, delay=3 * TIMEOUT)
    proxy.log.clear()
    t0 = time.monotonic()
    with pytest.raises(EndpointError) as ei:
        kg.neighbors("Splash", direction="out")
    elapsed = time.monotonic() - t0
    assert ei.value.endpoint == proxy.endpoint and proxy.endpoint in str(ei.value)
    assert f"{RETRIES + 1} attempts" in str(ei.value)
    arrivals = proxy.faulted()
    assert len(arrivals) == RETRIES + 1  # bounded retries: exactly the attempts allowed
    # backoff between attempts: at least backoff * 2**i, at most one timeout more (plus slack)
    for i, (a, b) in enumerate(itertools.pairwise(arrivals)):
        assert b - a >= BACKOFF * 2**i * 0.9, (i, b - a)
        assert b - a <= TIMEOUT + BACKOFF * 2**i + 1.0, (i, b - a)
    assert elapsed <= bound(), elapsed
    proxy.set("pass")
    got = kg.neighbors("Splash", direction="out")  # recovery once the fault clears
    assert any(t.relation == "directed_by" and t.tail == "Ron Howard" for t in got)


def test_slow_answer_is_cut_at_the_timeout_without_retries(proxy: FaultProxy) -> None:
    kg = faulty_kg(proxy, retries=0)
    proxy.set("delay", delay=5.0)
    t0 = time.monotonic()
    # the socket timeout or the deadline, whichever fires first (both are the 0.5 s timeout)
    with pytest.raises(EndpointError, match=r"timed out"):
        kg.has_entity("Splash")
    assert time.monotonic() - t0 <= bound(retries=0)


def test_unavailable_endpoint_does_not_split_batches(proxy: FaultProxy) -> None:
    """HTTP 502 on a batch is an outage, not a query too big: no halving, batch_size unchanged."""
    kg = faulty_kg(proxy, batch_size=16)
    ents = ["Splash", "Big", "Amélie", "The Fly", "Cast Away", "Forrest Gump", "Parenthood", "Dad"]
    proxy.set("down")
    t0 = time.monotonic()
    with pytest.raises(EndpointError):
        kg.neighbors_many(ents, direction="both", limit=5)
    assert len(proxy.faulted()) == RETRIES + 1 and kg.batch_size == 16
    assert time.monotonic() - t0 <= bound()
    proxy.set("http500")  # a 500 may be a batch too complex (Virtuoso): halved down to one entity,
    proxy.log.clear()  # then given up, since one entity fails too; batch_size is kept
    with pytest.raises(EndpointError):
        kg.neighbors_many(ents, direction="both", limit=5)
    assert len(proxy.faulted()) == 4 * (RETRIES + 1)  # 8, 4, 2, 1 entities
    assert kg.batch_size == 16
    proxy.set("pass")
    got = kg.neighbors_many(ents, direction="both", limit=5)
    assert all(got[e] for e in ents) and kg.batch_size == 16


def test_server_stopped_mid_run_then_restarted(tmp_path: Path) -> None:
    """A real server stopped between two calls: EndpointError within the bound; back after restart."""
    nt = write_contract_ntriples(tmp_path / "contract.nt")
    srv = OxigraphServer([nt], directory=tmp_path / "srv")
    try:
        srv.start()
        kg = SparqlKG(
            srv.endpoint,
            profile=CONTRACT_PROFILE,
            timeout=TIMEOUT,
            retries=RETRIES,
            backoff=BACKOFF,
            cache_size=0,
        )
        assert kg.has_triple("Splash", "directed_by", "Ron Howard")
        port = srv.bound_port
        srv.stop()
        sent = kg.requests_sent
        t0 = time.monotonic()
        with pytest.raises(EndpointError) as ei:
            kg.neighbors("Splash")
        assert time.monotonic() - t0 <= bound()
        assert ei.value.endpoint == srv.endpoint and srv.endpoint in str(ei.value)
        assert kg.requests_sent - sent == RETRIES + 1
        srv.port = port  # the same endpoint URL comes back
        srv.start()
        assert kg.has_triple("Splash", "directed_by", "Ron Howard")
    finally:
        srv.stop()


def test_random_faults_are_seeded_and_counted(proxy: FaultProxy) -> None:
    """set_random: each request gets a fault drawn with the given rates; the same seed, the same faults."""
    kg = faulty_kg(proxy, retries=0)
    rates = {"delay": 0.1, "http500": 0.1, "close": 0.1}

    def run() -> list[bool]:
        proxy.log.clear()
        proxy.counts.clear()
        proxy.set_random(rates, seed=7, delay=0.0)  # a delay shorter than the timeout: answered
        failed = []
        for _ in range(120):
            try:
                failed.append(not kg.has_entity("Splash"))
            except EndpointError:
                failed.append(True)
        return failed

    failed = run()
    counts = dict(proxy.counts)
    assert sum(counts.values()) == len(proxy.log) == 120
    assert all(counts.get(m, 0) > 0 for m in [*rates, "pass"]), counts
    assert sum(failed) == counts["http500"] + counts["close"]  # a short delay is answered
    assert sum(hit for _, hit, _ in proxy.log) == 120 - counts["pass"]
    hits = [hit for _, hit, _ in proxy.log]
    assert run() == failed and [hit for _, hit, _ in proxy.log] == hits and dict(proxy.counts) == counts
    proxy.set("pass")
    assert kg.has_entity("Splash")
    for bad in ({"pass": 0.1}, {"slow": 0.1}, {"http500": -0.1}, {"http500": 0.6, "close": 0.6}):
        with pytest.raises(ValueError):
            proxy.set_random(bad)


# ---------------------------------------------------------------------------- graphs and the runner
def endpoint_steps(out: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in out.get("trace") or [] if s.get("endpoint")]


@pytest.mark.parametrize("match", [None, NEIGHBOUR_QUERY], ids=["all-queries", "neighbour-queries"])
def test_dualr_ends_with_the_error_in_its_trace(proxy: FaultProxy, match: str | None) -> None:
    """GNN-only DualR (no LLM): linking or exploration fails; the question ends, nothing raises."""
    from kg_agents.methods.dualr.gnn.encoding import get_text_encoder

    get_text_encoder()(["warm up"])  # loaded before the clock starts
    kg = faulty_kg(proxy)
    graph = create_graph("dualr", kg, answer_with="gnn")
    proxy.set("delay", delay=3 * TIMEOUT, match=match)
    proxy.log.clear()
    out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert len(proxy.faulted()) == RETRIES + 1  # one failing call, its attempts bounded; nothing after it
    assert out["answers"] == [] and out["paths"] == []
    steps = endpoint_steps(out)
    assert len(steps) == 1 and steps[0]["endpoint"] == proxy.endpoint
    assert steps[0]["node"] == ("link_entities" if match is None else "explore")
    assert any(e["endpoint"] == proxy.endpoint for e in out["errors"])
    proxy.set("pass")
    out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert out["answers"][:1] == ["Ron Howard"] and not out.get("errors")
    assert all(verify_path(kg, p) for p in out["paths"])


def test_graph_rag_ends_before_the_llm_when_retrieval_fails(proxy: FaultProxy) -> None:
    kg = faulty_kg(proxy)
    llm = FakeChat(replies=["Answer: Ron Howard"])
    graph = create_graph("graph_rag", kg, llm=llm)
    proxy.set("truncate", match=NEIGHBOUR_QUERY)
    out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert out["answers"] == [] and out["paths"] == []
    assert [s["node"] for s in endpoint_steps(out)] == ["retrieve"]
    assert out["usage"]["llm_calls"] == 0 and out["usage"]["kg_calls"] >= 2
    proxy.set("pass")
    out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert out["answers"] == ["Ron Howard"] and not out.get("errors")


def graph_rag_eval(questions: list[Question], out: Path, kg: SparqlKG, llm: FakeChat, **options: Any) -> Any:
    """``run_eval`` of graph_rag with ``llm`` over ``kg``, one question at a time, into ``out``."""
    return asyncio.run(
        run_eval(
            questions,
            out,
            method="graph_rag",
            dataset="faults",
            build_graph=lambda k: create_graph("graph_rag", k, llm=llm),
            kg_for=lambda q: kg,
            concurrency=1,
            progress=False,
            **options,
        )
    )


def test_eval_run_goes_on_after_a_question_whose_endpoint_failed(proxy: FaultProxy, tmp_path: Path) -> None:
    """3 questions; the endpoint fails (HTTP 500) for the 2nd only: 1 error, the other two scored."""
    kg = faulty_kg(proxy)
    questions = [
        Question("q1", "who directed [Splash]", ["Ron Howard"], ["Splash"]),
        Question("q2", "who starred in [Amélie]", ["Audrey Tautou"], ["Amélie"]),
        Question("q3", "who directed [Big]", ["Penny Marshall"], ["Big"]),
    ]
    term = kg.profile.entity_term("Amélie")  # only queries about the 2nd question's entity fail
    proxy.set("http500", match=term)
    llm = FakeChat(rules=[("[Splash]", "Answer: Ron Howard"), ("[Big]", "Answer: Penny Marshall")])
    summary = graph_rag_eval(questions, tmp_path / "run", kg, llm)
    assert summary["n"] == 3 and summary["errors"] == 1
    recs = {r["id"]: r for r in map(json.loads, (tmp_path / "run" / PREDICTIONS).read_text().splitlines())}
    assert recs["q2"]["error"] and proxy.endpoint in recs["q2"]["error"]
    assert recs["q2"]["predictions"] == [] and recs["q2"]["scores"]["hits@1"] == 0.0
    for qid, gold in (("q1", "Ron Howard"), ("q3", "Penny Marshall")):
        assert recs[qid]["error"] is None and recs[qid]["predictions"] == [gold]
        assert recs[qid]["scores"]["hits@1"] == 1.0 and recs[qid]["paths_faithful"] >= 1
    assert summary["hits@1"] == pytest.approx(2 / 3)
    assert sum(llm.calls.values()) == 2  # the failed question never reached the model
    assert proxy.faulted() and all(term in q for _, hit, q in proxy.log if hit)


def test_eval_run_stops_when_the_endpoint_stays_down_and_resumes(proxy: FaultProxy, tmp_path: Path) -> None:
    """Every question fails on the endpoint: the run stops after max_endpoint_failures, a rerun resumes."""
    down_kg = faulty_kg(proxy, retries=0)  # 502s fail at once: no timing in the first run
    # The resumed run checks resuming, not timeouts: a loaded machine can take longer than the 0.5 s
    # bound of the fault tests to answer, so it reads through a client with the usual slack.
    up_kg = faulty_kg(proxy, timeout=30.0, retries=2)
    questions = [
        Question(f"q{i}", f"who directed [{e}]", [d], [e])
        for i, (e, d) in enumerate(
            [("Splash", "Ron Howard"), ("Big", "Penny Marshall"), ("The Fly", "David Cronenberg")]
        )
    ]
    llm = FakeChat(
        rules=[
            ("[Splash]", "Answer: Ron Howard"),
            ("[Big]", "Answer: Penny Marshall"),
            ("[The Fly]", "Answer: David Cronenberg"),
        ]
    )

    def run(kg: SparqlKG) -> dict[str, Any]:
        return graph_rag_eval(questions, tmp_path / "run", kg, llm, max_endpoint_failures=2)

    proxy.set("down")
    with pytest.raises(EndpointError) as ei:
        run(down_kg)
    assert ei.value.endpoint == proxy.endpoint and "2 questions in a row" in str(ei.value)
    lines = (tmp_path / "run" / PREDICTIONS).read_text().splitlines()
    assert len(lines) == 2 and all(json.loads(ln)["error"] for ln in lines)
    proxy.set("pass")
    summary = run(up_kg)  # resumed: the failed questions are run again
    errors = [r["error"] for r in map(json.loads, (tmp_path / "run" / PREDICTIONS).read_text().splitlines())]
    assert summary["n"] == 3 and summary["errors"] == 0 and summary["hits@1"] == 1.0, errors


# ---------------------------------------------------------------------------- every method
@pytest.fixture(scope="module")
def contract_proxy(oxigraph_server: Any) -> Iterator[FaultProxy]:
    with FaultProxy(oxigraph_server.endpoint) as p:
        yield p


@pytest.mark.parametrize(("method", "options"), CASES, ids=CASE_IDS)
def test_every_method_ends_with_the_endpoint_error(
    contract_proxy: FaultProxy, method: str, options: tuple[tuple[str, Any], ...]
) -> None:
    """Each registered method (each strategy), the endpoint failing for each kind of query in turn."""
    proxy = contract_proxy
    kg = SparqlKG(
        proxy.endpoint,
        profile=CONTRACT_PROFILE,
        graph=CONTRACT_GRAPH,
        timeout=TIMEOUT,
        retries=0,
        cache_size=0,
    )
    proxy.set("pass")
    graph, model = build(method, options, kg)  # building may read the KG (graph_agent: its schema)
    feed(model, ["Answer: Ron Howard"])
    ctx = CONTEXT.get(method)
    for match in [None, NEIGHBOUR_QUERY, "SELECT ?p ?l", "SELECT DISTINCT ?r"]:
        proxy.set("http500", match=match)
        proxy.log.clear()
        out = graph.invoke(dict(QUESTION), **({"context": ctx} if ctx else {}))
        if proxy.faulted():
            steps = endpoint_steps(out)
            assert steps and all(s["endpoint"] == proxy.endpoint for s in steps), (match, out.get("trace"))
            assert out["answers"] == [] and out["paths"] == [], (match, out["answers"])
        assert all(verify_path(kg, p) for p in out.get("paths") or [])
