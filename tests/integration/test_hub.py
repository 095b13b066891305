"""A hub entity with 50,000 edges: graphs and tools stay within their fan-out limits in size and memory.

The synthetic KG has one actor, ``Hub Person``, starring in 50,000 films (a few of them with a
director), in a ``MemoryKG`` and, for the ``server`` tests, the same triples as N-Triples in a private
Oxigraph server read through ``SparqlKG``. Every KG read goes through :class:`CountingKG`, which
records the ``limit`` asked for and the number of triples each entity got. Asserted: every neighbour
read of the hub carries a limit, no read returns more than the fan-out limit per entity, the truncation
is reported (``TripleList.truncated``, the graphs' ``fanout_truncated`` trace), the context handed to
the model is bounded, and peak Python memory growth during one question is bounded (tracemalloc): 8 MiB
for a question, 4 MiB for one tool call, where reading all 50,000 edges of the hub from the MemoryKG and
writing them as context lines alone peaks at about 9.7 MiB (measured: graph_rag about 2 MiB, the tool
0.4 MiB). tracemalloc sees Python objects only, not torch's tensors (dualr).
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from kg_agents import create_graph
from kg_agents.kg import MemoryKG, SparqlKG, verify_path
from kg_agents.kg.base import TripleList
from kg_agents.tools import kg_toolkit
from tests.fakes import FakeChat

HUB, N = "Hub Person", 50_000
QUESTION = {"question": "which films did [Hub Person] act in", "topic_entities": [HUB]}
FILMS = [f"Hub Film {i:05d}" for i in range(N)]


def hub_triples() -> list[tuple[str, str, str]]:
    out = [(f, "starred_actors", HUB) for f in FILMS]
    out += [(FILMS[i], "directed_by", f"Director {i % 7}") for i in range(0, N, 500)]
    out += [(HUB, "has_tags", "prolific")]
    return out


class CountingKG:
    """A KnowledgeGraph proxy that records every neighbour read: ``(entity, limit, triples returned)``."""

    def __init__(self, kg: Any) -> None:
        self.inner = kg
        self.reads: list[tuple[str, int | None, int]] = []

    def __getattr__(self, item: str) -> Any:
        return getattr(self.inner, item)

    def neighbors(
        self, entity: str, relation: str | None = None, direction: Any = "out", limit: int | None = None
    ) -> TripleList:
        got = self.inner.neighbors(entity, relation, direction, limit)
        self.reads.append((entity, limit, len(got)))
        return got  # type: ignore[no-any-return]

    def neighbors_many(
        self,
        entities: Sequence[str],
        relation: str | None = None,
        direction: Any = "out",
        limit: int | None = None,
    ) -> dict[str, TripleList]:
        got = self.inner.neighbors_many(entities, relation, direction, limit)
        self.reads.extend((e, limit, len(tl)) for e, tl in got.items())
        return got  # type: ignore[no-any-return]

    def hub_reads(self) -> list[tuple[str, int | None, int]]:
        return [r for r in self.reads if r[0] == HUB]


def run_measured(graph: Any, **kw: Any) -> tuple[dict[str, Any], int]:
    """Invoke ``graph`` on the hub question; return its output and the peak traced memory growth."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        out = graph.invoke(dict(QUESTION), **kw)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    return out, peak


MB = 1 << 20


@pytest.fixture(scope="module")
def memory_kg() -> MemoryKG:
    return MemoryKG(hub_triples())


@pytest.fixture(scope="module")
def server_kg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparqlKG]:
    from kg_agents.errors import KGAgentsError
    from kg_agents.kg.export import write_ntriples
    from kg_agents.kg.servers import OxigraphServer

    d = tmp_path_factory.mktemp("hub")
    nt = write_ntriples(MemoryKG(hub_triples()), d / "hub.nt", profile="metaqa").path
    try:
        srv = OxigraphServer([Path(nt)], directory=d / "srv").start()
    except (KGAgentsError, OSError) as exc:
        pytest.fail(f"OxigraphServer could not start: {exc}", pytrace=False)
    try:
        yield SparqlKG(srv.endpoint, profile="metaqa", timeout=30)
    finally:
        srv.stop()


