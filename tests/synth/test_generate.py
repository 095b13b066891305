"""synthesise: every label checked against the graph, each filter, determinism, balance and the split."""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import subprocess
import sys
from collections import Counter
from pathlib import Path as FsPath

import pytest

from kg_agents.errors import ConfigError
from kg_agents.kg import open_kg
from kg_agents.kg.base import Path, verify_path
from kg_agents.kg.memory import MemoryKG
from kg_agents.kg.paths import chain_step
from kg_agents.synth import (
    FILTERS,
    check_chain,
    execute,
    parse_relation_path,
    read_topic_labels,
    synthesise,
)
from kg_agents.synth.phrase import fill_form, filler_words, generic_forms, noised_forms
from kg_agents.synth.shares import direction_pattern, take_turns
from tests.fakes import FakeChat
from tests.synth.conftest import film_triples

ROOT = FsPath(__file__).resolve().parents[2]


def assert_verified(kg, result, max_answers: int = 20) -> None:
    """Every question's answers are its relation path's executed set, and its gold paths verify."""
    assert result.questions
    for q in result.questions:
        chains = q.relation_path.split(" & ")
        assert len(chains) == len(q.topic_entities) == len(q.gold_paths)
        sets = [execute(kg, t, p) for t, p in zip(q.topic_entities, chains, strict=True)]
        answers = set.intersection(*(set(s) for s in sets))
        assert set(q.answers) == answers and list(q.answers) == sorted(answers)
        assert 1 <= len(q.answers) <= max_answers
        assert not set(q.topic_entities) & answers
        if q.kind == "chain":
            assert len(chains) == 1 and q.hops == len(parse_relation_path(chains[0]))
        else:
            assert q.kind == "conjunction" and len(set(q.topic_entities)) == 2
            assert all(len(answers) < len(s) for s in sets)
            assert q.hops == max(len(parse_relation_path(c)) for c in chains)
        assert q.gold_path == q.gold_paths[0]
        for topic, chain, text in zip(q.topic_entities, chains, q.gold_paths, strict=True):
            path = Path.from_text(text)
            assert verify_path(kg, path)
            assert path.start == topic and path.end == q.answers[0]
            assert tuple(chain_step(h) for h in path.hops) == parse_relation_path(chain)
        labels = [kg.label(t) for t in q.topic_entities]
        assert fill_form(q.template, labels) == q.question
        assert all(f"[{label}]" in q.question for label in labels)
        assert list(q.answer_labels) == [kg.label(a) for a in q.answers]
        assert q.split in ("train", "validation")
    assert len({q.id for q in result.questions}) == len(result.questions)


def test_questions_on_a_small_graph_are_all_verified(films):
    r = synthesise(films, n=60, hops=(1, 2, 3), kinds=("chain", "conjunction"), seed=1)
    assert_verified(films, r)
    assert r.stats["n"] == len(r.questions) == 60
    assert set(r.stats["filters"]) == set(FILTERS)
    assert r.stats["per_kind"] == {"chain": 30, "conjunction": 30}
    assert sum(r.stats["per_relation_path"].values()) == 60


# --------------------------------------------------------------------------- filters, one by one
def test_filter_topic_and_intermediate_hubs():
    kg = MemoryKG(
        [(f"F{i}", "genre", "Drama") for i in range(6)] + [("A", "likes", "Drama"), ("F0", "by", "D")]
    )
    assert check_chain(kg, "Drama", "~genre", max_degree=5) == "topic_hub"
    assert check_chain(kg, "A", "likes ~genre by", max_degree=5) == "intermediate_hub"
    assert set(check_chain(kg, "A", "likes ~genre by", max_degree=10).answers) == {"D"}


def test_filter_exceeds_cap_too_many_answers_and_backtrack():
    kg = MemoryKG([(f"F{i}", "directed_by", "D") for i in range(5)] + [("F0", "genre", "G")])
    assert check_chain(kg, "D", "~directed_by", cap=4) == "exceeds_cap"
    assert check_chain(kg, "D", "~directed_by", max_answers=4) == "too_many_answers"
    assert len(check_chain(kg, "D", "~directed_by", max_answers=5).answers) == 5
    assert check_chain(kg, "F0", "genre ~genre") == "backtrack"


def test_filter_answer_is_topic_and_no_answers():
    kg = MemoryKG([("A", "child", "B"), ("B", "parent", "A"), ("C", "child", "B")])
    assert check_chain(kg, "A", "child parent") == "answer_is_topic"
    assert check_chain(kg, "A", "child child") == "no_answers"
    assert set(check_chain(kg, "A", "child ~child").answers) == {"C"}


