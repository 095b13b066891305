"""The ``knowledge_navigator`` nodes called one by one, each with a small deps object (no graph)."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from kg_agents.core.metering import MeteredKG
from kg_agents.core.prompts import prompt_templates
from kg_agents.errors import ModelError
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import Triple
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.knowledge_navigator import KnowledgeNavigatorContext
from kg_agents.methods.knowledge_navigator.graph import PROMPT_NAMES
from kg_agents.methods.knowledge_navigator.nodes import (
    KnowledgeNavigatorDeps,
    after_expand,
    analyse_question,
    answer,
    check_context,
    clip_hops,
    entity_depths,
    expand,
    select_relations,
    verbalise_knowledge,
)
from tests.fakes import FakeChat

DEFAULTS = KnowledgeNavigatorContext(
    hops=None,
    max_hops=3,
    num_variants=2,
    top_k=1,
    top_m=1,
    original_weight=2.0,
    variant_weight=1.0,
    knowledge_format="joined_sentences",
    fewshot=False,
    max_core_entities=20,
    max_triples=200,
    max_llm_calls=40,
    max_answers=20,
    ground_answers=True,
    select_max_tokens=16,
    variants_max_tokens=40,
    answer_max_tokens=160,
    decide="generate",
    answer_ratio=0.5,
    calibrate=True,
    relation_chain=True,
    plan_example=True,
    whole_set=True,
    conjunction=True,
    conjunction_fallback=False,
    constraint=True,
    revisit=False,
)
SPLASH_DIRECTED = Triple("Splash", "directed_by", "Ron Howard")
SPLASH_WRITTEN = Triple("Splash", "written_by", "Babaloo Mandel")


class FixedHops:
    """A hop classifier that always predicts ``n`` (and records what it was asked)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.asked: list[tuple[list[str], list[list[str]]]] = []

    def predict(self, questions, entities):
        self.asked.append((list(questions), [list(e) for e in entities]))
        return [self.n] * len(questions)


class BrokenHops:
    def predict(self, questions, entities):
        raise ModelError("no checkpoint")


def make_deps(llm=None, *, hop_classifier=None, **options) -> KnowledgeNavigatorDeps:
    return KnowledgeNavigatorDeps(
        kg=MeteredKG(MemoryKG(CONTRACT_TRIPLES)),
        llm=llm if llm is not None else FakeChat(),
        prompts=prompt_templates("knowledge_navigator", PROMPT_NAMES),
        defaults=DEFAULTS,
        hop_classifier=hop_classifier,
        **options,
    )


def run(**context) -> SimpleNamespace:
    return SimpleNamespace(context=KnowledgeNavigatorContext(**context))


def test_pure_helpers():
    assert clip_hops(5, 3) == 3 and clip_hops(0, 3) == 1 and clip_hops(2, 0) == 1
    assert check_context(DEFAULTS) is None
    assert "top_m must be at least 1" in str(check_context(replace(DEFAULTS, top_m=0)))
    parents = {"Splash": SPLASH_WRITTEN, "Ron Howard": SPLASH_DIRECTED}
    assert entity_depths(parents, {"Babaloo Mandel"}) == {"Splash": 1, "Ron Howard": 2}


def test_analyse_question_predicts_hops_and_asks_for_variants():
    clf = FixedHops(2)
    llm = FakeChat(rules=[("ask exactly the same thing", "1. which films did [Babaloo Mandel] write?\n2. x")])
    state = {"question": "what did [Babaloo Mandel] write", "topic_entities": ["Babaloo Mandel"]}
    out = analyse_question(make_deps(llm, hop_classifier=clf), state, run(num_variants=1))
    assert out["hops"] == 2 and out["variants"] == ["which films did [Babaloo Mandel] write?"]
    assert clf.asked == [(["what did [Babaloo Mandel] write"], [["Babaloo Mandel"]])]
    assert out["core"] == ["Babaloo Mandel"] and out["retrieval_llm_calls"] == 1
    assert out["errors"] == [] and out["usage"]["llm_calls"] == 1


def test_analyse_question_falls_back_to_max_hops():
    state = {"question": "q", "topic_entities": ["Splash"]}
    out = analyse_question(make_deps(hop_classifier=BrokenHops()), state, run(num_variants=0, max_hops=2))
    assert out["hops"] == 2 and out["usage"]["llm_calls"] == 0
    (err,) = out["errors"]
    assert err["type"] == "Fallback" and "hop classifier unavailable (no checkpoint)" in err["message"]


def test_select_relations_votes_per_entity():
    llm = FakeChat(rules=[("[Splash]", "Answer: 1"), ("Splash", "Answer: 4")])
    state = {"question": "who directed [Splash]", "variants": ["who made Splash"], "core": ["Splash"]}
    out = select_relations(make_deps(llm), state)
    (vote,) = out["trace"][0]["votes"]
    assert vote["candidates"] == ["directed_by", "release_year", "starred_actors", "written_by"]
    assert vote["choices"] == [["directed_by"], ["written_by"]] and vote["scores"] == [2.0, 0.0, 0.0, 1.0]
    assert out["selected"] == {"Splash": [["directed_by", "out"]]} and out["retrieval_llm_calls"] == 2


