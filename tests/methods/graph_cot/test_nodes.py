"""graph_cot's nodes called alone: a GraphCoTDeps over the contract KG and a FakeChat, no graph."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from langgraph.types import Send

from kg_agents.core.metering import MeteredKG
from kg_agents.errors import ModelError
from kg_agents.kg.base import Triple, verify_path
from kg_agents.methods.graph_cot.interaction import (
    EXPLORE_PROMPTS,
    ExploreInteraction,
    load_prompts,
)
from kg_agents.methods.graph_cot.nodes import (
    GraphCoTDeps,
    answer,
    expand,
    prepare,
    root_branch,
    route_evaluate,
    route_expand,
    score,
    select,
    vote,
)
from kg_agents.methods.graph_cot.state import GraphCoTContext, run_settings
from kg_agents.tools.kg_tools import KGToolbox
from tests.fakes import FakeChat
from tests.methods.graph_cot.helpers import (
    END_Q,
    EXTRACT,
    FINAL,
    KG,
    PRUNE_REL,
    SCORE,
    STEP,
    THOUGHT,
    VOTE,
    agent_interaction,
    agent_rules,
    explore_rules,
    text_chat,
)

QUESTION = "who directed [Splash]"
DIRECTED = Triple("Splash", "directed_by", "Ron Howard")


def _context(**options: Any) -> GraphCoTContext:
    base = dict(
        strategy="cot", evaluator="score", k=3, t=1, depth=3, max_steps=10, search_depth=1, decide="generate"
    )
    return GraphCoTContext(**{**base, **options})


def agent_deps(llm: FakeChat, **options: Any) -> GraphCoTDeps:
    """The deps ``create_graph_agent_graph`` builds, with text actions and the factory options given."""
    return GraphCoTDeps(agent_interaction(llm), _context(**options))


def explore_deps(llm: FakeChat, **options: Any) -> GraphCoTDeps:
    mkg = MeteredKG(KG)
    explorer = ExploreInteraction(
        llm,
        mkg,
        KGToolbox(mkg),
        load_prompts(None, EXPLORE_PROMPTS),
        40,
        None,
        max_entities=3,
        max_relations=3,
        fanout_limit=50,
        keep_entities=5,
    )
    return GraphCoTDeps(explorer, _context(**options))


def _branch(cid: str, **fields: Any) -> dict[str, Any]:
    level = cid.count(".")
    return {**root_branch(["Splash"]), "id": cid, "parents": ["r"], "group": "r", "level": level, **fields}


# --------------------------------------------------------------------------- prepare
def test_prepare_links_the_bracketed_topic_entity_and_makes_the_root():
    llm = text_chat([])
    out = prepare(agent_deps(llm), {"question": QUESTION})
    assert out["topic_entities"] == ["Splash"] and out["errors"] == []
    assert out["frontier"] == [root_branch(["Splash"])] and out["level"] == 0
    assert out["settings"] == {
        **run_settings(_context()),
        "levels": 10,
        "k_eff": 1,
        "t_eff": 1,
        "walk_hops": None,
    }
    assert out["trace"] == [
        {
            "node": "prepare",
            "topic_entities": ["Splash"],
            "strategy": "cot",
            "evaluator": "score",
            "mode": "text",
            "hops": None,
        }
    ]
    assert out["usage"]["kg_calls"] >= 1 and out["usage"]["llm_calls"] == 0
    assert not llm.calls  # prepare asks the model nothing


def test_prepare_ends_an_empty_question_and_a_bad_run_context():
    deps = agent_deps(text_chat([]))
    out = prepare(deps, {"question": "   "})
    assert out["answers"] == [] and out["frontier"] == []
    assert [(e["node"], e["type"], e["message"]) for e in out["errors"]] == [
        ("prepare", "EmptyQuestion", "empty question")
    ]
    out = prepare(deps, {"question": QUESTION}, SimpleNamespace(context={"evaluator": "vote"}))
    assert out["answers"] == [] and out["errors"][0]["type"] == "ConfigError"
    assert "evaluator must be one of" in out["errors"][0]["message"]


def test_prepare_lays_the_run_context_over_the_factory_options():
    deps = agent_deps(text_chat([]), strategy="tot", evaluator="select", k=3, t=2, depth=2)
    settings = prepare(deps, {"question": QUESTION}, SimpleNamespace(context=GraphCoTContext(k=2)))[
        "settings"
    ]
    assert (settings["strategy"], settings["evaluator"], settings["k"], settings["t"]) == (
        "tot",
        "select",
        2,
        2,
    )
    assert (settings["k_eff"], settings["t_eff"], settings["levels"]) == (2, 2, 2)
    assert deps.defaults.k == 3  # the factory's context is not changed by a run


def test_route_expand_sends_k_candidates_per_unfinished_branch():
    settings = run_settings(_context(strategy="tot", k=2))
    done = {**_branch("r.2"), "done": True}
    state = {"question": QUESTION, "settings": settings, "frontier": [_branch("r.1"), done], "level": 1}
    sends = route_expand(state)
    assert [(s.node, s.arg["parent"]["id"], s.arg["j"]) for s in sends] == [
        ("expand", "r.1", 0),
        ("expand", "r.1", 1),
    ]
    assert route_expand({**state, "level": 3}) == "answer"  # depth spent


# --------------------------------------------------------------------------- expand
def test_expand_runs_one_agent_step_as_a_child():
    llm = text_chat(
        agent_rules(step="Thought: I need the director.\nAction: NeighborCheck[Splash, directed_by]")
    )
    deps = agent_deps(llm)
    payload = {
        "question": QUESTION,
        "settings": run_settings(deps.defaults),
        "parent": root_branch(["Splash"]),
        "pos": 0,
        "j": 0,
    }
    out = expand(deps, payload)
    [child] = out["candidates"]
    assert (child["id"], child["parents"], child["group"], child["level"]) == ("r.1", ["r"], "r", 1)
    assert child["triples"] == [DIRECTED] and child["starts"] == ["Splash"] and not child["done"]
    assert child["steps"][0]["observation"] == "The directed_by neighbors of Splash are ['Ron Howard']."
    assert out["trace"] == [
        {
            "node": "expand",
            "id": "r.1",
            "thought": "I need the director.",
            "action": "NeighborCheck[Splash, directed_by]",
            "done": False,
        }
    ]
    assert llm.calls[STEP] == 1 and out["usage"]["llm_calls"] == 1


def test_expand_records_a_model_error():
    deps = agent_deps(text_chat([(STEP, ModelError("the model server is down"))]))
    payload = {"question": QUESTION, "settings": run_settings(deps.defaults), "parent": root_branch([])}
    out = expand(deps, {**payload, "pos": 0, "j": 0})
    assert "candidates" not in out
    assert [(e["node"], e["type"]) for e in out["errors"]] == [("expand", "ModelError")]


def test_expand_explores_the_graph():
    def thought(prompt: str) -> str:
        return "I need the director of Splash."

    llm = text_chat(explore_rules(thought))
    deps = explore_deps(llm)
    payload = {"question": QUESTION, "settings": run_settings(deps.defaults), "parent": root_branch([])}
    out = expand(deps, {**payload, "pos": 0, "j": 0})
    [child] = out["candidates"]
    assert child["triples"] == [DIRECTED] and child["starts"] == ["Splash"]
    assert child["visited"] == ["Splash"] and child["seen"] == ["Splash", "Ron Howard"]
    [rec] = out["trace"]
    assert rec["extracted"] == ["Splash"] and rec["linked"] == ["Splash"]
    assert rec["search"][0]["relations"] == {"Splash": ["directed_by"]} and rec["search"][0]["end"] is True
    assert dict(llm.calls) == {THOUGHT: 1, EXTRACT: 1, PRUNE_REL: 1, END_Q: 1}


# --------------------------------------------------------------------------- evaluation
def test_score_and_vote_nodes():
    llm = text_chat(agent_rules(score="Score: 0.9", vote="Choice 1 is weak. The best choice is 2"))
    deps = agent_deps(llm)
    a, b = _branch("r.1"), _branch("r.2")
    out = score(deps, {"question": QUESTION, "cand": a, "decide": "generate"})
    assert out["scores"] == {"r.1": 0.9} and out["trace"][0]["score"] == 0.9
    out = vote(deps, {"question": QUESTION, "group": "r", "cands": [a, b], "decide": "generate"})
    assert out["votes"] == {"r": ["r.2", "r.1"]} and out["trace"][0]["parsed"] is True
    assert llm.calls[SCORE] == 1 and llm.calls[VOTE] == 1


def test_ranked_score_and_vote_nodes():
    def logprobs(text: str, options: list[str]) -> list[float]:
        if options[0] == "Choice 1":  # the Selection vote: choice 2 is the likeliest
            return [-3.0, -0.1]
        return [0.0 if o == "0.8" else -50.0 for o in options]  # the Score vote: all mass on 0.8

    llm = FakeChat(logprobs=logprobs, tools=False)
    deps = agent_deps(llm)
    a, b = _branch("r.1"), _branch("r.2")
    out = score(deps, {"question": QUESTION, "cand": a, "decide": "rank"})
    assert out["scores"]["r.1"] == pytest.approx(0.8, abs=1e-3)
    out = vote(deps, {"question": QUESTION, "group": "r", "cands": [a, b], "decide": "rank"})
    assert out["votes"] == {"r": ["r.2", "r.1"]} and llm.calls["logprobs"] == 2


def test_route_evaluate_and_select_keep_the_best_of_each_group():
    settings = run_settings(_context(strategy="tot", k=3, t=2))
    cands = [
        {**_branch("r.1"), "order": [0, 0]},
        {**_branch("r.2"), "order": [0, 1], "answers": ["Ron Howard"], "done": True},
        {**_branch("r.3"), "order": [0, 2]},
    ]
    state = {"question": QUESTION, "settings": settings, "candidates": cands, "level": 0}
    sends = route_evaluate(state)
    assert all(isinstance(s, Send) and s.node == "score" for s in sends) and len(sends) == 3
    out = select({**state, "scores": {"r.1": 0.2, "r.2": 0.9, "r.3": 0.5}})
    assert out["trace"] == [{"node": "select", "level": 1, "kept": ["r.2", "r.3"]}]
    assert [c["id"] for c in out["finished"]] == ["r.2"] and [c["id"] for c in out["frontier"]] == ["r.3"]
    assert out["finished"][0]["score"] == 0.9


# --------------------------------------------------------------------------- answer
def test_answer_from_a_finished_branch_with_verified_paths():
    llm = text_chat([])
    finished = {**_branch("r.1"), "triples": [DIRECTED], "answers": ["Ron Howard"], "done": True}
    state = {"question": QUESTION, "settings": run_settings(_context()), "finished": [finished], "level": 1}
    out = answer(agent_deps(llm), state)
    assert out["answers"] == ["Ron Howard"] and "errors" not in out
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]
    assert out["evidence"] == ["Splash -> directed_by -> Ron Howard"]
    assert out["trace"][0] == {"node": "answer", "best": "r.1", "how": "finished", "levels": 1, "dropped": []}
    assert not llm.calls  # a finished branch needs no final call


@pytest.mark.parametrize("whole_set", [True, False])
def test_answer_completes_the_set_of_the_best_answers_chain(whole_set):
    # the walk ended on one of Tom Hanks's films; the question asks for all of them
    starred = Triple("Big", "starred_actors", "Tom Hanks")
    finished = {
        **root_branch(["Tom Hanks"]),
        "id": "r.1",
        "triples": [starred],
        "answers": ["Big"],
        "done": True,
    }
    state = {
        "question": "which films did [Tom Hanks] star in",
        "topic_entities": ["Tom Hanks"],
        "settings": run_settings(_context(whole_set=whole_set)),
        "finished": [finished],
        "level": 1,
    }
    out = answer(explore_deps(text_chat([])), state)
    if not whole_set:
        assert out["answers"] == ["Big"] and "whole_set" not in out["trace"][0]
        return
    assert out["answers"][0] == "Big"
    assert sorted(out["answers"]) == ["Big", "Cast Away", "Forrest Gump", "Splash"]
    assert {p.end for p in out["paths"]} == set(out["answers"])
    assert all(verify_path(KG, p) and p.start == "Tom Hanks" for p in out["paths"])
    assert out["trace"][0]["whole_set"]["added"] == 3


def test_answer_spends_one_final_call_when_no_branch_finished():
    llm = text_chat(agent_rules())
    step = {"thought": "I need the director.", "action": "NeighborCheck[Splash, directed_by]"}
    branch = {**_branch("r.1"), "steps": [step], "triples": [DIRECTED]}
    state = {"question": QUESTION, "settings": run_settings(_context()), "frontier": [branch], "level": 10}
    out = answer(agent_deps(llm), state)
    assert out["answers"] == ["Ron Howard"] and llm.calls[FINAL] == 1
    assert out["trace"][0]["how"] == "budget spent: final answer from the best chain"
    assert "Thought 1: I need the director." in llm.prompts[0]


def test_answer_without_an_answer_is_a_no_answer_record():
    llm = text_chat([(FINAL, "")])
    branch = {**_branch("r.1"), "steps": [{"thought": "hmm"}]}
    state = {"question": QUESTION, "settings": run_settings(_context()), "frontier": [branch], "level": 10}
    out = answer(agent_deps(llm), state)
    assert out["answers"] == [] and out["paths"] == []
    assert [(e["node"], e["type"]) for e in out["errors"]] == [("answer", "NoAnswer")]