def test_filter_answer_label():
    kg = MemoryKG([("F1", "mark", "!!"), ("F1", "by", "Tom Hanks"), ("F2", "tag", "tom hanks")])
    assert check_chain(kg, "F1", "mark") == "answer_label"  # "!!" normalises to nothing
    assert set(check_chain(kg, "F1", "by").answers) == {"Tom Hanks"}
    labels = read_topic_labels(kg)
    assert labels.shared == {"tom hanks": ("Tom Hanks", "tom hanks")}
    assert "Tom Hanks" not in labels.topics and "!!" not in labels.topics
    assert check_chain(kg, "F1", "by", unique_answer_labels=True, labels=labels) == "answer_label"


def test_topics_need_a_label_that_can_stand_in_brackets():
    kg = MemoryKG(
        [
            ("A [x]", "r", "B"),
            (" C", "r", "B"),
            ("http://ex.org/e", "r", "B"),
            ("E", "r", "the"),
            ("e.", "r", "F"),
        ],
    )
    labels = read_topic_labels(kg)
    # brackets, a surrounding space, an IRI, one normalised label for two entities ("E", "e."), and a
    # label that normalises to nothing ("the") are all left out
    assert labels.topics == ["B", "F"]
    assert labels.bad_topic_label == labels.read - len(labels.topics)


def test_filters_counted_in_a_run():
    triples = film_triples(24)
    triples += [(f"Film {i}", "has_genre", "genre") for i in range(3)]  # the answer names the relation
    triples += [(f"Film {i}", "mark", "!!") for i in range(4)]  # an answer with no matchable label
    # three more relations that read as "directed by": from each of 5 films 4 relations and 3 forms (one
    # question too many), to each of 5 others 3 relations and 2 forms (one too many)
    triples += [
        (f"Film {i}", r, f"Other {i}") for i in range(5) for r in ("directedBy", "directed-by", "Directed_By")
    ]
    kg = MemoryKG(triples)
    r = synthesise(kg, n=400, hops=(1,), seed=0)
    assert_verified(kg, r)
    f = r.stats["filters"]
    assert f["answer_leak"] == 3 and f["answer_label"] == 4 and f["duplicate_question"] == 10
    assert not any(q.relation_path == "mark" for q in r.questions)
    assert len({q.question for q in r.questions}) == len(r.questions)
    assert r.stats["shortfall"]["chain_1_hop"] > 0


def test_rare_relation_paths_are_left_out():
    kg = MemoryKG([*film_triples(20), ("Film 0", "remade_as", "Film 1")])
    r = synthesise(kg, n=100, hops=(1,), seed=0)
    assert r.stats["relation_paths"]["rare"] == 2
    assert not any("remade_as" in q.relation_path for q in r.questions)
    r = synthesise(kg, n=100, hops=(1,), seed=0, min_topics=1)
    assert any("remade_as" in q.relation_path for q in r.questions)


# --------------------------------------------------------------------------- balance and split
def test_each_relation_path_gets_its_share(films):
    r = synthesise(films, n=40, hops=(1,), seed=3)
    per = r.stats["per_relation_path"]
    assert len(per) == 8 and set(per.values()) == {5}


def test_hop_mix_is_honoured(films):
    r = synthesise(films, n=40, hops=(1, 2), hop_mix={1: 1, 2: 3}, seed=0, balance="path")
    assert r.stats["per_hop"] == {"1": 10, "2": 30}
    per = Counter(q.relation_path for q in r.questions if q.hops == 2)
    assert max(per.values()) <= math.ceil(30 / len(per)) + 1
    with pytest.raises(ConfigError, match="hop_mix"):
        synthesise(films, n=10, hops=(1, 2), hop_mix={3: 1})
    with pytest.raises(ConfigError, match="hop_mix"):
        synthesise(films, n=10, hops=(1, 2), hop_mix=[1, -1])


def people_triples(n: int = 60) -> list[tuple[str, str, str]]:
    """People with a spouse, a nationality, a religion and a profession: their chains of two hops along
    the triples (``spouse nationality``) are few beside those that walk against one (``~religion ...``)."""
    attributes = (
        ("nationality", "Country", 5),
        ("religion", "Religion", 7),
        ("profession", "Profession", 11),
    )
    triples = [(f"Person {i}", "spouse", f"Person {(i + 1) % n}") for i in range(n)]
    return triples + [(f"Person {i}", r, f"{kind} {i % m}") for i in range(n) for r, kind, m in attributes]


