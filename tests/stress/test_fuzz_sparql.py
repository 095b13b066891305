"""Hostile input at volume through the stores (marker ``stress``): no query changes shape, none is other than
SELECT/ASK, nothing crashes untyped, and the stores answer as the in-memory one does.

``tests/stress/fuzz_sparql.py`` (``python -m tests.stress.fuzz_sparql``) runs the same at full size (10,000
names, 1,000 questions, real Oxigraph and Virtuoso servers) and prints a table; here a few hundred inputs go
through the in-process stores, and the Oxigraph server (marker ``server``) takes a smaller share.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from tests.stress.fuzz_sparql import fuzz_store, hostile_inputs, open_stores

pytestmark = [pytest.mark.stress, pytest.mark.slow]


def _fuzz(store: str, tmp_path: Path, names: int, questions: int) -> dict[str, int]:
    inputs = hostile_inputs(max(names, questions), seed=0)
    stores, servers = open_stores([store], tmp_path)
    try:
        reference = None if store == "memory" else MemoryKG(CONTRACT_TRIPLES)
        res = fuzz_store(store, stores[store], inputs[:names], inputs[:questions], reference)
    finally:
        for srv in servers:
            srv.stop()
    stats = dict(res["stats"])
    assert stats["calls"] > 0 and stats["questions"] == questions
    for kind in ("algebra_changed", "non_select_ask", "untyped_crash", "differs_from_memory"):
        assert stats.get(kind, 0) == 0, (kind, res["examples"].get(kind))
    return stats


@pytest.mark.parametrize("store", ["memory", "rdf"])
def test_hostile_names_and_questions_in_process(store: str, tmp_path: Path) -> None:
    stats = _fuzz(store, tmp_path, names=300, questions=30)
    if store == "rdf":
        assert stats["queries"] > 0  # the SPARQL queries were captured and checked


@pytest.mark.server
def test_hostile_names_and_questions_on_an_oxigraph_server(tmp_path: Path) -> None:
    assert _fuzz("oxigraph", tmp_path, names=100, questions=10)["queries"] > 0
