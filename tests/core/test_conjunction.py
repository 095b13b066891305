"""Whole answer sets and conjunctions (kg_agents.core.conjunction): where several topics' walks meet."""

from __future__ import annotations

import pytest

from kg_agents.core.chains import walk_chain
from kg_agents.core.conjunction import (
    MAX_TRIES,
    answer_set,
    chain_combinations,
    complete_answers,
    from_every_topic,
    meet,
    path_relations,
)
from kg_agents.errors import ConfigError
from kg_agents.kg.base import Path, verify_path
from kg_agents.kg.memory import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from tests.kg.hop_by_hop import HopByHopKG

KG = MemoryKG(CONTRACT_TRIPLES)
STARRED = {"Tom Hanks": [["~starred_actors"]]}


@pytest.mark.parametrize("kg", [KG, HopByHopKG(KG)], ids=["chain queries", "hop by hop"])
def test_two_topics_meet_where_both_walks_end_with_a_verified_path_from_each(kg):
    got = answer_set(kg, {**STARRED, "Robert Zemeckis": [["~directed_by"]]}, limit=100)
    assert sorted(got.answers) == ["Cast Away", "Forrest Gump"]
    for a in got.answers:
        texts = [p.to_text() for p in got.support[a]]
        assert texts == [f"Tom Hanks -> ~starred_actors -> {a}", f"Robert Zemeckis -> ~directed_by -> {a}"]
        assert all(verify_path(KG, p) for p in got.support[a])
    assert got.ends == {"Tom Hanks": 4, "Robert Zemeckis": 2} and got.truncated == []
    assert len(got.paths) == 4 and got.unverified == 0


def test_one_topic_is_its_chains_whole_set_best_first():
    got = answer_set(KG, STARRED, limit=100, first=["Forrest Gump", "not an end"])
    assert got.answers[0] == "Forrest Gump" and sorted(got.answers) == [
        "Big",
        "Cast Away",
        "Forrest Gump",
        "Splash",
    ]
    assert all(len(got.support[a]) == 1 for a in got.answers)
    # two relation paths for one topic: the union of their ends; excluded entities never answer
    two = answer_set(KG, {"Splash": [["directed_by"], ["written_by"]]}, limit=10, exclude=["Ron Howard"])
    assert two.answers == ["Babaloo Mandel"]
    # a 2-hop walk back through its start is not taken (the topic is never an answer)
    back = answer_set(KG, {"Ron Howard": [["~directed_by", "directed_by"]]}, limit=10)
    assert back.answers == []


def test_walks_that_do_not_meet_have_no_answer_and_cuts_are_reported():
    assert answer_set(KG, {**STARRED, "Jean-Pierre Jeunet": [["~directed_by"]]}, limit=100).answers == []
    cut = answer_set(KG, STARRED, limit=2)
    assert len(cut.answers) == 2 and cut.truncated == ["Tom Hanks ~starred_actors"]


def test_bad_walks_are_refused():
    with pytest.raises(ConfigError):
        answer_set(KG, {}, limit=5)
    with pytest.raises(ConfigError):
        answer_set(KG, {"Tom Hanks": []}, limit=5)
    with pytest.raises(ConfigError):
        answer_set(KG, STARRED, limit=0)


def test_hop_by_hop_walks_match_the_stores_chain_queries():
    for start, path in [
        ("Tom Hanks", ["~starred_actors", "directed_by"]),
        ("Babaloo Mandel", ["~written_by"]),
    ]:
        a = walk_chain(KG, [start], path, limit=50)
        b = walk_chain(HopByHopKG(KG), [start], path, limit=50)
        assert sorted(p.end for p in a.paths) == sorted(p.end for p in b.paths) and a.ends == b.ends
        assert all(verify_path(KG, p) and path_relations(p) == path for p in b.paths)
    cut = walk_chain(HopByHopKG(KG), ["Tom Hanks"], ["~starred_actors"], limit=1)
    assert cut.ends == 1 and cut.truncated == ["Tom Hanks ~starred_actors"]


