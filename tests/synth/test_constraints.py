"""Constraint questions: a chain's answers filtered by an attribute value, verified against the graph."""

from __future__ import annotations

import json

from kg_agents.cli.commands import main
from kg_agents.eval.datasets import load_jsonl_questions
from kg_agents.kg.base import Path, verify_path
from kg_agents.kg.memory import MemoryKG
from kg_agents.kg.paths import chain_step
from kg_agents.synth import execute, parse_relation_path, read_questions, synthesise
from kg_agents.synth.phrase import VALUE_PLACEHOLDER, fill_form, generic_forms
from kg_agents.synth.questions import SynthQuestion


def assert_constraints(kg, result) -> None:
    """Each constraint's answers are its chain's that have the value; strictly fewer; gold paths verify."""
    qs = [q for q in result.questions if q.kind == "constraint"]
    assert qs
    for q in qs:
        chain_text, step_text = q.relation_path.split(" | ")
        (rel, direction), value = parse_relation_path(step_text)[0], q.constraint[1]
        assert q.constraint[0] == step_text and len(q.topic_entities) == 1
        chain = execute(kg, q.topic_entities[0], chain_text)

        def has(a, rel=rel, direction=direction, value=value):
            return kg.has_triple(a, rel, value) if direction == "out" else kg.has_triple(value, rel, a)

        kept = {a for a in chain if has(a)}
        assert set(q.answers) == kept and 1 <= len(kept) < len(chain)
        assert q.hops == len(parse_relation_path(chain_text))
        # the value is every one of its triples' end along that one relation: an attribute
        side = "in" if direction == "out" else "out"
        assert kg.relations(value, "out" if side == "in" else "in") == [] and set(
            kg.relations(value, side)
        ) == {rel}
        chain_path, attribute = (Path.from_text(t) for t in q.gold_paths)
        assert verify_path(kg, chain_path) and verify_path(kg, attribute)
        assert chain_path.start == q.topic_entities[0] and chain_path.end == q.answers[0]
        assert tuple(chain_step(h) for h in chain_path.hops) == parse_relation_path(chain_text)
        assert attribute.start == q.answers[0] and attribute.end == value and len(attribute) == 1
        # the value is written as it is, the topic in brackets
        label = kg.label(q.topic_entities[0])
        assert fill_form(q.template, [label], kg.label(value)) == q.question
        assert f"[{label}]" in q.question and f"[{kg.label(value)}]" not in q.question
        assert VALUE_PLACEHOLDER in q.template


def test_constraints_on_a_small_graph(films):
    r = synthesise(films, n=30, hops=(1, 2), kinds=("chain", "constraint"), seed=4)
    assert r.stats["per_kind"] == {"chain": 15, "constraint": 15}
    assert r.stats["shortfall"]["constraint"] == 0 and r.stats["constraint_tries"] > 0
    assert_constraints(films, r)
    # films' attributes are years, genres, writers and directors (each only ever reached from films)
    steps = {q.constraint[0] for q in r.questions if q.kind == "constraint"}
    assert steps <= {"release_year", "has_genre", "written_by", "directed_by"}


def test_a_value_with_other_facts_is_not_an_attribute():
    # 1990 is also a film's title here: it has facts of its own, so it is no attribute value
    triples = [(f"Film {i}", "directed_by", f"D{i % 2}") for i in range(6)]
    triples += [(f"Film {i}", "release_year", "1990" if i < 2 else "1991") for i in range(6)]
    triples += [("1990", "directed_by", "D0")]
    kg = MemoryKG(triples)
    r = synthesise(kg, n=10, hops=(1,), kinds=("constraint",), seed=0, min_topics=1)
    assert all(q.constraint[1] != "1990" for q in r.questions)
    assert r.stats["filters"]["not_attribute"] > 0


def test_constraint_round_trips_through_jsonl(films, tmp_path):
    r = synthesise(films, n=10, hops=(1,), kinds=("constraint",), seed=1)
    q = r.questions[0]
    rec = q.to_json()
    assert rec["qtype"] == "constraint" and rec["constraint"] == {
        "relation": q.constraint[0],
        "value": q.constraint[1],
    }
    assert SynthQuestion.from_json(json.loads(json.dumps(rec))) == q
    chain = next(x for x in synthesise(films, n=4, hops=(1,), seed=1).questions)
    assert "constraint" not in chain.to_json() and SynthQuestion.from_json(chain.to_json()).constraint == ()


def test_constraint_forms_name_the_chain_and_the_value():
    forms = generic_forms("~directed_by | release_year", "constraint")
    assert forms[0] == "which of the entities directed by [X] have {V} as their release year?"
    assert all("[X]" in f and VALUE_PLACEHOLDER in f and "[Y]" not in f for f in forms)
    two = generic_forms("directed_by ~directed_by | in_language", "constraint")
    assert all("language" in f for f in two)


def test_cli_kinds_space_separated(tmp_path, capsys):
    out = tmp_path / "s"
    argv = ["synth", "pq-2h", "--out", str(out), "--n", "30", "--kinds", "chain", "conjunction", "constraint"]
    assert main(argv) == 0
    assert "conjunctions 10; constraints 10" in capsys.readouterr().out
    qs = read_questions(out / "train.jsonl") + read_questions(out / "validation.jsonl")
    assert {q.kind for q in qs} == {"chain", "conjunction", "constraint"}
    ds = load_jsonl_questions(out / "train.jsonl", kg="pq-2h")
    assert {q.qtype for q in ds} <= {"chain", "conjunction", "constraint"}
    assert all("relation" in q.meta["constraint"] for q in ds if q.qtype == "constraint")
