"""Constraint questions (kg_agents.core.constraint): a chain's answers narrowed by a value the question
states, each kept answer with its verified path to the value."""

from __future__ import annotations

from typing import Any

import pytest

from kg_agents.core.constraint import (
    FANOUT,
    constrain_update,
    end_with_constraint,
    make_constrain_node,
    mentioned,
    narrow,
    step_aside,
    step_back,
    step_on,
)
from kg_agents.core.metering import MeteredKG
from kg_agents.errors import ConfigError, EndpointError
from kg_agents.kg.base import Path, Triple, verify_path
from kg_agents.kg.memory import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES

KG = MemoryKG(CONTRACT_TRIPLES)
#: Tom Hanks's films, as a method answers "~starred_actors" from him.
FILMS = ["Splash", "Big", "Cast Away", "Forrest Gump"]
TOPIC = ["Tom Hanks"]


class CountingKG(MeteredKG):
    """The KG with the entities whose neighbours were asked for recorded."""

    def __init__(self, kg: Any) -> None:
        super().__init__(kg)
        self.asked: list[str] = []

    def neighbors_many(self, entities, relation=None, direction="out", limit=None):  # type: ignore[no-untyped-def]
        self.asked.extend(entities)
        return super().neighbors_many(entities, relation, direction, limit)


class FailingKG(MeteredKG):
    def neighbors_many(self, entities, relation=None, direction="out", limit=None):  # type: ignore[no-untyped-def]
        raise EndpointError("http://127.0.0.1:9/sparql", "connection refused")


def test_a_year_in_the_question_keeps_the_answers_that_hold_it_with_a_verified_path():
    got = narrow(KG, "which [Tom Hanks] films came out in 1988", TOPIC, FILMS)
    assert got.answers == ["Big"]
    assert [p.to_text() for p in got.paths] == ["Big -> release_year -> 1988"]
    assert all(verify_path(KG, p) for p in got.paths)
    assert got.constraint is not None and got.constraint.relation == "release_year"
    step = got.trace()
    assert (step["value"], step["relation"], step["kept"], step["dropped"]) == ("1988", "release_year", 1, 3)
    # a whole set that mixes films and years: the year it names is a value, and not an answer
    mixed = narrow(KG, "which [Tom Hanks] films came out in 1988", TOPIC, ["1984", "Splash", "1988", "Big"])
    assert mixed.answers == ["Big"]


def test_a_value_reached_backwards_is_a_path_against_its_triple():
    # the films of Ron Howard's: Splash and Parenthood, the question names the writer's films
    kg = MemoryKG([*CONTRACT_TRIPLES, ("Babaloo Mandel", "won", "Splash")])
    got = narrow(kg, "which of these did babaloo mandel win for", ["Ron Howard"], ["Splash", "Parenthood"])
    # Babaloo Mandel wrote both (not narrowing); he won for Splash alone: the triple points at the answer
    assert got.answers == ["Splash"]
    assert [p.to_text() for p in got.paths] == ["Splash -> ~won -> Babaloo Mandel"]
    assert verify_path(kg, got.paths[0])


def test_no_value_mentioned_or_none_that_narrows_leaves_the_answers_as_they_are():
    for q in ("what films did [Tom Hanks] star in", "which [Tom Hanks] films came out in 1999"):
        got = narrow(KG, q, TOPIC, FILMS)
        assert got.answers == FILMS and got.paths == [] and got.constraint is None
        assert got.trace()["constraint"] is None
    # a value every answer holds does not narrow: both films are Ron Howard's
    held = narrow(KG, "what did Ron Howard direct", ["Babaloo Mandel"], ["Splash", "Parenthood"])
    assert held.answers == ["Splash", "Parenthood"] and held.constraint is None
    # one answer, or none: nothing to narrow
    assert narrow(KG, "films of 1988", TOPIC, ["Big"]).constraint is None
    assert narrow(KG, "films of 1988", TOPIC, []).answers == []