def test_meet_tries_the_next_combinations_best_ranks_first():
    ranked = {
        "Tom Hanks": [["~starred_actors", "directed_by"], ["~starred_actors"]],
        "Babaloo Mandel": [["~written_by"], ["~written_by", "release_year"]],
    }
    m = meet(KG, ranked, top_m=1, limit=100)
    # directors and films do not meet; then (0, 1): directors and years; then (1, 0): films and films
    assert m.met and m.tries == 3
    assert m.walks == {"Tom Hanks": [["~starred_actors"]], "Babaloo Mandel": [["~written_by"]]}
    assert m.found is not None and m.found.answers == ["Splash"]
    assert chain_combinations([2, 2], 1)[:3] == [((0,), (0,)), ((0,), (1,)), ((1,), (0,))]
    assert chain_combinations([2, 2], 2)[0] == ((0, 1), (0, 1))  # the top_m best together first
    assert len(chain_combinations([9, 9, 9], 1)) == MAX_TRIES


def test_meet_reports_walks_that_never_meet_and_refuses_bad_input():
    m = meet(KG, {"Tom Hanks": [["~starred_actors"]], "French": [["~in_language"]]}, top_m=1, limit=100)
    assert not m.met and m.found is None and m.tries == 1
    for bad in ({}, {"Tom Hanks": []}):
        with pytest.raises(ConfigError):
            meet(KG, bad, top_m=1, limit=10)
    with pytest.raises(ConfigError):
        meet(KG, {"Tom Hanks": [["~starred_actors"]]}, top_m=0, limit=10)


def test_from_every_topic_keeps_the_candidates_each_topic_reaches():
    paths = {
        "Splash": [Path.from_text("Ron Howard -> ~directed_by -> Splash")]
        + [Path.from_text("Tom Hanks -> ~starred_actors -> Splash")] * 2,
        "Big": [Path.from_text("Tom Hanks -> ~starred_actors -> Big")],
    }
    got = from_every_topic(paths, ["Tom Hanks", "Ron Howard", "Tom Hanks"])
    assert list(got) == ["Splash"]
    assert [p.start for p in got["Splash"]] == ["Tom Hanks", "Ron Howard"]  # one each, topics' order
    assert from_every_topic(paths, []) == {}


def _films(*names: str) -> dict[str, list[Path]]:
    return {n: [Path.from_text(f"Tom Hanks -> ~starred_actors -> {n}")] for n in names}


@pytest.mark.parametrize("kg", [KG, HopByHopKG(KG)], ids=["chain queries", "hop by hop"])
def test_a_chain_answer_is_completed_with_the_rest_of_its_chain_after_the_given_answers(kg):
    got = complete_answers(kg, ["Big"], _films("Big"), topics=["Tom Hanks"], limit=100)
    assert got.answers[0] == "Big" and sorted(got.answers) == ["Big", "Cast Away", "Forrest Gump", "Splash"]
    assert got.chain == ["~starred_actors"] and got.start == "Tom Hanks"
    assert sorted(p.end for p in got.paths) == ["Cast Away", "Forrest Gump", "Splash"]  # one per added answer
    assert all(verify_path(KG, p) and p.start == "Tom Hanks" for p in got.paths)
    assert got.as_trace(1)["whole_set"]["added"] == 3
    # the cut counts the given answers; given answers keep their order and are not repeated
    cut = complete_answers(kg, ["Big", "Splash"], _films("Big", "Splash"), topics=["Tom Hanks"], limit=3)
    assert cut.answers[:2] == ["Big", "Splash"] and len(cut.answers) == 3 and len(cut.paths) == 1


def test_no_chain_is_walked_without_a_path_from_a_topic_entity():
    films = _films("Big")
    for topics in ([], ["Robert Zemeckis"]):  # no topic, or the path starts at none of them
        got = complete_answers(KG, ["Big"], films, topics=topics, limit=100)
        assert got.answers == ["Big"] and got.paths == [] and got.chain is None and got.as_trace(1) == {}
    assert complete_answers(KG, ["Nobody"], films, topics=["Tom Hanks"], limit=100).answers == ["Nobody"]
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ConfigError, match="limit"):
            complete_answers(KG, ["Big"], films, topics=["Tom Hanks"], limit=bad)


