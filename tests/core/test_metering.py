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


def test_batched_reads_count_one_kg_call_where_the_store_has_them(tmp_path: Any) -> None:
    """``has_triples`` and ``labels_many`` (optional store methods) are one KG call for the batch; a store
    without them is asked ``has_triple`` / ``label`` for each, each counted."""
    from kg_agents.kg.base import Triple, has_triples, labels_of
    from kg_agents.kg.rdf import RdfKG
    from kg_agents.kg.testing import write_contract_ntriples
    from tests.servers import CONTRACT_PROFILE

    asked = [Triple(h, r, t) for h, r, t in CONTRACT_TRIPLES[:3]] + [Triple("Splash", "written_by", "Big")]
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
            return {"out": state["read"](state["kg"])}

        for read, want in (
            (lambda k: has_triples(k, asked), [True, True, True, False]),
            (lambda k: labels_of(k, ents), ents),
        ):
            out = node({"read": read, "kg": mkg})
            assert out["out"] == want, name
            calls.setdefault(name, []).append(out["usage"]["kg_calls"])
    assert calls == {"batched": [1, 1], "one by one": [4, 3]}