def test_a_topic_or_a_word_inside_its_mention_is_never_the_value():
    kg = MemoryKG(
        [
            ("Big", "starred_actors", "Tom Hanks"),
            ("Big", "has_tags", "tom hanks"),
            ("Big", "has_tags", "hanks"),
            ("Splash", "starred_actors", "Tom Hanks"),
            ("Big", "produced_by", "Tom"),
        ]
    )
    for q in ("which [Tom Hanks] films", "which Tom Hanks films"):
        got = narrow(kg, q, TOPIC, ["Big", "Splash"])
        assert got.constraint is None, q  # the topic's label, its words and the topic itself
    assert not mentioned("Hanks", "which [Tom Hanks] films")
    assert not mentioned("the", "which of the films")  # stop-words only
    assert mentioned("Comedy", "comedies with [Tom Selleck]") and mentioned("French", "French-language")


def test_articles_count_and_words_are_whole():
    assert not mentioned("The Fall", "what genres do the films fall under")
    assert mentioned("The Fall", "is it the fall of the year")
    assert not mentioned("War", "films with [Jack Palance] and a warden")
    assert mentioned("1993", "what did [Steven Spielberg] direct in 1993?")


def test_ties_are_broken_by_the_longest_label_then_the_most_kept_then_by_name():
    kg = MemoryKG(
        [
            *[(f, "starred_actors", "Tom Hanks") for f in ("A", "B", "C", "D")],
            ("A", "has_genre", "war"),
            ("B", "has_genre", "war"),
            ("A", "has_tags", "war drama"),
            ("C", "has_tags", "war"),
            ("D", "in_language", "drama"),
        ]
    )
    q = "which [Tom Hanks] war drama films"
    # "war drama" is the longest label that narrows
    assert narrow(kg, q, TOPIC, list("ABCD")).answers == ["A"]
    # the same length: "war" (genre) keeps two, (tag) one
    assert narrow(kg, "which [Tom Hanks] war films", TOPIC, list("ABCD")).answers == ["A", "B"]
    # same label and count: by relation name, whatever the answers' order
    films = [(f, "starred_actors", "Tom Hanks") for f in "AB"]
    kg2 = MemoryKG([*films, ("A", "has_tags", "war"), ("B", "has_genre", "war")])
    for answers in (["A", "B"], ["B", "A"]):
        got = narrow(kg2, "which [Tom Hanks] war films", TOPIC, answers)
        assert got.answers == ["B"] and got.constraint is not None and got.constraint.relation == "has_genre"


def test_only_the_first_answers_are_read_and_the_rest_dropped_when_a_constraint_applies():
    kg = CountingKG(KG)
    got = narrow(kg, "which [Tom Hanks] films came out in 1984", TOPIC, FILMS, max_read=2)
    assert kg.asked == ["Splash", "Big"]
    assert got.answers == ["Splash"] and got.read == 2 and got.unchecked == 2
    assert got.trace()["unchecked"] == 2
    # the value past the cap is never found
    late = narrow(CountingKG(KG), "which [Tom Hanks] films came out in 1988", TOPIC, FILMS, max_read=1)
    assert late.constraint is None and late.answers == FILMS
    with pytest.raises(ConfigError, match="max_read"):
        narrow(KG, "q", TOPIC, FILMS, max_read=0)


def test_the_update_keeps_the_kept_answers_paths_and_adds_the_constraints():
    paths = [Path.from_text(f"Tom Hanks -> ~starred_actors -> {f}") for f in FILMS]
    state = {
        "question": "which [Tom Hanks] films came out in 1984",
        "topic_entities": TOPIC,
        "answers": FILMS,
        "paths": paths,
    }
    u = constrain_update(KG, state)
    assert u["answers"] == ["Splash"]
    assert [p.to_text() for p in u["paths"]] == [
        "Tom Hanks -> ~starred_actors -> Splash",
        "Splash -> release_year -> 1984",
    ]
    none = constrain_update(KG, {**state, "question": "what did [Tom Hanks] star in"})
    assert set(none) == {"trace"}