def test_a_walk_that_passes_a_node_twice_adds_no_answer():
    kg = MemoryKG([("Moon", "written_by", "Al"), ("Sun", "written_by", "Al"), ("Sun", "written_by", "Bea")])
    walked = Path.from_text("Moon -> written_by -> Al -> ~written_by -> Sun -> written_by -> Bea")
    got = complete_answers(kg, ["Bea"], {"Bea": [walked]}, topics=["Moon"], limit=100)
    assert got.answers == ["Bea"]  # Al is an end only by Al -> Sun -> Al


def _hub_kg() -> MemoryKG:
    """A genre with 30 films (a hub at a read cap of 10), two of them by one director, the last ones."""
    triples = [(f"Film {i:02d}", "has_genre", "Horror") for i in range(30)]
    triples += [
        ("Film 28", "directed_by", "Tod"),
        ("Film 29", "directed_by", "Tod"),
        ("Other", "directed_by", "Tod"),
    ]
    triples += [("Film 29", "starred_actors", "Lon"), ("Film 05", "starred_actors", "Lon")]
    return MemoryKG(triples)


@pytest.mark.parametrize("wrap", [lambda kg: kg, HopByHopKG], ids=["chain queries", "hop by hop"])
def test_a_hub_walk_cut_at_the_limit_is_checked_from_the_other_walks_ends(wrap):
    """Horror's first 10 films hold none of Tod's; walked back from Tod's films, two reach Horror."""
    hub = _hub_kg()
    kg = wrap(hub)
    got = answer_set(kg, {"Horror": [["~has_genre"]], "Tod": [["~directed_by"]]}, limit=10)
    assert got.truncated == ["Horror ~has_genre"] and got.checked_back == ["Horror"]
    assert sorted(got.answers) == ["Film 28", "Film 29"] and got.unverified == 0
    assert [p.to_text() for p in got.support["Film 29"]] == [
        "Horror -> ~has_genre -> Film 29",
        "Tod -> ~directed_by -> Film 29",
    ]
    assert all(verify_path(hub, p) for p in got.paths)
    # none checked back when no walk is cut, or when every walk is
    assert (
        answer_set(kg, {"Horror": [["~has_genre"]], "Tod": [["~directed_by"]]}, limit=100).checked_back == []
    )
    both_cut = answer_set(kg, {"Horror": [["~has_genre"]], "Tod": [["~directed_by"]]}, limit=2)
    assert both_cut.checked_back == [] and both_cut.answers == []


def test_a_cut_walk_of_two_hops_is_walked_back_hop_by_hop():
    """Read hop by hop, Horror's films are cut at 5 before their directors are read: Tod is reached only
    walking back from the other topic's end."""
    hub = _hub_kg()
    got = answer_set(
        HopByHopKG(hub), {"Horror": [["~has_genre", "directed_by"]], "Other": [["directed_by"]]}, limit=5
    )
    assert got.checked_back == ["Horror"] and got.answers == ["Tod"]
    assert [p.to_text() for p in got.support["Tod"]] == [
        "Horror -> ~has_genre -> Film 28 -> directed_by -> Tod",
        "Other -> directed_by -> Tod",
    ]
    assert all(verify_path(hub, p) for p in got.paths)


def test_reversed_relations_and_backwards_paths_are_the_same_triples():
    from kg_agents.core.conjunction import backwards, reversed_relations

    p = Path.from_text("Tom Hanks -> ~starred_actors -> Splash -> directed_by -> Ron Howard")
    b = backwards(p)
    assert b.to_text() == "Ron Howard -> ~directed_by -> Splash -> starred_actors -> Tom Hanks"
    assert set(b.triples) == set(p.triples) and verify_path(KG, b)
    assert reversed_relations(path_relations(p)) == path_relations(b)
    assert backwards(b) == p