class _BatchedRelations(MemoryKG):
    """A store that reads many entities' relations at once (as a SPARQL store does)."""

    def __init__(self) -> None:
        super().__init__(CONTRACT_TRIPLES)
        self.asked: list[tuple[str, ...]] = []

    def relations(self, entity, direction="out"):
        self.asked.append(("relations", entity, direction))
        return super().relations(entity, direction)

    def relations_many(self, entities, direction="out"):
        self.asked.append(("relations_many", direction, *entities))
        return {e: MemoryKG.relations(self, e, direction) for e in entities}


def test_select_relations_reads_the_core_relations_in_one_call_a_direction():
    llm = FakeChat(rules=[("Answer", "Answer: 1")], default="Answer: 1")
    state = {
        "question": "who starred in [Splash] and [Big]",
        "variants": [],
        "core": ["Splash", "Big", "Tom Hanks"],
    }
    store = _BatchedRelations()
    out = select_relations(replace(make_deps(llm), kg=MeteredKG(store)), state, run(num_variants=0))
    assert store.asked == [
        ("relations_many", "out", "Splash", "Big", "Tom Hanks"),
        ("relations_many", "in", "Splash", "Big", "Tom Hanks"),
    ]
    want = select_relations(
        make_deps(FakeChat(rules=[("Answer", "Answer: 1")], default="Answer: 1")), state, run(num_variants=0)
    )
    assert out["selected"] == want["selected"]


def test_select_relations_stops_at_the_budget():
    state = {"question": "q", "core": ["Splash"], "retrieval_llm_calls": 39}
    out = select_relations(make_deps(), state, run(num_variants=0, max_llm_calls=39))
    assert out["selected"] == {} and out["stop_reason"] == "max_llm_calls=39 reached at hop 1"


def test_expand_follows_the_selected_relations():
    state = {
        "hop": 0,
        "core": ["Babaloo Mandel"],
        "visited": ["Babaloo Mandel"],
        "selected": {"Babaloo Mandel": [["written_by", "in"]]},
    }
    out = expand(make_deps(), state, run(max_core_entities=1))
    assert out["core"] == ["Splash"] and out["hop"] == 1
    assert out["retrieved"] == [SPLASH_WRITTEN, Triple("Parenthood", "written_by", "Babaloo Mandel")]
    assert out["trace"][0]["core_cut"] is True and out["usage"]["kg_calls"] == 1
    assert after_expand({**state, **out, "hops": 2}) == "select_relations"
    assert after_expand({**state, **out, "hops": 1}) == "verbalise"


def test_expand_reads_each_kept_relation_once_for_its_whole_core():
    """A core of several entities with the same kept relations: one KG read per relation and direction,
    the triples in the core's order as one read per entity gives them."""
    state = {
        "hop": 0,
        "core": ["Splash", "Parenthood", "Big"],
        "visited": ["Ron Howard"],
        "selected": {
            "Splash": [["starred_actors", "out"], ["written_by", "out"]],
            "Parenthood": [["starred_actors", "out"]],
            "Big": [["starred_actors", "out"]],
        },
    }
    out = expand(make_deps(), state, run(max_core_entities=10))
    assert out["retrieved"] == [
        Triple("Splash", "starred_actors", "Tom Hanks"),
        SPLASH_WRITTEN,
        Triple("Parenthood", "starred_actors", "Steve Martin"),
        Triple("Big", "starred_actors", "Tom Hanks"),
    ]
    assert out["core"] == ["Tom Hanks", "Babaloo Mandel", "Steve Martin"]
    assert out["usage"]["kg_calls"] == 2


def test_verbalise_knowledge_keeps_the_deepest_triples():
    state = {"retrieved": [SPLASH_WRITTEN, SPLASH_DIRECTED]}
    out = verbalise_knowledge(make_deps(), state, run(max_triples=1))
    assert (
        out["knowledge"] == "<kg>\nSplash directed by Ron Howard.\n</kg>"
        and out["trace"][0]["triples_cut"] is True
    )
    out = verbalise_knowledge(make_deps(), state, run(knowledge_format="single_triples"))
    assert out["evidence"] == ["[Splash, written_by, Babaloo Mandel]", "[Splash, directed_by, Ron Howard]"]


@pytest.mark.parametrize(
    "raw,grounded,want",
    [
        ("Answer: Splash directed by Ron Howard", True, ["Ron Howard"]),
        ("Answer: Splash directed by Ron Howard", False, []),
    ],
)
def test_answer_grounds_and_finds_paths(raw, grounded, want):
    state = {
        "raw_answer": raw,
        "topic_entities": ["Babaloo Mandel"],
        "parents": {"Splash": SPLASH_WRITTEN, "Ron Howard": SPLASH_DIRECTED},
    }
    out = answer(make_deps(), state, run(ground_answers=grounded))
    assert out["answers"] == want
    paths = [p.to_text() for p in out["paths"]]
    assert paths == (
        ["Babaloo Mandel -> ~written_by -> Splash -> directed_by -> Ron Howard"] if grounded else []
    )


def test_answer_records_no_answer():
    out = answer(make_deps(), {"raw_answer": "", "parents": {}})
    assert out["answers"] == [] and [(e["node"], e["type"]) for e in out["errors"]] == [
        ("answer", "NoAnswer")
    ]