def _went_on(end: str, relation: str, value: str) -> Path:
    return Path.from_text(f"Tom Hanks -> ~starred_actors -> {end} -> {relation} -> {value}")


def test_a_chain_that_went_on_to_the_named_value_steps_back_to_the_entities_before_it():
    # "which [Tom Hanks] films came out in 1988" answered with the years of his films: 1984 the best
    state = {
        "question": "which [Tom Hanks] films came out in 1988",
        "topic_entities": TOPIC,
        "answers": ["1984", "1988"],
        "paths": [_went_on("Splash", "release_year", "1984"), _went_on("Big", "release_year", "1988")],
    }
    u = constrain_update(KG, state)
    assert u["answers"] == ["Big"]
    assert [p.to_text() for p in u["paths"]] == [
        "Tom Hanks -> ~starred_actors -> Big",
        "Big -> release_year -> 1988",
    ]
    assert all(verify_path(KG, p) for p in u["paths"])
    step = u["trace"][0]
    assert step["stepped"] == "back" and (step["value"], step["relation"]) == ("1988", "release_year")
    # one answer is enough, and the value need not be among the answers (the node runs for one answer)
    one = constrain_update(KG, {**state, "answers": ["1984"], "paths": state["paths"][:1]})
    assert one["answers"] == ["Big"]
    node = make_constrain_node(KG, type("Ctx", (), {"constraint": True})())
    assert node({**state, "answers": ["1984"], "paths": state["paths"][:1]})["answers"] == ["Big"]


def test_no_step_back_where_the_value_is_held_by_another_relation_or_no_path_went_on():
    went = [_went_on("Splash", "directed_by", "Ron Howard")]
    # the value 1988 is Big's release year, not a director: the chain's last hop did not go to it
    assert step_back(KG, "which [Tom Hanks] films came out in 1988", TOPIC, ["Ron Howard"], went) is None
    # no value named: nothing to step back to
    assert step_back(KG, "who directed the films of [Tom Hanks]", TOPIC, ["Ron Howard"], went) is None
    # a one-hop answer, or a path from no topic entity, is not stepped back from
    short = [Path.from_text("Tom Hanks -> ~starred_actors -> Splash")]
    assert step_back(KG, "which [Tom Hanks] films came out in 1988", TOPIC, ["Splash"], short) is None
    assert step_back(KG, "which [Tom Hanks] films came out in 1988", ["Ron Howard"], ["1984"], went) is None
    # a chain question's answers stay as they are
    u = constrain_update(
        KG,
        {
            "question": "who directed the films of [Tom Hanks]",
            "topic_entities": TOPIC,
            "answers": ["Ron Howard"],
            "paths": went,
        },
    )
    assert set(u) == {"trace"} and "stepped" not in u["trace"][0]


SPIELBERG = MemoryKG(
    [
        ("Jaws", "directed_by", "Steven Spielberg"),
        ("Jaws", "release_year", "1975"),
        ("Hook", "directed_by", "Steven Spielberg"),
        ("Hook", "release_year", "1991"),
        ("Poltergeist", "written_by", "Steven Spielberg"),
        ("Poltergeist", "release_year", "1982"),
        ("Always", "written_by", "Steven Spielberg"),
        ("Always", "release_year", "1989"),
    ]
)


