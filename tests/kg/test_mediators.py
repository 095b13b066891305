"""MediatedKG: mediator (CVT) nodes walked through as one step, over any store."""

from __future__ import annotations

from typing import Any

import pytest

from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import Triple, verify_path
from kg_agents.kg.mediators import MediatedKG, compose, reverse_composite, split_composite, with_mediators
from kg_agents.kg.paths import follow_chain
from kg_agents.kg.profiles import PROFILES, Profile
from kg_agents.kg.testing import CONTRACT_TRIPLES, KnowledgeGraphContract

# Films, actors through performances, marriages (two spouses of one mediator) and a director.
TRIPLES = [
    ("Splash", "type", "film"),
    ("Big", "type", "film"),
    ("Splash", "directed_by", "Ron Howard"),
    ("Big", "directed_by", "Penny Marshall"),
    ("Splash", "starring", "p1"),
    ("p1", "type", "performance"),
    ("p1", "actor", "Tom Hanks"),
    ("p1", "film", "Splash"),
    ("p1", "character", "Allen"),
    ("Splash", "starring", "p2"),
    ("p2", "type", "performance"),
    ("p2", "actor", "Daryl Hannah"),
    ("p2", "film", "Splash"),
    ("Big", "starring", "p3"),
    ("p3", "type", "performance"),
    ("p3", "actor", "Tom Hanks"),
    ("p3", "film", "Big"),
    ("Tom Hanks", "spouse_s", "w1"),
    ("w1", "type", "marriage"),
    ("w1", "spouse", "Tom Hanks"),
    ("w1", "spouse", "Rita Wilson"),
    ("Rita Wilson", "spouse_s", "w1"),
]
MEDIATORS = {"p1", "p2", "p3", "w1"}


@pytest.fixture
def kg() -> MediatedKG:
    return MediatedKG(MemoryKG(TRIPLES), ["performance", "marriage"], type_relation="type")


def entities() -> list[str]:
    return sorted({x for h, _, t in TRIPLES for x in (h, t)} - MEDIATORS)


class TestMediatedKGWithoutMediatorsContract(KnowledgeGraphContract):
    """With no mediator in the graph, the view is the store: the whole store contract holds."""

    @pytest.fixture(scope="class")
    @classmethod
    def kg(cls) -> MediatedKG:
        return MediatedKG(MemoryKG(CONTRACT_TRIPLES), ["no such type"], type_relation="type")


def test_composite_relation_text_round_trips() -> None:
    text = compose(("actor", True), ("film", False))
    assert text == "^actor / film"
    assert split_composite(text) == (("actor", True), ("film", False))
    assert reverse_composite(text) == "^film / actor"
    assert reverse_composite(reverse_composite(text)) == text
    for plain in ("film.film.directed_by", "http://ex.org/r/a/b", "a / b / c", " / b", "^ / b"):
        assert split_composite(plain) is None
    with pytest.raises(ValueError, match="not a composite"):
        reverse_composite("directed_by")


def test_no_mediator_is_an_end_and_walks_through_one_are_one_edge(kg: MediatedKG) -> None:
    hanks = kg.neighbors("Tom Hanks", direction="both")
    assert not {x for t in hanks for x in (t.head, t.tail)} & MEDIATORS
    assert set(hanks) == {
        Triple("Splash", "starring / actor", "Tom Hanks"),
        Triple("Big", "starring / actor", "Tom Hanks"),
        Triple("Tom Hanks", "^actor / character", "Allen"),
        Triple("Tom Hanks", "^actor / film", "Splash"),
        Triple("Tom Hanks", "^actor / film", "Big"),
        Triple("Tom Hanks", "^spouse / spouse", "Rita Wilson"),
        Triple("Rita Wilson", "^spouse / spouse", "Tom Hanks"),
        Triple("Tom Hanks", "spouse_s / spouse", "Rita Wilson"),
        Triple("Rita Wilson", "spouse_s / spouse", "Tom Hanks"),
        Triple("Tom Hanks", "spouse_s / ^spouse_s", "Rita Wilson"),
        Triple("Rita Wilson", "spouse_s / ^spouse_s", "Tom Hanks"),
    }
    # a walk back to where it started is no edge: Splash -starring-> p1 -film-> Splash
    assert Triple("Splash", "starring / film", "Splash") not in kg.neighbors("Splash")


def test_every_edge_is_an_out_edge_of_its_head_and_an_in_edge_of_its_tail(kg: MediatedKG) -> None:
    out = {t for e in entities() for t in kg.neighbors(e, direction="out")}
    inn = {t for e in entities() for t in kg.neighbors(e, direction="in")}
    assert out == inn
    for e in entities():
        both = kg.neighbors(e, direction="both")
        assert set(both) == {t for t in out if e in (t.head, t.tail)}
        for d in ("out", "in", "both"):
            listed, walked = set(kg.relations(e, d)), {t.relation for t in kg.neighbors(e, direction=d)}
            assert walked <= listed <= set(kg.all_relations()), (e, d)
            # a composite relation listed but not walked is one the sample shows and e's mediators lack
            assert all(" / " in r for r in listed - walked), (e, d, listed - walked)
            assert kg.degree(e, direction=d) == len(kg.neighbors(e, direction=d))
    # Big's performance names no character, Splash's first one does: the schema lists it for both
    assert "starring / character" in kg.relations("Big") and not kg.neighbors("Big", "starring / character")
    assert kg.relations("Tom Hanks", "both") == [
        "^actor / character",
        "^actor / film",
        "^spouse / spouse",
        "spouse_s / ^spouse_s",
        "spouse_s / spouse",
        "starring / actor",
    ]
    for t in out:
        assert kg.has_triple(t.head, t.relation, t.tail), t
        assert set(kg.neighbors(t.head, t.relation, "out")) >= {t}
        assert set(kg.neighbors(t.tail, t.relation, "in")) >= {t}
        assert kg.degree(t.head, t.relation, "out") == len(kg.neighbors(t.head, t.relation, "out"))
    assert kg.has_triples(sorted(out, key=str)) == [True] * len(out)