def test_direction_patterns_share_a_hop_count():
    kg = MemoryKG(people_triples(), name="people")
    by = {b: synthesise(kg, n=200, hops=(2,), seed=0, balance=b) for b in ("direction", "path")}
    shares = {b: r.stats["per_direction"] for b, r in by.items()}
    assert sorted(shares["direction"]) == ["ii", "io", "oi", "oo"]
    assert sum(shares["direction"].values()) == 200 == sum(shares["path"].values())
    # each pattern its quarter; by relation path, a pattern's share follows its number of relation paths
    assert set(shares["direction"].values()) == {50}
    assert shares["path"]["oo"] < 50 and shares["path"]["io"] > 90
    assert by["direction"].stats["settings"]["balance"] == "direction"
    with pytest.raises(ConfigError, match="balance"):
        synthesise(kg, n=10, balance="relation")


def test_take_turns_draws_only_what_it_takes():
    drawn = []

    def items(key):
        for i in range(5):
            drawn.append((key, i))
            yield (key, i)

    made = take_turns({"a": items("a"), "b": items("b")}, 3, random.Random(0))
    assert len(made) == 3 and drawn == made
    assert direction_pattern("~r s ~t") == "ioi"


def test_no_topic_and_path_in_both_splits(films):
    r = synthesise(films, n=80, hops=(1, 2), kinds=("chain", "conjunction"), validation_fraction=0.25)
    keys = {
        s: {(q.topic_entities, q.relation_path) for q in r.questions if q.split == s}
        for s in ("train", "validation")
    }
    assert keys["train"] and keys["validation"] and not keys["train"] & keys["validation"]
    groups = Counter((q.kind, q.hops) for q in r.questions)
    val = Counter((q.kind, q.hops) for q in r.validation)
    assert all(val[g] == round(0.25 * c) for g, c in groups.items())
    assert len(r.train) + len(r.validation) == 80


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"kinds": ("question",)}, "kinds"),
        ({"kinds": ()}, "kinds"),
        ({"n": -1}, "n must"),
        ({"max_answers": 0}, "max_answers"),
        ({"validation_fraction": 1.0}, "validation_fraction"),
        ({"hops": (4,)}, "hops"),
        ({"relation_noise": 1.5}, "relation_noise"),
        ({"relation_noise": True}, "relation_noise"),
        ({"relation_noise": "0.2"}, "relation_noise"),
    ],
)
def test_bad_arguments_are_config_errors(films, kwargs, match):
    with pytest.raises(ConfigError, match=match):
        synthesise(films, **kwargs)


# --------------------------------------------------------------------------- conjunctions
def test_conjunctions_are_verified_and_narrower(films):
    r = synthesise(films, n=20, hops=(1, 2), kinds=("conjunction",), seed=2)
    assert_verified(films, r)
    assert r.stats["per_kind"] == {"conjunction": 20}
    assert r.stats["filters"]["not_narrower"] > 0
    assert all(q.question.startswith(("which entities are both", "name what is both")) for q in r.questions)


# --------------------------------------------------------------------------- determinism
def _digest(result) -> str:
    lines = [json.dumps(q.to_json(), sort_keys=True) for q in result.questions]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


_SCRIPT = (
    "import hashlib, json\n"
    "from kg_agents.kg import open_kg\n"
    "from kg_agents.synth import synthesise\n"
    "r = synthesise(open_kg('pq-2h'), n=120, kinds=('chain', 'conjunction', 'constraint'), seed=7)\n"
    "lines = [json.dumps(q.to_json(), sort_keys=True) for q in r.questions]\n"
    "print(hashlib.sha256(chr(10).join(lines).encode()).hexdigest())\n"
)


