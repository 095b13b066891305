"""Reasoning graphs end to end against real SPARQL servers (Oxigraph server and Virtuoso 7).

The servers are started by the session fixtures in ``tests/servers.py`` with MetaQA loaded as
N-Triples; the graphs talk to them only through ``SparqlKG``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kg_agents import create_graph
from kg_agents.kg import SparqlKG, verify_path
from tests.fakes import FakeChat
from tests.servers import METAQA_GRAPH

pytestmark = [pytest.mark.server, pytest.mark.integration]


@pytest.fixture
def server_kg(sparql_server: Any) -> SparqlKG:
    return SparqlKG(sparql_server.endpoint, profile="metaqa", graph=METAQA_GRAPH)


def test_dualr_gnn_only_on_server(server_kg: SparqlKG) -> None:
    """The shipped DualR explorer answers over the server, and its paths verify on that server."""
    graph = create_graph("dualr", server_kg, answer_with="gnn")
    out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert out["answers"][:1] == ["Ron Howard"], out.get("errors")
    assert "Splash -> directed_by -> Ron Howard" in [p.to_text() for p in out["paths"]]
    assert all(verify_path(server_kg, p) for p in out["paths"])
    assert out["usage"]["llm_calls"] == 0 and out["usage"]["kg_calls"] > 0
    assert not out.get("errors")


def test_graph_rag_on_server_links_and_verifies(server_kg: SparqlKG) -> None:
    """graph_rag links the bracketed entity through the server's labels and verifies its path there."""
    llm = FakeChat(replies=["Answer: Ron Howard"])
    out = create_graph("graph_rag", server_kg, llm=llm).invoke({"question": "who directed [Splash]"})
    assert out["answers"] == ["Ron Howard"]
    texts = [p.to_text() for p in out["paths"]]
    assert "Splash -> directed_by -> Ron Howard" in texts  # (also the tag 'ron howard', a real triple)
    assert all(t.startswith("Splash -> ") for t in texts)
    assert all(verify_path(server_kg, p) for p in out["paths"])
    assert out["usage"]["llm_calls"] == 1