def test_answers_by_another_relation_of_the_topic_step_aside_to_those_that_hold_the_value():
    # "what did [Steven Spielberg] direct in 1991" answered with the films he wrote: none is of 1991
    wrote = [Path.from_text(f"Steven Spielberg -> ~written_by -> {f}") for f in ("Poltergeist", "Always")]
    state = {
        "question": "what did [Steven Spielberg] direct in 1991",
        "topic_entities": ["Steven Spielberg"],
        "answers": ["Poltergeist", "Always"],
        "paths": wrote,
    }
    u = constrain_update(SPIELBERG, state)
    assert u["answers"] == ["Hook"]
    assert [p.to_text() for p in u["paths"]] == [
        "Steven Spielberg -> ~directed_by -> Hook",
        "Hook -> release_year -> 1991",
    ]
    assert all(verify_path(SPIELBERG, p) for p in u["paths"])
    assert u["trace"][0]["stepped"] == "aside"
    # the answers hold the value: they are narrowed, and the step does not run
    kept = constrain_update(SPIELBERG, {**state, "question": "what did [Steven Spielberg] write in 1989"})
    assert kept["answers"] == ["Always"] and "stepped" not in kept["trace"][0]
    # two topic entities (a conjunction): its answers need a path from each, so neither step runs
    two = constrain_update(SPIELBERG, {**state, "topic_entities": ["Steven Spielberg", "1982"]})
    assert set(two) == {"trace"}
    # no value named: nothing
    assert step_aside(SPIELBERG, "what did [Steven Spielberg] write", ["Steven Spielberg"], [], []) is None


def test_answers_a_hop_short_step_on_to_their_neighbours_that_hold_the_value():
    # "which films from 1988 star an actor of [Splash]" answered with the actor
    short = [Path.from_text("Splash -> starred_actors -> Tom Hanks")]
    state = {
        "question": "which films from 1988 star an actor of [Splash]",
        "topic_entities": ["Splash"],
        "answers": ["Tom Hanks"],
        "paths": short,
    }
    u = constrain_update(KG, state)
    assert u["answers"] == ["Big"]
    assert [p.to_text() for p in u["paths"]] == [
        "Splash -> starred_actors -> Tom Hanks -> ~starred_actors -> Big",
        "Big -> release_year -> 1988",
    ]
    assert all(verify_path(KG, p) for p in u["paths"])
    assert u["trace"][0]["stepped"] == "on"
    # an answer no path ends at: its hop alone
    alone = step_on(KG, state["question"], ["Splash"], ["Tom Hanks"], [])
    assert alone is not None and alone.paths[0].to_text() == "Tom Hanks -> ~starred_actors -> Big"
    # a hub (as many triples as the read cap) is passed over: what was read of it is a cut
    assert step_on(KG, state["question"], ["Splash"], ["Tom Hanks"], short, fanout=4) is None
    assert step_on(KG, state["question"], ["Splash"], ["Tom Hanks"], short, fanout=5) is not None


class _CountingKG(MemoryKG):
    """A MemoryKG that records each entity whose neighbours it is asked for, by the read's options."""

    def __init__(self, triples):
        super().__init__(triples)
        self.asked: list[tuple[str, Any, str, Any]] = []

    def neighbors_many(self, entities, relation=None, direction="out", limit=None):
        self.asked += [(e, relation, direction, limit) for e in dict.fromkeys(entities)]
        return super().neighbors_many(entities, relation, direction, limit)


def test_one_update_reads_each_entitys_neighbours_once():
    # two actors of Splash: narrow reads their neighbours and nothing narrows; step_on walks on from the
    # same two, read once, to Big (1988)
    kg = _CountingKG([*CONTRACT_TRIPLES, ("Splash", "starred_actors", "Daryl Hannah")])
    state = {
        "question": "which films from 1988 star an actor of [Splash]",
        "topic_entities": ["Splash"],
        "answers": ["Tom Hanks", "Daryl Hannah"],
        "paths": [Path.from_text(f"Splash -> starred_actors -> {a}") for a in ("Tom Hanks", "Daryl Hannah")],
    }
    u = constrain_update(kg, state)
    assert u["answers"] == ["Big"] and u["trace"][0]["stepped"] == "on"
    assert [a for a in kg.asked if a[0] == "Tom Hanks"] == [("Tom Hanks", None, "both", FANOUT)]
    assert len(kg.asked) == len(set(kg.asked))