def test_a_seed_gives_the_same_questions_whatever_the_hash_seed():
    kg = open_kg("pq-2h")
    kinds = ("chain", "conjunction", "constraint")
    a = synthesise(kg, n=120, kinds=kinds, seed=7)
    b = synthesise(kg, n=120, kinds=kinds, seed=7)
    c = synthesise(kg, n=120, kinds=kinds, seed=8)
    assert a.stats["per_kind"] == {"chain": 40, "conjunction": 40, "constraint": 40}
    assert [q.to_json() for q in a.questions] == [q.to_json() for q in b.questions]
    assert _digest(a) != _digest(c)
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
        out = subprocess.run(
            [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, cwd=ROOT, check=True
        )
        assert out.stdout.strip() == _digest(a)


# --------------------------------------------------------------------------- paraphrase
def test_paraphrased_forms_are_used_once_per_relation_path(films):
    def reply(prompt: str) -> str:
        if "genre" in prompt and "directed" not in prompt:
            return "Which kind of genre is [X]?\nWhat genre would you say [X] has?"
        return "no rewrite here"

    llm = FakeChat(default=reply)
    r = synthesise(films, n=30, hops=(1, 2), seed=0, llm=llm, paraphrase=True, examples=["how tall is [A]?"])
    assert_verified(films, r)
    paths = {q.relation_path for q in r.questions}
    assert len(llm.prompts) == len(paths)  # one call per relation path, not per question
    genre = [q for q in r.questions if q.relation_path == "has_genre"]
    assert genre and all(
        q.template in ("Which kind of genre is [X]?", "What genre would you say [X] has?") for q in genre
    )
    others = [q for q in r.questions if q.relation_path == "directed_by"]
    assert others and all(q.template in generic_forms("directed_by") for q in others)  # generic forms stayed
    assert r.stats["paraphrase"]["calls"] == len(paths) and r.stats["paraphrase"]["kept"] >= 2
    assert "how tall is [A]?" in llm.prompts[0]


# --------------------------------------------------------------------------- relation noise
def test_relation_noise_names_an_inner_hop_by_a_word_the_graph_does_not_use(films):
    plain = synthesise(films, n=60, hops=(1, 2, 3), seed=1)
    noised = synthesise(films, n=60, hops=(1, 2, 3), seed=1, relation_noise=1.0)
    assert_verified(films, noised)  # the paths and answers are the true ones
    fillers = set(filler_words(films.all_relations()))  # no word of the graph's relations
    multi = [q for q in noised.questions if q.hops > 1]
    assert multi and noised.stats["relation_noise"] == {"share": 1.0, "questions": len(multi)}
    for q in multi:
        steps = parse_relation_path(q.relation_path)
        words = fillers & set(q.template.replace("'s", " ").replace("?", " ").replace(".", " ").split())
        inner = range(len(steps) - 1)
        assert any(q.template in noised_forms(steps, i, w) for i in inner for w in words), q.template
        assert q.template not in generic_forms(q.relation_path)
    assert all(q.template in generic_forms(q.relation_path) for q in noised.questions if q.hops == 1)
    # the default draws nothing: the same questions as before the option existed
    assert plain.stats["relation_noise"] == {"share": 0.0, "questions": 0}
    assert [q.to_json() for q in plain.questions] == [
        q.to_json() for q in synthesise(films, n=60, hops=(1, 2, 3), seed=1, relation_noise=0).questions
    ]


def test_noised_forms_keep_the_last_hop_and_check_their_arguments():
    assert (
        noised_forms("spouse nationality", 0, "mentor")[0] == "what is the nationality of the mentor of [X]?"
    )
    assert "what is [X]'s mentor's nationality?" in noised_forms("spouse nationality", 0, "mentor")
    assert noised_forms("~directed_by has_genre", 0, "mentor")[0] == (
        "what is the genre of the entities whose mentor is [X]?"
    )
    with pytest.raises(ConfigError, match="before the last"):
        noised_forms("spouse nationality", 1, "mentor")
    with pytest.raises(ConfigError, match="lower-case"):
        noised_forms("spouse nationality", 0, "Heir [Y]")
    words = filler_words(["people.person.spouse", "has_genre"])
    assert "spouse" not in words and "genre" not in words and "mentor" in words and "the" not in words
    assert words == sorted(words) and len(words) > 10_000


# --------------------------------------------------------------------------- the bundled graphs
def test_pathquestion_graph(capsys):
    kg = open_kg("pq-2h")
    r = synthesise(kg, n=400, kinds=("chain", "conjunction"), seed=0)
    assert_verified(kg, r)
    assert r.stats["n"] == 400 and not any(r.stats["shortfall"].values())
    with capsys.disabled():
        print(
            "\npq-2h n=400:",
            json.dumps({k: r.stats[k] for k in ("per_kind", "per_hop", "filters", "seconds")}),
        )


@pytest.mark.slow
def test_metaqa_graph(capsys):
    kg = open_kg("metaqa")
    r = synthesise(kg, n=600, kinds=("chain", "conjunction"), seed=0)
    assert_verified(kg, r)
    assert r.stats["n"] == 600 and not any(r.stats["shortfall"].values())
    with capsys.disabled():
        print(
            "\nmetaqa n=600:",
            json.dumps({k: r.stats[k] for k in ("per_kind", "per_hop", "filters", "seconds")}),
        )
