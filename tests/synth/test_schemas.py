"""Relation paths: their text, their execution (exact, bounded), gold paths and the random walks."""

from __future__ import annotations

import pytest

from kg_agents.errors import ConfigError
from kg_agents.kg.base import verify_path
from kg_agents.kg.memory import MemoryKG
from kg_agents.synth import execute, format_relation_path, parse_relation_path, sample_relation_paths
from kg_agents.synth.schemas import gold_path, walk


@pytest.mark.parametrize(
    "steps",
    [
        (("directed_by", "out"), ("starred_actors", "in")),
        (("people.person.spouse", "out"),),
        (("has genre", "in"), ("http://ex.org/rel#a%20b", "out")),
        (("~odd", "out"), ("a&b", "in"), ("tab\there", "out")),
    ],
)
def test_relation_path_text_round_trips(steps):
    text = format_relation_path(steps)
    assert parse_relation_path(text) == steps
    assert " & " not in text and len(text.split()) == len(steps)


def test_relation_path_text_reads_as_path_texts_do():
    assert format_relation_path([("directed_by", "out"), ("starred_actors", "in")]) == (
        "directed_by ~starred_actors"
    )


@pytest.mark.parametrize("bad", ["", "  ", "a & b", "~"])
def test_bad_relation_path_text_is_a_config_error(bad):
    with pytest.raises(ConfigError):
        parse_relation_path(bad)


def test_bad_step_is_a_config_error():
    with pytest.raises(ConfigError, match="direction"):
        format_relation_path([("r", "sideways")])


def test_execute_gives_every_end_and_never_the_topic():
    kg = MemoryKG(
        [
            ("F1", "directed_by", "D"),
            ("F2", "directed_by", "D"),
            ("F3", "directed_by", "D"),
            ("F1", "genre", "G"),
        ]
    )
    assert execute(kg, "F1", "directed_by ~directed_by") == {"F2", "F3"}
    assert execute(kg, "D", "~directed_by genre") == {"G"}
    assert execute(kg, "F1", "genre genre") == frozenset()


def test_execute_is_bounded_and_says_so():
    kg = MemoryKG([(f"F{i}", "directed_by", "D") for i in range(5)])
    assert execute(kg, "D", "~directed_by", cap=5) == {f"F{i}" for i in range(5)}
    assert execute(kg, "D", "~directed_by", cap=4) is None  # D has 5 neighbours along the step
    assert execute(kg, "F0", "directed_by ~directed_by", cap=3) is None  # 4 films in the frontier


def test_gold_path_verifies_and_follows_the_steps():
    kg = MemoryKG([("A", "r", "B"), ("C", "s", "B"), ("C", "t", "D"), ("A", "r", "E")])
    w = walk(kg, "A", "r ~s t")
    assert w is not None and w.answers == {"D"}
    p = gold_path(w, "D")
    assert p.to_text() == "A -> r -> B -> ~s -> C -> t -> D"
    assert verify_path(kg, p)
    with pytest.raises(ConfigError):
        gold_path(w, "E")


def test_walk_flags_a_path_that_goes_straight_back():
    kg = MemoryKG([("A", "r", "B"), ("A", "s", "C"), ("C", "r", "D")])
    assert walk(kg, "A", "r ~r").backtrack  # B's only r-neighbour is A
    assert walk(kg, "A", "s r ~r").backtrack  # back from D to C, where the path was
    kg2 = MemoryKG([("A", "r", "B"), ("X", "r", "B")])
    assert not walk(kg2, "A", "r ~r").backtrack  # on to X: something new


def test_sampling_finds_both_directions_with_their_topics(films):
    schemas = sample_relation_paths(films, (1, 2), seed=0, max_walks=3000)
    texts = {s.text for s in schemas}
    assert {"directed_by", "~directed_by", "has_genre ~has_genre", "~written_by directed_by"} <= texts
    assert all(s.hops in (1, 2) for s in schemas)
    by_text = {s.text: s for s in schemas}
    directed = by_text["~directed_by"]
    assert all(t.startswith("Director ") for t in directed.topics)
    assert directed.topics_seen == len(directed.topics) == 13
    for s in schemas:  # every topic really has its path
        for t in s.topics[:3]:
            assert execute(films, t, s.steps) is not None


def test_sampling_is_seeded_and_bounded(films):
    stats: dict = {}
    a = sample_relation_paths(films, 3, seed=4, max_walks=500, stats=stats)
    b = sample_relation_paths(films, 3, seed=4, max_walks=500)
    c = sample_relation_paths(films, 3, seed=5, max_walks=500)
    assert a == b and a != c
    assert stats["walks"] == 500 and stats["kg_calls"] <= 500 * 3


def test_sampling_stops_at_hubs():
    kg = MemoryKG([(f"F{i}", "genre", "Drama") for i in range(10)] + [("F0", "by", "D")])
    stats: dict = {}
    schemas = sample_relation_paths(kg, (1, 2), seed=0, max_walks=200, fanout=5, stats=stats)
    assert stats["hub_stops"] > 0
    assert all("Drama" not in s.topics for s in schemas)
    assert all(s.steps[:1] != (("genre", "out"),) or s.hops == 1 for s in schemas)  # never through Drama


@pytest.mark.parametrize("hops", [0, 4, (), (1, 5), True])
def test_bad_hops_are_a_config_error(films, hops):
    with pytest.raises(ConfigError):
        sample_relation_paths(films, hops, max_walks=1)
