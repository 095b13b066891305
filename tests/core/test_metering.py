"""MeteredKG: every read of the protocol counts one KG call and answers as the store does."""

from __future__ import annotations

from typing import Any

from kg_agents.core.metering import MeteredKG, metered
from kg_agents.kg import KnowledgeGraph, MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES

CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("has_entity", ("Splash",), {}),
    ("label", ("Splash",), {}),
    ("features", ("Splash",), {}),
    ("relations", ("Splash",), {"direction": "both"}),
    ("neighbors", ("Splash",), {"direction": "both", "limit": 2}),
    ("neighbors_many", (["Splash", "Ron Howard"], "directed_by"), {"direction": "in"}),
    ("degree", ("Ron Howard", "directed_by", "in"), {}),
    ("has_triple", ("Splash", "directed_by", "Ron Howard"), {}),
]


def test_each_protocol_read_counts_one_kg_call_and_answers_as_the_store() -> None:
    kg = MemoryKG(CONTRACT_TRIPLES)
    mkg = MeteredKG(kg)
    assert isinstance(mkg, KnowledgeGraph)

    @metered
    def node(state: dict[str, Any]) -> dict[str, Any]:
        name, args, kwargs = state["call"]
        return {"out": getattr(mkg, name)(*args, **kwargs)}

    for name, args, kwargs in CALLS:
        out = node({"call": (name, args, kwargs)})
        assert out["out"] == getattr(kg, name)(*args, **kwargs), name
        assert out["usage"]["kg_calls"] == 1, name


def test_reads_that_are_not_queries_count_nothing() -> None:
    mkg = MeteredKG(MemoryKG(CONTRACT_TRIPLES))

    @metered
    def node(state: dict[str, Any]) -> dict[str, Any]:
        return {"out": (mkg.all_relations(), mkg.fingerprint(), dict(mkg.iter_labels()))}

    assert node({})["usage"]["kg_calls"] == 0


def test_a_batched_triple_check_counts_one_kg_call_where_the_store_has_one(tmp_path: Any) -> None:
    """``has_triples`` (an optional store method) is one KG call for the batch; a store without it is
    asked ``has_triple`` for each triple, each counted."""
    from kg_agents.kg.base import Triple, has_triples
    from kg_agents.kg.rdf import RdfKG
    from kg_agents.kg.testing import write_contract_ntriples
    from tests.servers import CONTRACT_PROFILE

    asked = [Triple(h, r, t) for h, r, t in CONTRACT_TRIPLES[:3]] + [Triple("Splash", "written_by", "Big")]
    stores = {
        "batched": RdfKG.from_file(write_contract_ntriples(tmp_path / "c.nt"), profile=CONTRACT_PROFILE),
        "one by one": MemoryKG(CONTRACT_TRIPLES),
    }
    calls = {}
    for name, kg in stores.items():
        mkg = MeteredKG(kg)

        @metered
        def node(state: dict[str, Any]) -> dict[str, Any]:
            return {"out": has_triples(mkg, asked)}  # noqa: B023 - called at once

        out = node({})
        assert out["out"] == [True, True, True, False], name
        calls[name] = out["usage"]["kg_calls"]
    assert calls == {"batched": 1, "one by one": 4}


def test_batched_labels_count_one_kg_call_where_the_store_has_them(tmp_path: Any) -> None:
    """``labels_many`` (optional) is one KG call for the batch; otherwise ``label`` is counted for each."""
    from kg_agents.kg.base import labels_of
    from kg_agents.kg.rdf import RdfKG
    from kg_agents.kg.testing import write_contract_ntriples
    from tests.servers import CONTRACT_PROFILE

    ents = ["Splash", "Tom Hanks", "Ron Howard"]
    stores = {
        "batched": RdfKG.from_file(write_contract_ntriples(tmp_path / "c.nt"), profile=CONTRACT_PROFILE),
        "one by one": MemoryKG(CONTRACT_TRIPLES),
    }
    calls = {}
    for name, kg in stores.items():
        mkg = MeteredKG(kg)

        @metered
        def node(state: dict[str, Any]) -> dict[str, Any]:
            return {"out": labels_of(mkg, ents)}  # noqa: B023 - called at once

        out = node({})
        assert out["out"] == ents, name
        calls[name] = out["usage"]["kg_calls"]
    assert calls == {"batched": 1, "one by one": 3}