def test_a_question_word_that_names_a_relation_read_is_no_value_for_the_steps():
    kg = MemoryKG([*CONTRACT_TRIPLES, ("Big", "has_tags", "actors")])
    q, films = "which films star the actors of [Splash]", ["Big", "Cast Away", "Forrest Gump"]
    assert narrow(kg, q, ["Splash"], films).answers == ["Big"]  # the method's own answers: as before
    assert narrow(kg, q, ["Splash"], films, schema_words=True).constraint is None  # "actors": starred_actors
    short = [Path.from_text("Splash -> starred_actors -> Tom Hanks")]
    assert step_on(kg, q, ["Splash"], ["Tom Hanks"], short) is None


def test_a_question_word_that_names_the_relation_a_step_walked_is_no_value():
    # the film's country is a hub: its first three edges read do not hold film_country, yet "country"
    # names the relation walked to it, and the country's type "Country" is no value
    cities = [(f"City {i}", "contained_by", "Hubland") for i in range(2)]
    kg = MemoryKG([
        ("Hubland", "type", "Country"), *cities, ("Film X", "film_country", "Hubland"),
        ("Film X", "directed_by", "Ann"), ("Ann", "type", "Person"),
    ])  # fmt: skip
    q = "which films share the film country of [Film X]"
    assert [str(t) for t in kg.neighbors("Hubland", direction="both", limit=3)] == [
        str(t) for t in [Triple("Hubland", "type", "Country"), *(Triple(*c) for c in cities)]
    ]
    assert step_aside(kg, q, ["Film X"], [], [], fanout=3) is None
    hops = ["Film X -> film_country -> Hubland", "Film X -> directed_by -> Ann"]
    got = narrow(kg, q, ["Film X"], ["Hubland", "Ann"], fanout=3, schema_words=True)
    assert got.answers == ["Hubland"] and got.constraint is not None  # read alone, "country" is free
    walked = [Path.from_text(h).hops[0].relation_text for h in hops]
    assert (
        narrow(kg, q, ["Film X"], ["Hubland", "Ann"], fanout=3, schema_words=True, walked=walked).constraint
        is None
    )


def test_the_node_follows_the_option_and_records_a_failed_kg_without_losing_the_answers():
    from dataclasses import dataclass

    from langgraph.graph import START, StateGraph

    from kg_agents.core.state import ReasoningState

    @dataclass
    class Ctx:
        constraint: bool | None = None

    def answer(state: dict) -> dict:
        return {"answers": FILMS, "paths": []}

    def graph(kg: Any) -> Any:
        g = StateGraph(ReasoningState, context_schema=Ctx)
        g.add_node("answer", answer)
        g.add_edge(START, "answer")
        end_with_constraint(g, kg, Ctx(constraint=True), ["answer"])
        return g.compile()

    q = {"question": "which [Tom Hanks] films came out in 1988", "topic_entities": TOPIC}
    assert graph(MeteredKG(KG)).invoke(q)["answers"] == ["Big"]
    off = graph(MeteredKG(KG)).invoke(q, context={"constraint": False})
    assert off["answers"] == FILMS
    bad = graph(MeteredKG(KG)).invoke(q, context={"constraint": "yes"})
    assert bad["answers"] == FILMS and [e["type"] for e in bad["errors"]] == ["ConfigError"]
    failed = graph(FailingKG(KG)).invoke(q)
    assert failed["answers"] == FILMS
    assert [(e["type"], e["halted"]) for e in failed["errors"]] == [("EndpointError", False)]
    # the node counts its KG calls
    node = make_constrain_node(MeteredKG(KG), Ctx(constraint=True))
    assert node({**q, "answers": FILMS})["usage"]["kg_calls"] >= 1
