"""graph_cot's labelled triples and entities: batched where the store reads labels in batches, and the
same text as one label at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_agents.core.metering import MeteredKG, metered
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import Triple
from kg_agents.kg.rdf import RdfKG
from kg_agents.kg.testing import CONTRACT_TRIPLES, write_contract_ntriples
from kg_agents.methods.graph_cot.interaction.base import (
    entity_label,
    entity_labels,
    triple_text,
    triple_texts,
)
from tests.servers import CONTRACT_PROFILE

TRIPLES = [Triple(h, r, t) for h, r, t in CONTRACT_TRIPLES[:4]]


def test_batched_texts_are_the_one_at_a_time_texts(tmp_path: Path) -> None:
    for kg in (
        MemoryKG(CONTRACT_TRIPLES),
        RdfKG.from_file(write_contract_ntriples(tmp_path / "c.nt"), profile=CONTRACT_PROFILE),
    ):
        assert triple_texts(kg, TRIPLES) == [triple_text(kg, t) for t in TRIPLES]
        ents = ["Splash", "No Such Entity", "Tom Hanks"]  # an unknown id stands for itself
        assert entity_labels(kg, ents) == [entity_label(kg, e) for e in ents] == ents
        assert triple_texts(kg, []) == [] and entity_labels(kg, []) == []


def test_a_batching_store_is_asked_once(tmp_path: Path) -> None:
    kg = MeteredKG(RdfKG.from_file(write_contract_ntriples(tmp_path / "c.nt"), profile=CONTRACT_PROFILE))

    @metered
    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"out": triple_texts(kg, TRIPLES)}

    assert node({})["usage"]["kg_calls"] == 1
