"""Whole-answer datasets: metaqa-whole (hand-written forms executed on the KG) and webqsp-sample-whole."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from kg_agents.data import data_path
from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.eval.data_whole import WHOLE_FORMS, WholeForm, execute_form, read_forms
from kg_agents.eval.datasets import DATASETS, get_dataset
from kg_agents.kg import MemoryKG, open_kg, verify_path
from kg_agents.kg.base import Path

KG = MemoryKG(
    [
        ("Film A", "directed_by", "Ann"),
        ("Film B", "directed_by", "Ann"),
        ("Film C", "directed_by", "Bob"),
        ("Film A", "starred_actors", "Cid"),
        ("Film C", "starred_actors", "Cid"),
        ("Film B", "starred_actors", "Dee"),
        ("Film A", "release_year", "1994"),
        ("Film B", "release_year", "1995"),
    ]
)


def form(**kw):
    base = {"id": "x", "question": "q", "kind": "conjunction", "topics": (), "paths": ()}
    return WholeForm(**(base | kw))


def test_conjunction_is_the_intersection_with_a_path_from_each_topic():
    f = form(
        question="films by [Ann] with [Cid]", topics=("Ann", "Cid"), paths=("~directed_by", "~starred_actors")
    )
    out = execute_form(KG, f)
    assert out["answers"] == ["Film A"] and out["chain_answers"] == [2, 2] and out["hops"] == 1
    assert out["gold_paths"]["Film A"] == [
        "Ann -> ~directed_by -> Film A",
        "Cid -> ~starred_actors -> Film A",
    ]


def test_constraint_filters_the_chain_and_adds_the_attribute_triple():
    f = form(kind="constraint", topics=("Ann",), paths=("~directed_by",), constraint=("release_year", "1994"))
    out = execute_form(KG, f)
    assert out["answers"] == ["Film A"] and out["chain_answers"] == [2]
    assert out["gold_paths"]["Film A"] == ["Ann -> ~directed_by -> Film A", "Film A -> release_year -> 1994"]


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"topics": ("Ann", "Nobody"), "paths": ("~directed_by", "~starred_actors")}, "not in the KG"),
        ({"topics": ("Bob", "Cid"), "paths": ("~directed_by", "~starred_actors")}, "not a conjunction"),
        ({"topics": ("Ann", "Bob"), "paths": ("~directed_by", "~directed_by")}, "no answer"),
        (
            {
                "kind": "constraint",
                "topics": ("Bob",),
                "paths": ("~directed_by",),
                "constraint": ("release_year", "1994"),
            },
            "no answer",
        ),
        (
            {
                "kind": "constraint",
                "topics": ("Dee",),
                "paths": ("~starred_actors",),
                "constraint": ("release_year", "1995"),
            },
            "keeps all",
        ),
    ],
)
def test_a_form_that_fails_a_check_raises(kw, message):
    with pytest.raises(DataFormatError, match=message):
        execute_form(KG, form(**kw))


def test_too_many_answers_raise():
    f = form(kind="constraint", topics=("Ann",), paths=("~directed_by",), constraint=("release_year", "1994"))
    assert execute_form(KG, f, max_answers=1)["answers"] == ["Film A"]
    g = form(topics=("Ann", "Cid"), paths=("~directed_by", "~starred_actors"))
    with pytest.raises(DataFormatError, match="more than 0"):
        execute_form(KG, g, max_answers=0)


@pytest.mark.parametrize(
    ("rec", "message"),
    [
        ({"kind": "chain"}, "'kind' must be"),
        ({"question": "films by Ann with [Cid]"}, "bracketed"),
        ({"paths": ["~directed_by"]}, "one relation path per topic"),
        ({"constraint": {"relation": "release_year", "value": "1994"}}, "no constraint"),
        (
            {"kind": "constraint", "topics": ["Ann"], "question": "[Ann] films", "paths": ["~directed_by"]},
            "constraint",
        ),
        ({"paths": ["~directed_by", "a & b"]}, "conjunction"),
    ],
)
def test_read_forms_rejects_bad_lines(tmp_path, rec, message):
    good = {
        "id": "x",
        "question": "films by [Ann] with [Cid]",
        "kind": "conjunction",
        "topics": ["Ann", "Cid"],
        "paths": ["~directed_by", "~starred_actors"],
    }
    p = tmp_path / "forms.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(good | rec) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=message) as info:
        read_forms(p)
    assert info.value.line == 2


def test_read_forms_rejects_a_repeated_id(tmp_path):
    good = {
        "id": "x",
        "question": "[Ann] [Cid]",
        "kind": "conjunction",
        "topics": ["Ann", "Cid"],
        "paths": ["~a", "~b"],
    }
    p = tmp_path / "forms.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(good) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="duplicate id"):
        read_forms(p)


def test_metaqa_whole_is_registered_with_kinds_hops_and_splits():
    assert {"metaqa-whole", "webqsp-sample-whole"} <= set(DATASETS)
    ds = get_dataset("metaqa-whole")
    assert len(ds) == 100 and ds.kg == "metaqa"
    assert Counter(q.qtype for q in ds) == {"conjunction": 60, "constraint": 40}
    assert all(q.meta["kind"] == q.qtype and q.hops in (1, 2) for q in ds)
    train, val = get_dataset("metaqa-whole", "train"), get_dataset("metaqa-whole", "validation")
    assert (len(train), len(val)) == (80, 20) and not {q.id for q in train} & {q.id for q in val}
    for q in ds:
        assert 1 <= len(q.answers) <= 30
        if q.qtype == "conjunction":
            assert len(q.topic_entities) == 2 and all(n > len(q.answers) for n in q.meta["chain_answers"])
        else:
            assert len(q.topic_entities) == 1 and q.meta["chain_answers"][0] > len(q.answers)
            assert set(q.meta["constraint"]) == {"relation", "value"}


def test_metaqa_whole_file_is_the_forms_executed_on_the_kg():
    """The computed file follows its source: every form executes to the stored answers and gold paths,
    and every gold path verifies on the KG (rerun scripts/metaqa_whole.py after editing the forms)."""
    kg = open_kg("metaqa")
    forms = read_forms(data_path(WHOLE_FORMS))
    stored = {q.id: q for q in get_dataset("metaqa-whole")}
    assert [f.id for f in forms] == list(stored)
    for f in forms:
        out = execute_form(kg, f)
        q = stored[f.id]
        assert out["answers"] == q.answers and out["gold_paths"] == q.meta["gold_paths"], f.id
        for paths in out["gold_paths"].values():
            parsed = [Path.from_text(p) for p in paths]
            assert all(verify_path(kg, p) for p in parsed)
            assert {p.start for p in parsed[: len(f.topics)]} == set(f.topics)


def test_webqsp_sample_whole():
    ds = get_dataset("webqsp-sample-whole")
    assert [(q.id, q.qtype) for q in ds] == [
        ("WebQTest-1", "constraint"),
        ("WebQTest-3", "conjunction"),
        ("WebQTest-12", "constraint"),
        ("WebQTest-21", "constraint"),
    ]
    q3 = ds[1]
    assert q3.topic_entities == ["Coronation Street", "Ken Barlow"] and q3.meta["added_topics"] == [
        "Ken Barlow"
    ]
    assert "Ken Barlow" in {
        e for t in ds.kg_for(q3).neighbors("Ken Barlow", direction="both") for e in (t.head, t.tail)
    }
    with pytest.raises(ConfigError, match="no train/validation"):
        get_dataset("webqsp-sample-whole", "train")
