"""Bounded work on a Freebase-shaped hub: knowledge_navigator and graph_explore walk "who directed the
films starring [Hub Actor]" (three hops, through ``film.performance`` mediators) without any read
returning more than their cap, and trace the cut.

The graph is :class:`~kg_agents.kg.synthetic.FreebaseLike` at 30,000 triples: its actor hub plays in
about 750 films, directed by a few hundred people. Every read goes through :class:`Reads`, which records
each neighbour read and chain query with its limit and the number of entries it returned. The
``server`` tests read the same file through ``SparqlKG`` on an Oxigraph server, where ``max_neighbors``
caps a read that asks for no limit and ``page_size`` splits it into requests.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kg_agents.core.chains import chain_text
from kg_agents.kg import MemoryKG, SparqlKG, verify_path
from kg_agents.kg.mediators import MediatedKG
from kg_agents.kg.profiles import FREEBASE_NS
from kg_agents.kg.synthetic import MEDIATOR_TYPES, PROBE_PATH, FreebaseLike
from kg_agents.methods.graph_cot.graph import create_graph_explore_graph
from kg_agents.methods.knowledge_navigator.graph import create_knowledge_navigator_graph
from tests.fakes import FakeChat
from tests.kg.hop_by_hop import EngineJoinKG

CAP = 25
GEN = FreebaseLike(30_000, seed=0)
HUB = GEN.hub("actor").entity


def probe(ns: str) -> tuple[str, list[str]]:
    """The hub and the probe's relation path with ids under ``ns`` (MemoryKG's ids are the full IRIs)."""
    return ns + HUB, [("~" if r.startswith("~") else "") + ns + r.lstrip("~") for r in PROBE_PATH]


class Reads:
    """A store proxy recording ``(kind, entity, limit, entries returned)`` for every neighbour read and
    chain query."""

    def __init__(self, kg: Any) -> None:
        self.inner = kg
        self.reads: list[tuple[str, str, int | None, int]] = []

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)

    def neighbors(self, entity: str, relation: Any = None, direction: Any = "out", limit: Any = None) -> Any:
        got = self.inner.neighbors(entity, relation, direction, limit)
        self.reads.append(("neighbors", entity, limit, len(got)))
        return got

    def neighbors_many(
        self, entities: Sequence[str], relation: Any = None, direction: Any = "out", limit: Any = None
    ) -> Any:
        got = self.inner.neighbors_many(entities, relation, direction, limit)
        self.reads.extend(("neighbors", e, limit, len(tl)) for e, tl in got.items())
        return got

    def chain_ends(self, topic: str, relation_path: Sequence[str], *, limit: int | None = None) -> Any:
        ends, cut = self.inner.chain_ends(topic, relation_path, limit=limit)
        self.reads.append(("chain_ends", topic, limit, len(ends)))
        return ends, cut

    def chain_witnesses(self, topic: str, relation_path: Sequence[str], ends: Sequence[str]) -> Any:
        return self.inner.chain_witnesses(topic, relation_path, ends)


def oracle(path: list[str]) -> Any:
    """Scores: the probe's chain first; every other ranking in the options' order."""
    want = chain_text(tuple((r.lstrip("~"), "in" if r.startswith("~") else "out") for r in path))

    def scores(text: str, options: list[str]) -> list[float]:
        if ", then " in options[0]:  # the same score for every chain after the calibration prompt
            return [0.0 if o == want or "who directed" not in text else -5.0 for o in options]
        return [-float(i) for i in range(len(options))]

    return scores


@pytest.fixture(scope="module")
def nt(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hub-chains") / "fb.nt.gz"
    GEN.write(path)
    return path


@pytest.fixture(scope="module")
def memory_kg(nt: Path) -> MemoryKG:
    return MemoryKG.from_file(nt)


@pytest.fixture(scope="module")
def server_kg(nt: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparqlKG]:
    from kg_agents.errors import KGAgentsError
    from kg_agents.kg.servers import OxigraphServer

    try:
        srv = OxigraphServer([nt], directory=tmp_path_factory.mktemp("hub-chains-srv")).start()
    except (KGAgentsError, OSError) as exc:
        pytest.fail(f"OxigraphServer could not start: {exc}", pytrace=False)
    try:
        yield SparqlKG(srv.endpoint, profile="freebase", timeout=60, max_neighbors=40, page_size=16)
    finally:
        srv.stop()


def mediated(kg: Any, ns: str) -> tuple[MediatedKG, Reads]:
    """The view of ``kg`` with the graph's mediator types walked through, and the reads it makes of
    ``kg`` (its sample and fan-out at the cap)."""
    below = Reads(kg)
    types = [ns + t for t in MEDIATOR_TYPES]
    view = MediatedKG(below, types, type_relation=ns + "type.object.type", sample=CAP)
    return view, below


def check_bounded(kg: Any, method: str, ns: str = "") -> None:
    hub, path = probe(ns)
    if isinstance(kg, MediatedKG):  # the probe through its mediator is two hops of the view
        view_path = kg.view_path(path)
        assert view_path is not None and len(view_path) == 2, view_path
        path = view_path
    reads = Reads(kg)
    llm = FakeChat(logprobs=oracle(path), default="Thought: I follow the films.", tools=False)
    if method == "knowledge_navigator":
        graph = create_knowledge_navigator_graph(reads, llm=llm, num_variants=0, fanout_limit=CAP)
    else:
        graph = create_graph_explore_graph(reads, llm=llm, fanout_limit=CAP, max_steps=2)
    question = {"question": "who directed the films starring [Hub Actor]", "topic_entities": [hub]}
    out = graph.invoke(question, context={"hops": len(path)})
    assert not [e for e in out["errors"] if e.get("halted")], out["errors"]
    # no read returns more than the cap, and every read of the hub asked for a limit within it
    assert all(n <= CAP for *_, n in reads.reads), max(reads.reads, key=lambda r: r[3])
    at_hub = [r for r in reads.reads if r[1] == hub]
    assert at_hub and all(limit is not None and limit <= CAP for _, _, limit, _ in at_hub), at_hub
    # the chain was walked whole by the store, and its cut is in the trace
    assert ("chain_ends", hub, CAP, CAP) in reads.reads
    cut = f"{hub} {'/'.join(path)}"
    if method == "knowledge_navigator":
        expand = next(t for t in out["trace"] if t["node"] == "expand")
        assert expand["whole_chains"] and expand["fanout_truncated"] == [cut]
    else:
        level = next(t for t in out["trace"] if t["node"] == "expand")["search"][0]
        assert level["by"] == "whole chain" and level["ends"] == CAP and level["truncated"] == [cut]
    assert out["answers"] and out["paths"]
    assert all(verify_path(kg, p) and p.start == hub and len(p) == len(path) for p in out["paths"])


@pytest.mark.parametrize("method", ["knowledge_navigator", "graph_explore"])
def test_the_hub_chain_is_capped_and_traced_in_memory(memory_kg: MemoryKG, method: str) -> None:
    assert memory_kg.degree(FREEBASE_NS + HUB, direction="in") > 20 * CAP
    check_bounded(EngineJoinKG(memory_kg), method, FREEBASE_NS)


@pytest.mark.server
@pytest.mark.parametrize("method", ["knowledge_navigator", "graph_explore"])
def test_the_hub_chain_is_capped_and_traced_on_a_server(server_kg: SparqlKG, method: str) -> None:
    check_bounded(server_kg, method)


@pytest.mark.parametrize("method", ["knowledge_navigator", "graph_explore"])
def test_the_hub_chain_through_its_mediator_is_two_hops_in_memory(memory_kg: MemoryKG, method: str) -> None:
    view, below = mediated(EngineJoinKG(memory_kg), FREEBASE_NS)
    check_bounded(view, method, FREEBASE_NS)
    assert below.reads and all(n <= CAP for *_, n in below.reads), max(below.reads, key=lambda r: r[3])


@pytest.mark.server
@pytest.mark.parametrize("method", ["knowledge_navigator", "graph_explore"])
def test_the_hub_chain_through_its_mediator_is_two_hops_on_a_server(server_kg: SparqlKG, method: str) -> None:
    view, below = mediated(server_kg, "")
    check_bounded(view, method)
    assert below.reads and all(n <= CAP for *_, n in below.reads), max(below.reads, key=lambda r: r[3])


@pytest.mark.server
def test_a_profile_with_mediator_types_opens_the_server_as_a_view(server_kg: SparqlKG) -> None:
    from kg_agents.kg import open_kg
    from kg_agents.kg.profiles import PROFILES

    profile = PROFILES["freebase"].with_mediators(*MEDIATOR_TYPES)
    kg = open_kg(server_kg.endpoint, profile=profile, timeout=60)
    assert isinstance(kg, MediatedKG)
    hub_path = kg.view_path(list(PROBE_PATH))
    assert hub_path == ["^film.performance.actor / film.performance.film", "film.film.directed_by"]
    ends, cut = kg.chain_ends(HUB, hub_path)
    raw, raw_cut = open_kg(server_kg.endpoint, profile="freebase", timeout=60).chain_ends(
        HUB, list(PROBE_PATH)
    )
    assert not cut and not raw_cut and len(ends) > 40 and set(ends) == set(raw)
    film = GEN.entity("film", 5)
    seen = kg.neighbors(film, direction="both")
    assert seen and all(kg.label(t.other(film)) != t.other(film) for t in seen)  # no label-less mediator
    assert all(kg.has_triple(t.head, t.relation, t.tail) for t in seen)
    cast = [t for t in seen if t.relation == "film.film.starring / film.performance.actor"]
    assert cast and set(kg.relations(film, "out")) >= {"film.film.starring / film.performance.actor"}


@pytest.mark.server
def test_sparql_max_neighbors_caps_a_read_without_limit_in_pages(server_kg: SparqlKG) -> None:
    server_kg.clear_cache()
    before = server_kg.requests_sent
    got = server_kg.neighbors(HUB, direction="in")  # no limit asked: max_neighbors (40) holds
    assert len(got) == 40 and got.truncated and got.total is None
    # a first page-sized read (more than a page), then pages of 16, 16 and 9 rows (the 41st tells the cut)
    assert server_kg.requests_sent - before == 4
    assert got == sorted(got, key=lambda t: (t.relation, t.head))  # pages in one order, none repeated
    assert len(set(got)) == 40
    small = server_kg.neighbors(HUB, direction="in", limit=10)  # within one page: one request
    assert len(small) == 10 and small.truncated
    ends, cut = server_kg.chain_ends(HUB, list(PROBE_PATH))
    assert len(ends) == 40 and cut and len(set(ends)) == 40
    few = server_kg.neighbors(GEN.entity("film", 5), direction="out")
    assert not few.truncated and few.total == len(few) < 16
