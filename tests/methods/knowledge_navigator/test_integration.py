"""KnowledgeNavigator with the real local model, the real MetaQA KG and the bundled hop classifier."""

from __future__ import annotations

import pytest

from kg_agents.kg.base import verify_path
from kg_agents.kg.text import bracketed

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def metaqa():
    from kg_agents import open_kg

    return open_kg("metaqa")


def test_hop_classifier_bundled_validation_accuracy():
    from kg_agents.eval.datasets import load_metaqa
    from kg_agents.methods.knowledge_navigator.hops import load_hop_classifier

    clf = load_hop_classifier()
    assert clf.classes == [1, 2, 3]
    questions, gold = [], []
    for h in (1, 2, 3):
        qs = list(load_metaqa(h, split="validation", seed=0, limit=40))
        questions += [q.question for q in qs]
        gold += [h] * len(qs)
    pred = clf.predict(questions)
    accuracy = sum(p == g for p, g in zip(pred, gold, strict=True)) / len(gold)
    assert len(gold) == 120 and accuracy >= 0.9
    # user questions without brackets: the linked entity label is masked instead
    assert clf.predict(["who directed Splash"], [["Splash"]]) == clf.predict(["who directed [Splash]"])


def _first_question_and_zero_shot_graph(metaqa, hops):
    """The first dev-validation question of ``hops`` hops, its topic entities, and knowledge_navigator
    with the zero-shot local model: its default calibration makes two calls a ranking (the shipped
    adapter, the default on MetaQA, is run by tests/specialist/test_bundled.py)."""
    from kg_agents.eval.datasets import load_metaqa
    from kg_agents.llm import resolve_chat_model
    from kg_agents.methods.knowledge_navigator.graph import create_knowledge_navigator_graph

    q = next(iter(load_metaqa(hops, split="validation", seed=0, limit=1)))
    graph = create_knowledge_navigator_graph(metaqa, llm=resolve_chat_model("local"), adapter="none")
    return q, bracketed(q.question), graph


def test_knowledge_navigator_local_model_metaqa(metaqa):
    # (the adapter often rewrites the question as itself, a variant that is dropped)
    q, topics, g = _first_question_and_zero_shot_graph(metaqa, 1)
    out = g.invoke(
        {"question": q.question, "topic_entities": topics},
        # the variants' call and two calibrated relation rankings (two calls each) fit in 6
        context={"num_variants": 1, "max_llm_calls": 6, "max_triples": 40, "answer_max_tokens": 48},
    )
    assert out["errors"] == []
    analysis = next(t for t in out["trace"] if t["node"] == "analyse_question")
    assert analysis["hops_source"] == "classifier" and 1 <= analysis["hops"] <= 3
    votes = [t for t in out["trace"] if t["node"] == "select_relations"]
    assert votes and votes[0]["weights"] == [2.0, 1.0]
    assert out["evidence"], "the first hop always retrieves the kept relation's triples"
    assert 2 <= out["usage"]["llm_calls"] <= 7 and out["usage"]["input_tokens"] > 0
    for p in out["paths"]:
        assert verify_path(metaqa, p) and p.start in topics


def test_knowledge_navigator_ranks_the_relation_chain_with_the_local_model(metaqa):
    from kg_agents.core.chains import relation_chains

    q, topics, g = _first_question_and_zero_shot_graph(metaqa, 2)
    out = g.invoke(
        {"question": q.question, "topic_entities": topics},
        context={"hops": 2, "num_variants": 0, "max_triples": 40},
    )
    assert out["errors"] == []
    chain = next(t for t in out["trace"] if t["node"] == "select_chains")
    # one calibrated chain ranking (two calls), among the chains the graph has
    assert chain["asked_llm"] is True and len(chain["kept"]) == 1
    have, _ = relation_chains(metaqa, topics, 2)
    named = [[f"{'~' if d == 'in' else ''}{r}" for r, d in c] for c in have]
    assert chain["kept"][0] in named
    hops = [t for t in out["trace"] if t["node"] == "select_relations"]
    assert [h["chain_relations"] for h in hops] == [[r] for r in chain["kept"][0]][: len(hops)]
    assert out["usage"]["llm_calls"] <= 3  # the chain ranking and its baseline, and the answer
    for p in out["paths"]:
        assert verify_path(metaqa, p) and p.start in topics and len(p.hops) == 2


def test_knowledge_navigator_walks_a_chain_whole_with_revisit():
    """``revisit`` on PathQuestion's PQL-3H graph (self-loops where a release track and its recording
    share a name), the zero-shot model: the kept chain is walked whole in memory, and every answer ends
    one of its walks, verified."""
    from kg_agents import open_kg
    from kg_agents.methods.knowledge_navigator import create_knowledge_navigator_graph

    kg = open_kg("pql-3h")
    g = create_knowledge_navigator_graph(kg, pack="none", num_variants=0, revisit=True)
    question = "what is the releases of recording of [Robin_Hood] 's recording ?"
    out = g.invoke({"question": question, "topic_entities": ["Robin_Hood"]}, context={"hops": 3})
    assert out["errors"] == []
    kept = next(t for t in out["trace"] if t["node"] == "select_chains")["kept"]
    assert len(kept) == 1 and len(kept[0]) == 3
    assert [t["whole_chains"] for t in out["trace"] if t["node"] == "expand"] == [True]
    assert out["answers"] and {kg.label(p.end) for p in out["paths"]} == set(out["answers"])
    for p in out["paths"]:
        assert verify_path(kg, p) and p.start == "Robin_Hood" and len(p.hops) == 3