def test_the_store_edges_of_a_mediator_are_not_edges_of_the_view(kg: MediatedKG) -> None:
    assert not kg.has_triple("Splash", "starring", "p1")
    assert not kg.has_triple("p1", "actor", "Tom Hanks")
    assert kg.neighbors("Splash", "starring") == []
    assert kg.has_triple("Splash", "directed_by", "Ron Howard")
    # the other direction of a stored walk is not a triple, nor is a walk back to its start
    assert not kg.has_triple("Tom Hanks", "^actor / ^starring", "Splash")
    assert kg.neighbors("Tom Hanks", "^actor / ^starring", "both") == []
    assert not kg.has_triple("Splash", "starring / film", "Splash")
    rels = kg.all_relations()
    assert {"starring", "actor", "film", "spouse", "spouse_s", "character"}.isdisjoint(rels)
    assert {"directed_by", "type", "starring / actor", "^actor / film", "^spouse / spouse"} <= set(rels)


def test_chains_are_joined_by_the_store_with_composites_expanded(kg: MediatedKG) -> None:
    path = ["~starring / actor", "directed_by"]
    ends, cut = kg.chain_ends("Tom Hanks", path)
    assert (sorted(ends), cut) == (["Penny Marshall", "Ron Howard"], False)
    assert set(ends) == follow_chain(
        kg, {"Tom Hanks"}, [("starring / actor", "in"), ("directed_by", "out")], 100
    )
    assert kg.chain_ends("Tom Hanks", path, limit=1) == ([ends[0]], True)
    walks = kg.chain_witnesses("Tom Hanks", path, ends)
    assert set(walks) == set(ends)
    for end, walk in walks.items():
        assert verify_path(kg, walk) and walk.end == end and len(walk) == 2
        assert walk.to_text().startswith("Tom Hanks -> ~starring / actor -> ")
    assert kg.chain_ends("Tom Hanks", ["^actor / film"])[0] == ["Big", "Splash"]
    # a store relation into a mediator, or a composite in its unstored direction, reaches nothing
    assert kg.chain_ends("Splash", ["starring"]) == ([], False)
    assert kg.chain_ends("Tom Hanks", ["^actor / ^starring"]) == ([], False)


def test_view_path_joins_the_steps_through_a_mediator(kg: MediatedKG) -> None:
    assert kg.view_path(["~actor", "~starring", "directed_by"]) == ["~starring / actor", "directed_by"]
    assert kg.view_path(["~actor", "film", "directed_by"]) == ["^actor / film", "directed_by"]
    assert kg.view_path(["directed_by"]) == ["directed_by"]
    assert kg.view_path(["starring"]) is None  # it ends on a mediator
    view = kg.view_path(["~actor", "~starring", "directed_by"])
    assert view is not None
    assert set(kg.chain_ends("Tom Hanks", view)[0]) == set(
        kg.inner.chain_ends("Tom Hanks", ["~actor", "~starring", "directed_by"])[0]  # type: ignore[attr-defined]
    )


def test_limits_cut_the_view_and_say_so(kg: MediatedKG) -> None:
    full = kg.neighbors("Tom Hanks", direction="both")
    got = kg.neighbors("Tom Hanks", direction="both", limit=3)
    assert got.truncated and len(got) == 3 and set(got) <= set(full)
    assert not kg.neighbors("Tom Hanks", direction="both", limit=100).truncated
    one = kg.neighbors("Tom Hanks", "^actor / film", "out", limit=1)
    assert len(one) == 1 and one.truncated


def test_a_profile_with_mediator_types_opens_as_a_view() -> None:
    profile = PROFILES["freebase"].with_mediators("film.performance")
    assert profile.mediator_types == ("film.performance",) and profile.type_relation == "type.object.type"
    assert profile.describe() != PROFILES["freebase"].describe()
    assert PROFILES["freebase"].describe().count("|") == profile.describe().count("|") - 1

    class Store:
        def __init__(self, p: Profile) -> None:
            self.profile = p

    plain = Store(PROFILES["freebase"])
    assert with_mediators(plain) is plain
    assert isinstance(with_mediators(Store(profile)), MediatedKG)
    with pytest.raises(ConfigError, match="type_relation"):
        Profile("x", mediator_types=("t",))
    with pytest.raises(ConfigError, match="mediator_types"):
        Profile("x", type_relation="type", mediator_types="t")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"mediator_types": []}, "mediator type"),
        ({"mediator_types": ["t"], "type_relation": ""}, "type_relation"),
        ({"mediator_types": ["t"], "sample": 0}, "sample"),
        ({"mediator_types": ["t"], "sample": True}, "sample"),
    ],
)
def test_bad_settings_are_config_errors(args: dict[str, Any], match: str) -> None:
    args = {"type_relation": "type", **args}
    with pytest.raises(ConfigError, match=match):
        MediatedKG(MemoryKG(TRIPLES), **args)


def test_the_fingerprint_names_the_mediator_types(kg: MediatedKG) -> None:
    assert kg.fingerprint() != kg.inner.fingerprint()
    assert (
        kg.fingerprint()
        == MediatedKG(MemoryKG(TRIPLES), ["marriage", "performance"], type_relation="type").fingerprint()
    )