def check_graph_rag(kg: Any) -> None:
    ckg = CountingKG(kg)
    llm = FakeChat(rules=[("Hub Person", "Answer: Hub Film 00001")])
    graph = create_graph("graph_rag", ckg, llm=llm, fanout_limit=200)
    out, peak = run_measured(graph)
    hub = ckg.hub_reads()
    assert hub and all(limit == 200 and n <= 200 for _, limit, n in hub), hub
    retrieve = next(s for s in out["trace"] if s["node"] == "retrieve")
    assert retrieve["fanout_truncated"] == [HUB] and retrieve["context_truncated"]
    assert retrieve["triples"] <= 60 and len(out["evidence"]) <= 60
    assert all(verify_path(kg, p) for p in out["paths"])
    assert peak < 8 * MB, peak / MB


def check_dualr(kg: Any) -> None:
    from kg_agents.methods.dualr.gnn.encoding import get_text_encoder

    get_text_encoder()(["warm up"])  # the shared encoder is loaded before memory is traced
    ckg = CountingKG(kg)
    graph = create_graph("dualr", ckg, answer_with="gnn", fanout_limit=500)
    out, peak = run_measured(graph)
    assert not out.get("errors"), out.get("errors")
    assert all(limit == 500 and n <= 500 for _, limit, n in ckg.reads), max(ckg.reads, key=lambda r: r[2])
    assert ckg.hub_reads() and all(n == 500 for _, _, n in ckg.hub_reads())
    explore = next(s for s in out["trace"] if s["node"] == "explore")
    assert explore["fanout_truncated"] >= 1
    assert sum(n for _, _, n in ckg.reads) <= 500 * len(ckg.reads)
    # the whole set of the hub's films, cut at max_answers (100 by default), each on a verified path
    assert 1 <= len(out["answers"]) <= 100 and all(verify_path(kg, p) for p in out["paths"])
    assert peak < 8 * MB, peak / MB  # (Python objects; torch's own allocations are not traced)


def check_neighbor_check(kg: Any) -> None:
    ckg = CountingKG(kg)
    tools = {t.name: t for t in kg_toolkit(ckg, max_neighbors=30)}
    tracemalloc.start()
    try:
        text = tools["NeighborCheck"].invoke({"node": HUB, "neighbor_type": "~starred_actors"})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert text.endswith(f"(the first 30 of {N}).") and len(text) < 2000, text[-200:]
    assert all(limit == 30 and n <= 30 for _, limit, n in ckg.reads)
    assert tools["NodeDegree"].invoke({"node": HUB, "neighbor_type": "~starred_actors"}) == (
        f"{HUB} has {N} ~starred_actors neighbors."
    )
    assert peak < 4 * MB, peak / MB


def test_memory_kg_reports_truncation(memory_kg: MemoryKG) -> None:
    got = memory_kg.neighbors(HUB, direction="in", limit=100)
    assert len(got) == 100 and got.truncated
    assert memory_kg.degree(HUB, direction="in") == N


def test_graph_rag_on_memory_hub(memory_kg: MemoryKG) -> None:
    check_graph_rag(memory_kg)


def test_dualr_on_memory_hub(memory_kg: MemoryKG) -> None:
    check_dualr(memory_kg)


def test_neighbor_check_on_memory_hub(memory_kg: MemoryKG) -> None:
    check_neighbor_check(memory_kg)


@pytest.mark.server
def test_graph_rag_on_server_hub(server_kg: SparqlKG) -> None:
    got = server_kg.neighbors(HUB, direction="in", limit=100)
    assert len(got) == 100 and got.truncated
    check_graph_rag(server_kg)


@pytest.mark.server
def test_dualr_on_server_hub(server_kg: SparqlKG) -> None:
    check_dualr(server_kg)


@pytest.mark.server
def test_neighbor_check_on_server_hub(server_kg: SparqlKG) -> None:
    check_neighbor_check(server_kg)
