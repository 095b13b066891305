"""graph_agent / graph_explore (Graph-CoT, ToT, GoT): control flow with FakeChat, and a real run.

FakeChat answers by prompt content (rules keyed by ``tests.methods.graph_cot.helpers``), so parallel
branches (``Send``) get the same answers whatever order they run in; its ``replies`` replay tool calls
for the tool-calling agent. Text actions need ``tools=False`` (a model without tool calling).
"""

from __future__ import annotations

import itertools
import re
import threading
from typing import ClassVar

import pytest
from langchain_core.messages import AIMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver

from kg_agents.core.records import error_text
from kg_agents.core.registry import create_graph, get_method
from kg_agents.errors import ConfigError, ModelError
from kg_agents.kg import MemoryKG, open_kg
from kg_agents.kg.base import verify_path
from kg_agents.kg.testing import LOOP_TRIPLES
from kg_agents.llm import resolve_chat_model
from kg_agents.methods.graph_cot.graph import (
    create_graph_agent_graph,
    create_graph_explore_graph,
    expected_llm_calls,
)
from kg_agents.methods.graph_cot.interaction.explore import THOUGHT_MAX_TOKENS
from tests.fakes import FakeChat, FakeHops
from tests.kg.hop_by_hop import EngineJoinKG, HopByHopKG
from tests.methods.graph_cot.helpers import (
    END_Q,
    EXTRACT,
    FINAL,
    KG,
    LOOKING,
    MERGE,
    PRUNE_ENT,
    PRUNE_REL,
    SCORE,
    STEP,
    THOUGHT,
    VOTE,
    Q,
    agent_rules,
    explore_rules,
    text_chat,
)
from tests.methods.graph_cot.helpers import trace_of as _trace


def _levels(out):
    """Number of expand records per level (ids like r.1.2 are at level 2)."""
    counts: dict[int, int] = {}
    for t in _trace(out, "expand"):
        lvl = t["id"].count(".")
        counts[lvl] = counts.get(lvl, 0) + 1
    return counts


# --------------------------------------------------------------------------- table 5
def paper_generation_calls(k: int, t: int, depth: int) -> int:
    """Table 5, ToT/GoT agent: k * (t**D - 1) / (t - 1) thought generations (k * D when t = 1)."""
    return k * (t**depth - 1) // (t - 1) if t > 1 else k * depth


def paper_merge_calls(k: int, t: int, depth: int) -> int:
    """Appendix E: GoT merges the candidates of each depth pairwise: floor(n_i / 2) merges for the
    n_i = k * t**(i-1) candidates generated at depth i (the appendix writes floor(k * t**i / 2), its
    index shifted by one from its own ToT count, where depth i expands t**(i-1) states). Merges pair
    siblings, so this equals t**(i-1) * (k // 2) for the even k used here."""
    return sum((k * t ** (i - 1)) // 2 for i in range(1, depth + 1))


@pytest.mark.parametrize(
    "strategy,evaluator,k,t,depth",
    [
        ("tot", "score", 3, 2, 3),
        ("tot", "select", 3, 2, 3),
        ("tot", "select", 2, 1, 4),
        ("tot", "score", 4, 3, 2),
        ("got", "score", 2, 2, 3),
        ("got", "select", 4, 2, 2),
        ("got", "select", 2, 1, 3),
    ],
)
def test_agent_llm_calls_match_table5(strategy, evaluator, k, t, depth):
    llm = text_chat(agent_rules())
    g = create_graph_agent_graph(
        KG, decide="generate", llm=llm, strategy=strategy, evaluator=evaluator, k=k, t=t, depth=depth
    )
    out = g.invoke(Q)
    gen = paper_generation_calls(k, t, depth)
    merges = paper_merge_calls(k, t, depth) if strategy == "got" else 0
    expanded = sum(t**i for i in range(depth))  # states expanded = (t**D - 1)/(t - 1)
    per_group = k + (k // 2 if strategy == "got" else 0)
    evals = expanded if evaluator == "select" else expanded * per_group
    assert llm.calls[STEP] == gen
    assert llm.calls[MERGE] == merges
    assert llm.calls[VOTE if evaluator == "select" else SCORE] == evals
    assert llm.calls[FINAL] == 1  # no chain finished: one final answer from the best chain
    assert out["usage"]["llm_calls"] == gen + merges + evals + 1
    assert expected_llm_calls(strategy, evaluator, k, t, depth)["total"] == out["usage"]["llm_calls"]
    # branch counts: level i expands t**(i-1) states into k candidates each
    assert _levels(out) == {i: k * t ** (i - 1) for i in range(1, depth + 1)}
    assert len(_trace(out, "merge")) == merges
    assert out["answers"] == ["Ron Howard"]
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]


def test_cot_step_budget_ends_with_best_answer():
    llm = text_chat(agent_rules())
    out = create_graph_agent_graph(KG, decide="generate", llm=llm, max_steps=4).invoke(Q)
    assert llm.calls[STEP] == 4 and llm.calls[FINAL] == 1
    assert llm.calls[SCORE] == llm.calls[VOTE] == 0  # CoT: no evaluation
    assert out["usage"]["llm_calls"] == 5 == expected_llm_calls("cot", "score", 1, 1, 1, max_steps=4)["total"]
    assert out["answers"] == ["Ron Howard"] and out["errors"] == []
    assert _trace(out, "answer")[0]["how"].startswith("budget spent")


def test_cot_default_budget_is_ten_steps():
    llm = text_chat(agent_rules())
    out = create_graph_agent_graph(KG, decide="generate", llm=llm).invoke(Q)
    assert llm.calls[STEP] == 10 and out["answers"] == ["Ron Howard"]


def test_finish_stops_the_chain_early():
    counter = itertools.count()

    def step(_):
        return (
            LOOKING if next(counter) == 0 else "Thought: Ron Howard directed it.\nAction: Finish[Ron Howard]"
        )

    llm = text_chat(agent_rules(step=step))
    out = create_graph_agent_graph(KG, decide="generate", llm=llm).invoke(Q)
    assert llm.calls[STEP] == 2 and llm.calls[FINAL] == 0
    assert out["answers"] == ["Ron Howard"]
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]
    assert any(e == "Splash -> directed_by -> Ron Howard" for e in out["evidence"])


def test_malformed_actions_become_observations_and_the_loop_goes_on():
    replies = iter(
        [
            "I am not sure what to do.",
            "Thought: look it up.\nAction 2: Lookup[Splash]",
            "Thought: directors.\nAction 3: NeighborCheck[Splash, directed]",
            # an imagined observation is dropped
            "NeighbourCheck(Splash, directed_by)\nObservation 4: Ron Howard directed it",
            "Thought: done.\nAction 5: Finish[Ron Howard]",
        ]
    )
    prompts: list[str] = []

    def step(prompt):
        prompts.append(prompt)
        return next(replies)

    out = create_graph_agent_graph(KG, decide="generate", llm=text_chat(agent_rules(step=step))).invoke(Q)
    assert out["answers"] == ["Ron Howard"] and out["errors"] == []
    exp = _trace(out, "expand")
    assert [bool(t.get("malformed")) for t in exp] == [True, True, False, False, False]
    assert "Observation 1: No action found." in prompts[1]
    assert "Observation 2: Invalid action 'Action 2: Lookup[Splash]'." in prompts[2]
    assert "Observation 3: Unknown neighbor type 'directed'. The neighbor types of Splash are: " in prompts[3]
    assert "Observation 4: The directed_by neighbors of Splash are ['Ron Howard']." in prompts[4]
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]


def test_unknown_node_observation_names_close_matches():
    replies = iter(["Action: NeighborCheck[Splsh, directed_by]", "Action: Finish[Ron Howard]"])
    prompts: list[str] = []
    llm = text_chat(agent_rules(step=lambda p: (prompts.append(p), next(replies))[1]))
    out = create_graph_agent_graph(KG, decide="generate", llm=llm).invoke({"question": "who directed Splash"})
    assert "There is no node 'Splsh' in the graph. Closest nodes: 'Splash'" in prompts[1]
    # the chain never reached Ron Howard: its Finish answer is dropped, and said so
    assert out["answers"] == [] and out["paths"] == []
    assert _trace(out, "answer")[0]["dropped"] == ["Ron Howard"]


# --------------------------------------------------------------------------- selection and merge
def _distinct_finishers(n_answers=3):
    lock, counter = threading.Lock(), itertools.count(1)

    def step(_):
        with lock:
            i = next(counter)
        return f"Thought: candidate {i}.\nAction: Finish[Answer{i}]"

    return step


def test_selection_vote_keeps_the_chosen_choice():
    seen: list[str] = []

    def vote(prompt):
        seen.append(prompt)
        return "Choice 1 is weak. The best choice is 2"

    llm = text_chat(agent_rules(step=_distinct_finishers(), vote=vote))
    out = create_graph_agent_graph(
        KG, decide="generate", llm=llm, strategy="tot", evaluator="select", k=3, t=1, depth=3
    ).invoke(Q)
    assert llm.calls[VOTE] == 1 and llm.calls[STEP] == 3  # all finished at depth 1: nothing expanded further
    chosen = re.search(r"Choice 2:\n.*?Finish\[(Answer\d)\]", seen[0], re.S).group(1)
    # the chosen chain's answer names no node it reached: it is dropped, and said so
    assert out["answers"] == [] and _trace(out, "answer")[0]["dropped"] == [chosen]
    assert _trace(out, "select")[0]["kept"] == ["r.2"]
    assert _trace(out, "vote")[0]["ranking"][:2] == ["r.2", "r.1"]


def test_score_vote_keeps_the_highest_scores():
    def score(prompt):
        return "0.9" if "Finish[Answer2]" in prompt else ("0.6" if "Finish[Answer3]" in prompt else "0.1")

    llm = text_chat(agent_rules(step=_distinct_finishers(), score=score))
    out = create_graph_agent_graph(
        KG, decide="generate", llm=llm, strategy="tot", evaluator="score", k=3, t=2, depth=2
    ).invoke(Q)
    assert llm.calls[SCORE] == 3
    assert out["answers"] == [] and _trace(out, "answer")[0]["dropped"] == ["Answer2"]
    scores = {t["id"]: t["score"] for t in _trace(out, "score")}
    assert sorted(scores.values()) == [0.1, 0.6, 0.9]
    kept = _trace(out, "select")[0]["kept"]
    assert [scores[c] for c in kept] == [0.9, 0.6]


def test_got_merge_has_both_parents_and_can_win():
    def score(prompt):
        return "0.95" if "merging both" in prompt else "0.2"

    llm = text_chat(
        agent_rules(score=score, merge="Thought: merging both.\nAction: Finish[Ron Howard]"),
    )
    out = create_graph_agent_graph(
        KG, decide="generate", llm=llm, strategy="got", evaluator="score", k=2, t=1, depth=2
    ).invoke(Q)
    merges = _trace(out, "merge")
    assert [m["parents"] for m in merges] == [["r.1", "r.2"]]
    assert merges[0]["id"] == "r.1+r.2" and merges[0]["done"] is True
    assert _trace(out, "select")[0]["kept"] == ["r.1+r.2"]
    assert llm.calls[SCORE] == 3 and llm.calls[STEP] == 2 and llm.calls[FINAL] == 0
    assert out["answers"] == ["Ron Howard"]
    # the merged state inherits both chains' triples: the path is found through them
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]


def test_depth_limit_for_tot():
    llm = text_chat(agent_rules())
    out = create_graph_agent_graph(
        KG, decide="generate", llm=llm, strategy="tot", k=2, t=1, depth=2, max_steps=10
    ).invoke(Q)
    assert _levels(out) == {1: 2, 2: 2}
    assert _trace(out, "answer")[0]["levels"] == 2


# --------------------------------------------------------------------------- tool calling
def _call(name, args, cid):
    return {"name": name, "args": args, "id": cid, "type": "tool_call"}


def test_agent_with_bound_tools():
    model = FakeChat(
        cycle=False,
        replies=[
            AIMessage(
                content="I need the director.",
                tool_calls=[_call("NeighborCheck", {"node": "Splash", "neighbor_type": "directed_by"}, "c1")],
            ),
            AIMessage(
                content="",
                tool_calls=[_call("NodeDegree", {"node": "Splash"}, "c2"), _call("Search", {"q": "x"}, "c3")],
            ),
            AIMessage(content="Found it.", tool_calls=[_call("Finish", {"answers": ["Ron Howard"]}, "c4")]),
        ],
    )
    out = create_graph_agent_graph(KG, decide="generate", llm=model, action_mode="tools").invoke(Q)
    assert _trace(out, "prepare")[0]["mode"] == "tools"
    assert out["answers"] == ["Ron Howard"]
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]
    # usage comes from the model's usage metadata (FakeChat: the words of each call's last message)
    assert out["usage"]["llm_calls"] == 3
    assert out["usage"]["input_tokens"] == sum(len(p.split()) for p in model.prompts) > 0
    tool_msgs = [m for m in model.messages[2] if isinstance(m, ToolMessage)]
    assert [m.content for m in tool_msgs] == [
        "The directed_by neighbors of Splash are ['Ron Howard'].",
        "NodeDegree needs the arguments ['node', 'neighbor_type']; missing ['neighbor_type'].",
        "Unknown tool 'Search'. Valid tools: RetrieveNode, NodeFeature, NeighborCheck, NodeDegree, Finish.",
    ]


def test_tool_model_answering_in_text_finishes():
    model = FakeChat(replies=[AIMessage(content="Answer: Ron Howard")])
    out = create_graph_agent_graph(KG, decide="generate", llm=model).invoke(Q)
    # it finished at once, before reaching any node: nothing grounded, one call
    assert out["usage"]["llm_calls"] == 1 and _trace(out, "answer")[0]["how"] == "finished"
    assert out["answers"] == [] and _trace(out, "answer")[0]["dropped"] == ["Ron Howard"]


def test_tools_mode_needs_a_tool_calling_model():
    with pytest.raises(ConfigError, match="does not support tool calling"):
        create_graph_agent_graph(KG, decide="generate", llm=FakeChat(tools=False), action_mode="tools")


def test_auto_mode_keeps_text_actions_for_constrained_tool_calling():
    """A model whose tool calls are grammar-constrained (``native_tool_calling = False``, like the embedded
    model) writes text actions under ``action_mode="auto"``; ``"tools"`` still binds its tools."""

    class ConstrainedFake(FakeChat):
        native_tool_calling: ClassVar[bool] = False

    text = ConstrainedFake(
        replies=["Action: NeighborCheck[Splash, directed_by]", "Thought: known.\nAction: Finish[Ron Howard]"]
    )
    out = create_graph_agent_graph(KG, llm=text, decide="generate").invoke(Q)
    assert _trace(out, "prepare")[0]["mode"] == "text" and out["answers"] == ["Ron Howard"]
    check = AIMessage(
        content="",
        tool_calls=[_call("NeighborCheck", {"node": "Splash", "neighbor_type": "directed_by"}, "c0")],
    )
    finish = AIMessage(content="", tool_calls=[_call("Finish", {"answers": ["Ron Howard"]}, "c1")])
    tools = ConstrainedFake(replies=[check, finish])
    out = create_graph_agent_graph(KG, llm=tools, action_mode="tools", decide="generate").invoke(Q)
    assert _trace(out, "prepare")[0]["mode"] == "tools" and out["answers"] == ["Ron Howard"]
    from kg_agents.llm import LocalChatModel

    assert LocalChatModel.native_tool_calling is False


# --------------------------------------------------------------------------- graph_explore
def _thought(prompt):
    if "Splash -> directed_by -> Ron Howard" in prompt:
        return "Splash was directed by Ron Howard. Finish[Ron Howard]"
    return "I need the director of Splash."


def test_explore_cot_one_hop():
    llm = text_chat(explore_rules(_thought))
    out = create_graph_explore_graph(KG, decide="generate", llm=llm).invoke(
        {"question": "who directed [Splash]"}
    )
    assert out["answers"] == ["Ron Howard"]
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]
    # thought, extract, prune relations, End? (one tail: no entity pruning), then the finishing thought
    assert dict(llm.calls) == {THOUGHT: 2, EXTRACT: 1, PRUNE_REL: 1, END_Q: 1}
    assert out["usage"]["llm_calls"] == 5
    exp = _trace(out, "expand")[0]
    assert exp["extracted"] == ["Splash"] and exp["search"][0]["relations"] == {"Splash": ["directed_by"]}


def test_explore_search_depth_visited_set_and_fanout():
    def prune_rel(prompt):
        return "[~starred_actors]" if "Head Entity: Tom Hanks" in prompt else "[directed_by]"

    ends = iter(["[No]", "[Yes]"])
    llm = text_chat(
        explore_rules(
            lambda p: (
                ("Big -> directed_by -> Penny Marshall" in p and "Finish[Penny Marshall]")
                or "Find Tom Hanks films."
            ),
            extract="[Tom Hanks]",
            prune_rel=prune_rel,
            prune_ent="[Big, Splash, Tom Hanks]",
            end=lambda _: next(ends),
        ),
    )
    g = create_graph_explore_graph(
        KG, decide="generate", llm=llm, search_depth=3, fanout_limit=3, keep_entities=2
    )
    out = g.invoke({"question": "who directed the [Tom Hanks] film Big"})
    search = _trace(out, "expand")[0]["search"]
    assert [s["entities"] for s in search] == [["Tom Hanks"], ["Splash", "Big"]]  # Tom Hanks not revisited
    assert search[0]["truncated"] == ["Tom Hanks ~starred_actors"]  # 4 films, fan-out limit 3
    assert search[-1]["end"] is True and len(search) == 2  # End? said yes after level 2 of 3
    assert llm.calls[PRUNE_REL] == 3 and llm.calls[PRUNE_ENT] == 1 and llm.calls[END_Q] == 2
    assert out["answers"] == ["Penny Marshall"]
    # the whole set of the chain (every director of a Tom Hanks film), narrowed to Big's by the
    # constraint step, which adds its path to the value the question names
    assert _trace(out, "answer")[0]["whole_set"]["added"] == 2
    assert [p.to_text() for p in out["paths"]] == [
        "Tom Hanks -> ~starred_actors -> Big -> directed_by -> Penny Marshall",
        "Penny Marshall -> ~directed_by -> Big",
    ]


def test_explore_tot_and_got_counts():
    # Every step: thought, extract, prune relations, End? = 4 calls; ToT k=2 t=1 D=2: 4 states expanded.
    llm = text_chat(explore_rules(lambda p: "I need the director of Splash."))
    out = create_graph_explore_graph(
        KG, decide="generate", llm=llm, strategy="tot", evaluator="select", k=2, t=1, depth=2
    ).invoke(Q)
    assert llm.calls[THOUGHT] == 4 == paper_generation_calls(2, 1, 2)
    assert llm.calls[VOTE] == 2 and llm.calls[FINAL] == 1
    # level 1 explores Splash (one tail: no entity pruning); level 2 goes on from the newly seen Ron Howard
    # (Splash is visited), whose ~directed_by has two tails, one of them Splash, which the walk came
    # from: that one is left out (no step forward), so one tail is left and no entity is pruned
    assert dict(llm.calls) == {
        THOUGHT: 4,
        EXTRACT: 4,
        PRUNE_REL: 4,
        END_Q: 4,
        VOTE: 2,
        FINAL: 1,
    }
    assert out["usage"]["llm_calls"] == 19
    searches = [t["search"][0] for t in _trace(out, "expand")]
    assert [s["entities"] for s in searches] == [["Splash"]] * 2 + [["Ron Howard"]] * 2
    assert [s.get("turned_back") for s in searches[2:]] == [{"Ron Howard ~directed_by": 1}] * 2
    assert out["answers"] == ["Ron Howard"]

    llm = text_chat(explore_rules(lambda p: "I need the director of Splash."))
    out = create_graph_explore_graph(
        KG, decide="generate", llm=llm, strategy="got", evaluator="score", k=2, t=1, depth=1
    ).invoke(Q)
    assert llm.calls[MERGE] == 1 and llm.calls[SCORE] == 3
    assert out["answers"] == ["Ron Howard"] and _trace(out, "select")[0]["kept"] == ["r.1"]


# --------------------------------------------------------------------------- contract
def test_bad_options_and_bad_input():
    with pytest.raises(ConfigError, match="strategy must be one of"):
        create_graph_agent_graph(KG, decide="generate", llm=FakeChat(tools=False), strategy="bfs")
    with pytest.raises(ConfigError, match="k must be a positive integer"):
        create_graph_explore_graph(KG, decide="generate", llm=FakeChat(tools=False), k=0)
    for bad in (0, -1, 2.5, True, "32"):
        with pytest.raises(ConfigError, match="thought_max_tokens must be a positive integer or None"):
            create_graph_explore_graph(KG, llm=FakeChat(tools=False), thought_max_tokens=bad)
    llm = text_chat(agent_rules())
    g = create_graph_agent_graph(KG, decide="generate", llm=llm)
    out = g.invoke({"question": "  "})
    assert out["answers"] == [] and list(map(error_text, out["errors"])) == [
        "prepare: EmptyQuestion: empty question"
    ]
    out = g.invoke(Q, context={"evaluator": "vote"})
    assert out["answers"] == [] and "evaluator must be one of" in out["errors"][0]["message"]
    assert sum(llm.calls.values()) == 0


def test_context_overrides_and_registry():
    llm = text_chat(agent_rules())
    g = create_graph("graph_agent", KG, decide="generate", llm=llm, strategy="cot")
    out = g.invoke(Q, context={"strategy": "tot", "evaluator": "select", "k": 2, "t": 1, "depth": 2})
    assert llm.calls[STEP] == 4 and llm.calls[VOTE] == 2
    assert _trace(out, "prepare")[0]["strategy"] == "tot"
    assert {"strategy", "evaluator", "k", "t", "depth"} <= set(get_method("graph_explore").options())


def test_run_context_setting_one_field_keeps_the_factory_options():
    llm = text_chat(agent_rules())
    g = create_graph_agent_graph(
        KG, decide="generate", llm=llm, strategy="tot", evaluator="select", k=3, t=1, depth=2
    )
    out = g.invoke(Q, context={"k": 2})
    prep = _trace(out, "prepare")[0]
    assert (prep["strategy"], prep["evaluator"]) == ("tot", "select")  # not reset to the defaults
    assert _levels(out) == {1: 2, 2: 2}  # k = 2 from the run, t = 1 and depth = 2 from the factory
    assert llm.calls[STEP] == 4 and llm.calls[VOTE] == 2 and llm.calls[SCORE] == 0
    out = g.invoke(Q)  # the next run without a context has the factory's k again
    assert _levels(out) == {1: 3, 2: 3}


def test_prompt_overrides_by_name(tmp_path):
    final = tmp_path / "final.txt"
    final.write_text("### human\nOut of steps. {question}\n{chain}\nANSWER NOW", encoding="utf-8")
    llm = text_chat([("ANSWER NOW", "Answer: Ron Howard"), *agent_rules()])
    g = create_graph_agent_graph(KG, decide="generate", llm=llm, max_steps=1, prompts={"final_answer": final})
    out = g.invoke(Q)
    assert out["answers"] == ["Ron Howard"] and llm.calls["ANSWER NOW"] == 1 and llm.calls[FINAL] == 0
    llm = text_chat([("MY STEP", LOOKING), *agent_rules()])
    g = create_graph_agent_graph(
        KG,
        decide="generate",
        llm=llm,
        max_steps=1,
        prompts={"agent_step": "MY STEP {question} {scratchpad}{step}"},
    )
    g.invoke(Q)
    assert llm.calls["MY STEP"] == 1 and llm.calls[STEP] == 0
    with pytest.raises(ConfigError, match=r"unknown prompt name\(s\) \['nope'\]; valid: explore_thought"):
        create_graph_explore_graph(KG, decide="generate", llm=llm, prompts={"nope": "x"})


def test_llm_none_is_the_embedded_local_model(monkeypatch):
    asked: list[str] = []
    local = text_chat(agent_rules())

    def resolve(spec, **kwargs):
        asked.append(spec)
        return local

    monkeypatch.setattr("kg_agents.core.models.resolve_chat_model", resolve)
    out = create_graph_agent_graph(KG, decide="generate", max_steps=1).invoke(Q)
    assert asked == ["local"] and out["answers"] == ["Ron Howard"] and local.calls[STEP] == 1
    create_graph_explore_graph(KG, decide="generate", llm="local")
    assert asked == ["local", "local"]


def test_unknown_topic_entity_is_recorded():
    out = create_graph_agent_graph(KG, decide="generate", llm=text_chat(agent_rules())).invoke(
        {"question": "who directed it", "topic_entities": ["Nope Movie"]}
    )
    first, *rest = out["errors"]
    assert error_text(first) == "prepare: NoEntity: unknown topic entities ['Nope Movie']"
    # with no topic entity no path starts anywhere: the final answer cannot be grounded
    assert [e["type"] for e in rest] == ["UngroundedAnswer"] and out["answers"] == []


def test_stream_batch_checkpointer():
    llm = text_chat(agent_rules())
    g = create_graph_agent_graph(
        KG,
        decide="generate",
        llm=llm,
        strategy="got",
        evaluator="select",
        k=2,
        t=1,
        depth=1,
        checkpointer=InMemorySaver(),
    )
    events = list(g.stream(Q, {"configurable": {"thread_id": "1"}}))
    names = [next(iter(e)) for e in events]
    assert names[0] == "prepare" and names.count("expand") == 2 and "merge" in names and "vote" in names
    assert names[-2:] == ["answer", "constrain"]
    outs = create_graph_agent_graph(KG, decide="generate", llm=llm, max_steps=2).batch(
        [Q, {"question": "who directed [Big]"}]
    )
    assert [o["usage"]["llm_calls"] for o in outs] == [3, 3]


async def test_ainvoke():
    out = await create_graph_agent_graph(
        KG, decide="generate", llm=text_chat(agent_rules()), max_steps=2
    ).ainvoke(Q)
    assert out["answers"] == ["Ron Howard"]


def test_model_errors_are_recorded_not_raised():
    down = ModelError("the model server is down")
    llm = text_chat([(SCORE, down), (FINAL, down), (STEP, LOOKING)])
    out = create_graph_agent_graph(KG, decide="generate", llm=llm, strategy="tot", k=2, t=1, depth=1).invoke(
        Q
    )
    assert out["answers"] == []
    assert list(map(error_text, out["errors"])) == ["score: ModelError: the model server is down"] * 2 + [
        "answer: ModelError: the model server is down"
    ]


# --------------------------------------------------------------------------- real model
@pytest.fixture(scope="module")
def metaqa():
    return open_kg("metaqa")


@pytest.fixture(scope="module")
def local_llm():
    return resolve_chat_model("local", max_tokens=32)


@pytest.mark.integration
@pytest.mark.parametrize(
    "factory,strategy",
    [
        (create_graph_agent_graph, "cot"),
        (create_graph_explore_graph, "tot"),
        (create_graph_agent_graph, "got"),
    ],
)
def test_real_local_model_on_metaqa(metaqa, local_llm, factory, strategy):
    g = factory(metaqa, llm=local_llm, strategy=strategy, evaluator="score", k=2, t=1, depth=2, max_steps=2)
    out = g.invoke(
        {"question": "what movies did [Babaloo Mandel] write", "topic_entities": ["Babaloo Mandel"]}
    )
    assert out["errors"] == []
    # ranked decisions read tokens and write none (the explorer's thoughts are still written)
    assert out["usage"]["llm_calls"] >= 1 and out["usage"]["input_tokens"] > 0
    # every answer is a node the chain reached, at the end of a verified path
    assert set(out["answers"]) <= {metaqa.label(p.end) for p in out["paths"]}
    assert isinstance(out["answers"], list)
    # whatever the small model says, every returned path is a chain of real KG triples
    for p in out["paths"]:
        assert all(metaqa.has_triple(t.head, t.relation, t.tail) for t in p.triples)
    # the answer's verified paths, and one walk for each answer the whole set added
    added = _trace(out, "answer")[0].get("whole_set", {}).get("added", 0)
    assert _trace(out, "verify_paths")[0]["paths_kept"] + added == len(out["paths"])


@pytest.mark.integration
def test_real_local_model_walks_a_ranked_relation_chain(metaqa, local_llm):
    # the zero-shot model (on MetaQA the default is the specialist, which ranks relations per level)
    g = create_graph_explore_graph(metaqa, llm=local_llm, adapter="none", max_steps=3, hops=2)
    question = "who directed the movies written by [Babaloo Mandel]"
    out = g.invoke({"question": question, "topic_entities": ["Babaloo Mandel"]})
    assert out["errors"] == []
    steps = _trace(out, "expand")
    plan = steps[0]["plan"]
    # the chain ranked first is one of the graph's 2-hop chains from the topic entity, and each level
    # followed its relation
    assert len(plan["chosen"]) == 2 and plan["ranking"]["route"] == "logprobs" and plan["chains"] > 1
    assert plan["example"] is False  # a 2-hop chain is ranked without the 2-hop worked example
    # in memory the chain is followed hop by hop, each level by its relation
    assert [s["search"][0]["relations"].get(e) for s in steps for e in s["search"][0]["entities"]][:1] == [
        [plan["chosen"][0]]
    ]
    assert all(s["search"][0]["by"] == "chain" for s in steps)
    assert set(out["answers"]) <= {metaqa.label(p.end) for p in out["paths"]}
    for p in out["paths"]:
        assert all(metaqa.has_triple(t.head, t.relation, t.tail) for t in p.triples)


@pytest.mark.integration
def test_real_local_model_walks_a_chain_whole_with_revisit(local_llm):
    """``revisit`` on PathQuestion's PQL-3H graph (self-loops where a release track and its recording
    share a name), the zero-shot model: the chain ranked first is walked whole, and every answer ends one
    of its walks, verified."""
    kg = open_kg("pql-3h")
    g = create_graph_explore_graph(kg, llm=local_llm, pack="none", max_steps=3, hops=3, revisit=True)
    question = "what is the releases of recording of [Robin_Hood] 's recording ?"
    out = g.invoke({"question": question, "topic_entities": ["Robin_Hood"]})
    assert out["errors"] == []
    step = _trace(out, "expand")[0]
    assert len(step["plan"]["chosen"]) == 3 and step["search"][0]["by"] == "whole chain"
    assert out["answers"] and {kg.label(p.end) for p in out["paths"]} == set(out["answers"])
    for p in out["paths"]:
        assert verify_path(kg, p) and p.start == "Robin_Hood" and len(p.hops) == 3


@pytest.mark.integration
def test_real_local_model_agent_follows_a_ranked_relation_chain(metaqa, local_llm):
    g = create_graph_agent_graph(metaqa, llm=local_llm, max_steps=4, hops=2, relation_chain=True)
    question = "who directed the movies written by [Babaloo Mandel]"
    out = g.invoke({"question": question, "topic_entities": ["Babaloo Mandel"]})
    assert out["errors"] == []
    steps = _trace(out, "expand")
    plan = steps[1]["plan"]  # ranked once the start is retrieved
    assert len(plan["chosen"]) == 2 and plan["ranking"]["route"] == "logprobs" and plan["chains"] > 1
    # each hop's NeighborCheck took the chain's relation, and Finish came after the second
    hops = [s["action"] for s in steps if s["action"].startswith("NeighborCheck")]
    assert [h.split(", ")[-1].rstrip("]") for h in hops] == plan["chosen"]
    assert steps[-1]["action"].startswith("Finish[")
    assert out["answers"] and set(out["answers"]) <= {metaqa.label(p.end) for p in out["paths"]}
    for p in out["paths"]:
        assert all(metaqa.has_triple(t.head, t.relation, t.tail) for t in p.triples)


# --------------------------------------------------------------------------- ranked decisions
#: the agent's steps when it checks Splash's director and finishes
DIRECTOR_CHAIN = ["RetrieveNode[Splash]", "NeighborCheck[Splash, directed_by]", "Finish[Ron Howard]"]


def _agent_scores(text: str, options: list[str]) -> list[float]:
    """A scripted scorer: checking the director, then finishing, is the likeliest."""
    return [5.0 if "directed by of" in o else (4.0 if "Finish[" in o else 0.0) for o in options]


def test_ranked_agent_takes_only_actions_that_exist():
    llm = FakeChat(logprobs=_agent_scores, tools=False)  # no text replies: any generation would raise
    out = create_graph_agent_graph(KG, llm=llm, calibrate=False).invoke(Q)
    steps = _trace(out, "expand")
    assert [s["action"] for s in steps] == DIRECTOR_CHAIN
    assert out["answers"] == ["Ron Howard"]
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]
    # RetrieveNode of the one topic entity needs no call; two rankings in all
    assert llm.calls["logprobs"] == 2 and out["usage"]["llm_calls"] == 2
    assert steps[0]["ranking"]["route"] == "only" and steps[1]["ranking"]["route"] == "logprobs"


def _biased_scores(text: str, options: list[str]) -> list[float]:
    """A scorer that likes the starred actors whatever the question (more so without it), and the
    director only when the question asks for him."""
    asked = "who directed" in text
    out = []
    for o in options:
        if "starred actors of" in o:
            out.append(6.0 if asked else 8.0)
        elif "directed by of" in o:
            out.append(5.0 if asked else 1.0)
        elif "Finish[" in o:
            out.append(4.0 if asked else 3.8)
        else:
            out.append(0.0)
    return out


def test_a_calibrated_agent_follows_the_relation_the_question_raises():
    llm = FakeChat(logprobs=_biased_scores, tools=False)
    plain = create_graph_agent_graph(KG, llm=llm, calibrate=False, max_steps=3).invoke(Q)
    assert _trace(plain, "expand")[1]["action"] == "NeighborCheck[Splash, starred_actors]"
    out = create_graph_agent_graph(KG, llm=llm, calibrate=True).invoke(Q)
    steps = _trace(out, "expand")
    # the step prompt with the question taken out ("[Splash]") still favours the starred actors: the
    # question raises the director most; Finish then wins on its own score (4.0 over 0.0)
    assert [s["action"] for s in steps] == DIRECTOR_CHAIN
    assert out["answers"] == ["Ron Howard"]
    assert steps[1]["ranking"]["calibrated"] is True and out["usage"]["llm_calls"] == 4
    with pytest.raises(ConfigError, match="calibrate"):
        create_graph_agent_graph(KG, llm=llm, calibrate="yes")


@pytest.mark.parametrize("seed", range(5))
def test_garbage_scores_still_give_only_valid_actions_and_grounded_answers(seed):
    import random

    rng = random.Random(seed)
    llm = FakeChat(logprobs=lambda text, options: [rng.uniform(-50, 0) for _ in options], tools=False)
    out = create_graph_agent_graph(KG, llm=llm, max_steps=6).invoke(Q)
    steps = _trace(out, "expand")
    assert steps and not any(s.get("malformed") for s in steps)
    for s in steps:  # each action names a node and a relation the KG has
        for _name, node, rel in re.findall(r"(NeighborCheck)\[(.+?), (~?\w+)\]", s["action"] or ""):
            base = rel.lstrip("~")
            assert base in KG.relations(node, "in" if rel.startswith("~") else "out")
    ends = {p.end for p in out["paths"]}
    assert set(out["answers"]) <= {KG.label(e) for e in ends}


def director_scores(end: bool):
    """Scripted option scores: End? answers ``[Yes]`` when ``end``, else ``[No]``; every other ranking
    prefers ``directed_by`` and Ron Howard."""

    def scores(text: str, options: list[str]) -> list[float]:
        if options == ["[Yes]", "[No]"]:
            return [0.0, -1.0] if end else [-1.0, 0.0]
        return [0.0 if ("directed_by" in o or "Ron Howard" in o) else -9.0 for o in options]

    return scores


def test_ranked_explorer_prunes_and_ends_by_ranking():
    scores = director_scores(end=True)
    llm = FakeChat(
        rules=explore_rules(lambda p: "I need the director of Splash."), logprobs=scores, tools=False
    )
    out = create_graph_explore_graph(KG, llm=llm, max_steps=1).invoke(Q)
    assert llm.calls[PRUNE_REL] == llm.calls[END_Q] == 0 and llm.calls["logprobs"] >= 2  # ranked
    search = _trace(out, "expand")[0]["search"][0]
    assert search["relations"]["Splash"] == ["directed_by"] and search["end"] is True
    # the step budget is spent: the final answer is ranked among what the chain reached
    assert out["answers"] == ["Ron Howard"] and llm.calls[FINAL] == 0
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]


def test_ranked_explorer_drops_a_written_finish_that_names_nothing_reached():
    # the small model's thought answers before any exploration: on the ranked route End? decides when to
    # stop, so the written Finish (a node no triple reached) is dropped, traced, and the step explores
    scores = director_scores(end=True)
    llm = FakeChat(
        rules=explore_rules(lambda p: "Splash was directed by Steven Spielberg. Finish[Steven Spielberg]"),
        logprobs=scores,
        tools=False,
    )
    out = create_graph_explore_graph(KG, llm=llm, max_steps=1).invoke(Q)
    step = _trace(out, "expand")[0]
    assert step["thought_finish_dropped"] == ["Steven Spielberg"]
    assert step["search"][0]["relations"]["Splash"] == ["directed_by"]
    assert out["answers"] == ["Ron Howard"] and not out.get("errors")
    # the papers' route keeps the written Finish as it is (and grounding then drops its answer)
    gen = FakeChat(rules=explore_rules(lambda p: "Finish[Steven Spielberg]"), tools=False)
    out = create_graph_explore_graph(KG, llm=gen, max_steps=1, decide="generate").invoke(Q)
    assert out["answers"] == [] and gen.calls[PRUNE_REL] == 0


def test_ranked_explorer_caps_its_thoughts_and_the_papers_route_does_not():
    # on the ranked route the thought only narrates the chain: it is cut at THOUGHT_MAX_TOKENS new tokens
    scores = director_scores(end=True)
    llm = FakeChat(rules=explore_rules(lambda p: "I need the director."), logprobs=scores, tools=False)
    out = create_graph_explore_graph(KG, llm=llm, max_steps=1).invoke(Q)
    thoughts = [o for p, o in zip(llm.prompts, llm.options, strict=True) if "Next Thought:" in p]
    assert thoughts and all(o.get("max_tokens") == THOUGHT_MAX_TOKENS for o in thoughts)
    assert out["answers"] == ["Ron Howard"]
    gen = FakeChat(rules=explore_rules(lambda p: "Finish[Ron Howard]"), tools=False)
    create_graph_explore_graph(KG, llm=gen, max_steps=1, decide="generate").invoke(Q)
    thoughts = [o for p, o in zip(gen.prompts, gen.options, strict=True) if "Next Thought:" in p]
    assert thoughts and all("max_tokens" not in o for o in thoughts)
    # the factory sets the cap; None leaves the model's own limit
    for cap in (8, None):
        llm = FakeChat(rules=explore_rules(lambda p: "I need the director."), logprobs=scores, tools=False)
        create_graph_explore_graph(KG, llm=llm, max_steps=1, thought_max_tokens=cap).invoke(Q)
        thoughts = [o for p, o in zip(llm.prompts, llm.options, strict=True) if "Next Thought:" in p]
        assert thoughts and all(o.get("max_tokens") == cap for o in thoughts)


def test_ranked_explorer_keeps_a_written_finish_on_a_reached_node():
    scores = director_scores(end=False)  # End? says No: only the written Finish can end the chain
    thoughts = iter(["I need the director of Splash.", "Ron Howard directed it. Finish[Ron Howard]"])
    llm = FakeChat(rules=explore_rules(lambda p: next(thoughts)), logprobs=scores, tools=False)
    out = create_graph_explore_graph(KG, llm=llm, max_steps=2).invoke(Q)
    steps = _trace(out, "expand")
    assert len(steps) == 2 and "thought_finish_dropped" not in steps[1]
    assert out["answers"] == ["Ron Howard"]


def test_ranked_explorer_goes_on_from_the_nodes_it_reached_without_extraction():
    # End? says No: the second step explores from Ron Howard, whom the first reached, and the model is
    # never asked to extract entity names from its thought (the papers' route still does)
    scores = director_scores(end=False)
    llm = FakeChat(rules=explore_rules(lambda p: "I need the director."), logprobs=scores, tools=False)
    out = create_graph_explore_graph(KG, llm=llm, max_steps=2).invoke(Q)
    steps = _trace(out, "expand")
    assert [s["extracted"] for s in steps] == ["topic entities", "reached entities"]
    assert steps[1]["search"][0]["entities"] == ["Ron Howard"] and llm.calls[EXTRACT] == 0
    gen = FakeChat(rules=explore_rules(lambda p: "I need the director.", end="[No]"), tools=False)
    create_graph_explore_graph(KG, llm=gen, max_steps=2, decide="generate").invoke(Q)
    assert gen.calls[EXTRACT] == 2


# --------------------------------------------------------------------------- the walk's length (hops)
def _end_asked(scores):
    """``scores`` that count the End? rankings they are asked for."""
    asked = []

    def wrapped(text: str, options: list[str]) -> list[float]:
        if options == ["[Yes]", "[No]"]:
            asked.append(text)
        return scores(text, options)

    return wrapped, asked


def test_ranked_explorer_walks_the_predicted_hops_without_asking_end():
    # End? would say Yes after the first hop; with a 2-hop walk it is never asked: the chain goes on
    # from Ron Howard and answers among what the second hop reached (Splash, seen before, excluded)
    scores, asked = _end_asked(director_scores(end=True))
    llm = FakeChat(rules=explore_rules(lambda p: "I need the director."), logprobs=scores, tools=False)
    hops = FakeHops(2)
    graph = create_graph_explore_graph(
        HopByHopKG(KG), llm=llm, max_steps=3, hops="predict", hop_classifier=hops
    )
    out = graph.invoke(Q)
    steps = _trace(out, "expand")
    assert _trace(out, "prepare")[0]["hops"] == 2 and hops.seen == [(Q["question"], ["Splash"])]
    assert [(s["search"][0]["end"], s["search"][0]["end_by"]) for s in steps] == [
        (False, "hops"),
        (True, "hops"),
    ]
    assert asked == [] and llm.calls[END_Q] == 0
    assert out["answers"] == ["Parenthood"]
    assert [p.to_text() for p in out["paths"]] == [
        "Splash -> directed_by -> Ron Howard -> ~directed_by -> Parenthood"
    ]
    # the same question with End? asked (no walk length) stops after the first hop
    scores, asked = _end_asked(director_scores(end=True))
    llm = FakeChat(rules=explore_rules(lambda p: "I need the director."), logprobs=scores, tools=False)
    out = create_graph_explore_graph(KG, llm=llm, max_steps=3, hops="none").invoke(Q)
    assert out["answers"] == ["Ron Howard"] and len(asked) == 1


def test_a_given_walk_length_ends_the_explorer_after_one_hop_and_a_written_finish_is_dropped():
    scores, asked = _end_asked(director_scores(end=False))  # End? would never end the chain
    thoughts = iter(["Finish[Ron Howard]", "Finish[Ron Howard]"])
    llm = FakeChat(rules=explore_rules(lambda p: next(thoughts)), logprobs=scores, tools=False)
    out = create_graph_explore_graph(KG, llm=llm, max_steps=2, hops=1).invoke(Q)
    steps = _trace(out, "expand")
    assert len(steps) == 1 and steps[0]["thought_finish_dropped"] == ["Ron Howard"]
    assert out["answers"] == ["Ron Howard"] and asked == []
    # a run's context sets the walk length too
    thoughts = iter(["I need the director."] * 3)
    out = create_graph_explore_graph(HopByHopKG(KG), llm=llm, max_steps=3, hops="none").invoke(
        Q, context={"hops": 2}
    )
    assert _trace(out, "prepare")[0]["hops"] == 2 and out["answers"] == ["Parenthood"]


def test_ranked_agent_finishes_only_at_the_walk_length():
    hops = FakeHops(2)
    llm = FakeChat(logprobs=_agent_scores, tools=False)
    out = create_graph_agent_graph(KG, llm=llm, calibrate=False, hops="predict", hop_classifier=hops).invoke(
        Q
    )
    actions = [s["action"] for s in _trace(out, "expand")]
    # Finish is not offered after one hop; after two it is the only option (no call)
    assert actions == [
        "RetrieveNode[Splash]",
        "NeighborCheck[Splash, directed_by]",
        "NeighborCheck[Ron Howard, ~directed_by]",
        "Finish[Splash | Parenthood]",
    ]
    assert out["answers"][0] == "Parenthood"
    assert _trace(out, "expand")[3]["ranking"]["route"] == "only"
    # with no walk length the agent finishes after the first hop, as it ranks best
    out = create_graph_agent_graph(KG, llm=llm, calibrate=False, hops="none").invoke(Q)
    assert [s["action"] for s in _trace(out, "expand")] == DIRECTOR_CHAIN


def test_hops_auto_walks_only_on_metaqa_and_the_papers_route_ignores_it(metaqa):
    scores = director_scores(end=True)
    llm = FakeChat(rules=explore_rules(lambda p: "I need the director."), logprobs=scores, tools=False)
    out = create_graph_explore_graph(KG, llm=llm, max_steps=1).invoke(Q)  # hops="auto", not MetaQA
    assert _trace(out, "prepare")[0]["hops"] is None
    # on MetaQA the bundled hop classifier predicts the walk length from the question
    g = create_graph_explore_graph(metaqa, llm=llm, max_steps=1)
    for question, h in (
        ("what movies did [Babaloo Mandel] write", 1),
        ("who directed the movies written by [Babaloo Mandel]", 2),
    ):
        out = g.invoke({"question": question, "topic_entities": ["Babaloo Mandel"]})
        assert _trace(out, "prepare")[0]["hops"] == h
    gen = FakeChat(rules=explore_rules(lambda p: "I need the director."), tools=False)
    out = create_graph_explore_graph(KG, llm=gen, max_steps=1, decide="generate", hops=2).invoke(Q)
    assert _trace(out, "prepare")[0]["hops"] is None and gen.calls[END_Q] == 1


# the writer's other film's actor: a 3-hop question whose answer-type relation (starred_actors) is the
# trap a hop-by-hop choice takes first
Q3 = {"question": "who starred in the films written by the writer of [Splash]", "topic_entities": ["Splash"]}
RIGHT_CHAIN = "written by, then reverse of written by, then starred actors"


def trap_scores(text: str, options: list[str]) -> list[float]:
    """Scripted option scores: a relation chain scores by whether it is :data:`RIGHT_CHAIN` (0 for every
    chain after the calibration prompt, whose question is only the entity); every other ranking prefers
    ``starred_actors``, Parenthood and Steve Martin."""
    if ", then " in options[0]:
        if "Question: [Splash]" in text:
            return [0.0] * len(options)
        return [0.0 if o == RIGHT_CHAIN else -5.0 for o in options]
    keep = ("starred_actors", "Parenthood", "Steve Martin")
    return [0.0 if any(k in o for k in keep) else -9.0 for o in options]


def test_ranked_explorer_chooses_the_relations_as_one_chain_of_the_walks_length():
    llm = FakeChat(rules=explore_rules(lambda p: "I need the writer."), logprobs=trap_scores, tools=False)
    out = create_graph_explore_graph(HopByHopKG(KG), llm=llm, max_steps=4, hops=3).invoke(Q3)
    steps = _trace(out, "expand")
    plan = steps[0]["plan"]
    assert plan["chosen"] == ["written_by", "~written_by", "starred_actors"] and plan["truncated"] is False
    assert plan["ranking"]["top"][0][0] == RIGHT_CHAIN and plan["ranking"]["calibrated"] is True
    # a 3-hop chain is ranked with the prompt's worked example (a 2-hop chain, so it is no option), in
    # both the prompt and its calibration prompt
    assert plan["example"] is True
    chain_prompts = [m for m in llm.messages if str(m[-1].content).endswith("Relation chain:")]
    assert len(chain_prompts) == 2 and all("Example:" in str(m[0].content) for m in chain_prompts)
    assert "plan" not in steps[1]  # ranked once, on the first step
    # every level follows the chain's relation, none is ranked per entity
    levels = [s["search"][0] for s in steps]
    assert [lv["relations"] for lv in levels] == [
        {"Splash": ["written_by"]},
        {"Babaloo Mandel": ["~written_by"]},
        {"Parenthood": ["starred_actors"]},
    ]
    assert all(lv["by"] == "chain" for lv in levels)
    assert out["answers"] == ["Steve Martin"]
    assert [p.to_text() for p in out["paths"]] == [
        "Splash -> written_by -> Babaloo Mandel -> ~written_by -> Parenthood"
        " -> starred_actors -> Steve Martin"
    ]
    # hop by hop (relation_chain=False), the first hop takes the answer's type and the walk goes astray
    llm = FakeChat(rules=explore_rules(lambda p: "I need the writer."), logprobs=trap_scores, tools=False)
    out = create_graph_explore_graph(KG, llm=llm, max_steps=4, hops=3, relation_chain=False).invoke(Q3)
    steps = _trace(out, "expand")
    assert "plan" not in steps[0] and steps[0]["search"][0]["relations"] == {"Splash": ["starred_actors"]}
    assert out["answers"] != ["Steve Martin"]


def test_on_a_store_with_chain_queries_the_explorer_walks_the_chosen_chain_whole():
    llm = FakeChat(rules=explore_rules(lambda p: "I need the writer."), logprobs=trap_scores, tools=False)
    out = create_graph_explore_graph(EngineJoinKG(KG), llm=llm, max_steps=4, hops=3).invoke(Q3)
    steps = _trace(out, "expand")
    assert steps[0]["plan"]["chosen"] == ["written_by", "~written_by", "starred_actors"]
    # one step, one search level: the store's walks to the chain's ends, no relation or entity pruning
    assert len(steps) == 1 and llm.calls[PRUNE_REL] == 0
    level = steps[0]["search"][0]
    assert level["by"] == "whole chain" and level["end"] is True and level["truncated"] == []
    assert out["answers"] == ["Steve Martin"]
    assert [p.to_text() for p in out["paths"]] == [
        "Splash -> written_by -> Babaloo Mandel -> ~written_by -> Parenthood"
        " -> starred_actors -> Steve Martin"
    ]
    # the ends are cut at fanout_limit per entity, and the cut is traced
    llm = FakeChat(rules=explore_rules(lambda p: "I need the director."), logprobs=trap_scores, tools=False)
    out = create_graph_explore_graph(EngineJoinKG(KG), llm=llm, max_steps=2, hops=2, fanout_limit=1).invoke(
        {"question": "who directed the films of [Tom Hanks]", "topic_entities": ["Tom Hanks"]}
    )
    level = _trace(out, "expand")[0]["search"][0]
    assert level["by"] == "whole chain" and level["ends"] == 1 and level["truncated"]


LOOPS = MemoryKG(LOOP_TRIPLES)
LOOP_CHAINS = {"recording", "recording, then recording", "parents, then children, then nationality"}


def loop_scores(text: str, options: list[str]) -> list[float]:
    """The chains of :data:`LOOP_CHAINS` first (all alike after the calibration prompt, whose question
    is only the entity); every other ranking in the order offered."""
    if re.search(r"Question: \[\w+\]\n", text):
        return [0.0] * len(options)
    if "Relation chain:" in text:
        return [0.0 if o in LOOP_CHAINS else -5.0 for o in options]
    return [float(-i) for i in range(len(options))]


def test_revisit_walks_the_explorer_s_chain_through_the_topic_and_may_end_on_it():
    """graph_explore's ``revisit``: the chosen chain walked as the graph executes it (through a
    self-loop, back through the topic entity), its ends the answers, each with its verified walk, the
    topic entity when the chain reaches nothing else; without it those answers are out of reach."""
    cases = [
        ("what is the recording of [Robin] 's recording", "Robin", 2, ["Robin"]),
        ("what is the recording of [Robin]", "Robin", 1, ["Robin"]),
        ("what is the nationality of [Ann] 's parent 's child", "Ann", 3, ["France", "UK"]),
    ]
    for question, topic, hops, want in cases:
        q = {"question": question, "topic_entities": [topic]}

        def llm():
            return FakeChat(
                rules=explore_rules(lambda p: "I need the chain."), logprobs=loop_scores, tools=False
            )

        plain = create_graph_explore_graph(LOOPS, llm=llm(), max_steps=4, hops=hops).invoke(q)
        assert set(plain["answers"]) < set(want)
        out = create_graph_explore_graph(LOOPS, llm=llm(), max_steps=4, hops=hops).invoke(
            q, context={"revisit": True}
        )
        assert sorted(out["answers"]) == want and not out["errors"]
        assert out["paths"] and all(verify_path(LOOPS, p) for p in out["paths"])
        assert sorted(p.end for p in out["paths"]) == want
        assert _trace(out, "expand")[0]["search"][0]["by"] == "whole chain"
    # graph_agent has no such walk: the option is refused, not ignored
    agent = create_graph_agent_graph(LOOPS, llm=FakeChat(logprobs=loop_scores), hops=2)
    out = agent.invoke({"question": cases[0][0], "topic_entities": ["Robin"]}, context={"revisit": True})
    assert out["errors"][0]["type"] == "ConfigError" and "revisit" in out["errors"][0]["message"]
    with pytest.raises(ConfigError, match="revisit must be True or False"):
        create_graph_explore_graph(LOOPS, llm=FakeChat(logprobs=loop_scores), revisit="yes")


def test_a_neighbour_without_the_chain_s_next_relation_is_left_out_before_the_pruning():
    from kg_agents.kg import MemoryKG

    kg = MemoryKG(
        [
            ("Old Film", "written_by", "Ann Wri"),  # no genre: off the chain
            ("New Film", "written_by", "Ann Wri"),
            ("New Film", "has_genre", "Drama"),
        ]
    )

    def scores(text: str, options: list[str]) -> list[float]:
        if ", then " in options[0]:  # the chain: written by backwards, then the genre
            return [0.0 if o == "reverse of written by, then has genre" else -5.0 for o in options]
        return [0.0 if "Old Film" in o else -9.0 for o in options]  # pruning would keep the wrong film

    question = {
        "question": "the films written by [Ann Wri] were in which genres",
        "topic_entities": ["Ann Wri"],
    }
    llm = FakeChat(rules=explore_rules(lambda p: "I need the films."), logprobs=scores, tools=False)
    out = create_graph_explore_graph(HopByHopKG(kg), llm=llm, max_steps=3, hops=2).invoke(question)
    first = _trace(out, "expand")[0]["search"][0]
    assert first["off_chain"] == {"Ann Wri ~written_by": 1}
    assert out["answers"] == ["Drama"]
    assert [p.to_text() for p in out["paths"]] == ["Ann Wri -> ~written_by -> New Film -> has_genre -> Drama"]
    # per level there is no chain to be off: the pruning keeps the film it prefers
    llm = FakeChat(rules=explore_rules(lambda p: "I need the films."), logprobs=scores, tools=False)
    out = create_graph_explore_graph(kg, llm=llm, max_steps=3, hops=2, relation_chain=False).invoke(question)
    assert "off_chain" not in _trace(out, "expand")[0]["search"][0]


def test_the_walk_does_not_turn_back_to_the_nodes_it_came_from():
    from kg_agents.kg import MemoryKG

    kg = MemoryKG(
        [
            ("Saturn", "written_by", "John Barry"),
            ("Saturn", "written_by", "Martin Amis"),
            ("Moon", "written_by", "Jo Lone"),  # Jo Lone wrote Moon alone: a dead end for the chain
            ("Moon", "written_by", "Al Two"),
            ("Sun", "written_by", "Al Two"),
            ("Sun", "written_by", "Bea Co"),
        ]
    )

    def scores(text: str, options: list[str]) -> list[float]:
        if ", then " in options[0]:  # the chain: the films written, then their writers
            return [0.0 if o == "reverse of written by, then written by" else -5.0 for o in options]
        # entity pruning keeps the name the question gives (a small model's habit), then Jo Lone
        return [0.0 if ("John Barry" in o or "Jo Lone" in o) else -9.0 for o in options]

    def ask(question: str, topic: str) -> dict:
        llm = FakeChat(rules=explore_rules(lambda p: "I need the co-writers."), logprobs=scores, tools=False)
        g = create_graph_explore_graph(HopByHopKG(kg), llm=llm, max_steps=3, hops=2, keep_entities=1)
        return g.invoke({"question": question, "topic_entities": [topic]})

    # the film's writers are John Barry, whom the walk came from, and Martin Amis: only Martin Amis is a
    # step forward, so the pruning does not take the walk back to the question's own entity
    out = ask("which screenwriters co-wrote films with [John Barry]", "John Barry")
    second = _trace(out, "expand")[1]["search"][0]
    assert second["turned_back"] == {"Saturn written_by": 1}
    assert out["answers"] == ["Martin Amis"]
    assert [p.to_text() for p in out["paths"]] == [
        "John Barry -> ~written_by -> Saturn -> written_by -> Martin Amis"
    ]
    # from a film, a 3-hop walk (its writers' other films): Jo Lone wrote only Moon, so the chain's next
    # relation leads Jo Lone back to Moon alone; Jo Lone is off the chain before the pruning
    llm = FakeChat(
        rules=explore_rules(lambda p: "I need the writers."),
        logprobs=lambda text, options: (
            [0.0 if o == "written by, then reverse of written by, then written by" else -5.0 for o in options]
            if ", then " in options[0]
            else [0.0 if ("Jo Lone" in o or "Sun" in o) else -9.0 for o in options]
        ),
        tools=False,
    )
    g = create_graph_explore_graph(HopByHopKG(kg), llm=llm, max_steps=4, hops=3, keep_entities=1)
    out = g.invoke(
        {"question": "who co-wrote the films of the writers of [Moon]", "topic_entities": ["Moon"]}
    )
    first = _trace(out, "expand")[0]["search"][0]
    assert first["off_chain"] == {"Moon written_by": 1}
    assert out["answers"] == ["Bea Co"]
    assert [p.to_text() for p in out["paths"]] == [
        "Moon -> written_by -> Al Two -> ~written_by -> Sun -> written_by -> Bea Co"
    ]


def test_no_relation_chain_for_one_hop_or_on_the_papers_route():
    llm = FakeChat(rules=explore_rules(lambda p: "I need the writer."), logprobs=trap_scores, tools=False)
    out = create_graph_explore_graph(KG, llm=llm, max_steps=2, hops=1).invoke(Q3)
    assert "plan" not in _trace(out, "expand")[0]
    gen = FakeChat(rules=explore_rules(lambda p: "I need the writer."), tools=False)
    out = create_graph_explore_graph(KG, llm=gen, max_steps=1, decide="generate", hops=3).invoke(Q3)
    assert "plan" not in _trace(out, "expand")[0] and gen.calls[PRUNE_REL] == 1
    with pytest.raises(ConfigError, match="relation_chain must be True, False or None"):
        create_graph_explore_graph(KG, llm=gen, relation_chain="yes")


def test_a_specialist_ranks_the_chain_too_unless_asked_not_to(monkeypatch):
    # graph_explore's specialist learnt the chain: on by default for every model; False: per level
    import kg_agents.methods.graph_cot.graph as graph_module

    monkeypatch.setattr(graph_module, "runs_adapter", lambda model: True)
    for option, planned in ((None, True), (True, True), (False, False)):
        llm = FakeChat(rules=explore_rules(lambda p: "I need the writer."), logprobs=trap_scores, tools=False)
        out = create_graph_explore_graph(KG, llm=llm, max_steps=4, hops=3, relation_chain=option).invoke(Q3)
        assert ("plan" in _trace(out, "expand")[0]) is planned


def test_a_specialist_ranks_the_chain_on_plain_scores_without_the_example(monkeypatch):
    # an adapter learns the chain on its plain scores and without the zero-shot model's worked example
    import kg_agents.methods.graph_cot.graph as graph_module

    monkeypatch.setattr(graph_module, "runs_adapter", lambda model: True)
    llm = FakeChat(rules=explore_rules(lambda p: "I need the writer."), logprobs=trap_scores, tools=False)
    out = create_graph_explore_graph(KG, llm=llm, max_steps=4, hops=3, relation_chain=True).invoke(Q3)
    plan = _trace(out, "expand")[0]["plan"]
    assert plan["chosen"] == ["written_by", "~written_by", "starred_actors"]
    assert plan["calibrated"] is False and plan["example"] is False
    chain_prompts = [m for m in llm.messages if str(m[-1].content).endswith("Relation chain:")]
    assert len(chain_prompts) == 1 and "Example:" not in str(chain_prompts[0][0].content)
    llm = FakeChat(rules=explore_rules(lambda p: "I need the writer."), logprobs=trap_scores, tools=False)
    options = {"relation_chain": True, "plan_example": True}
    out = create_graph_explore_graph(KG, llm=llm, max_steps=4, hops=3, **options).invoke(Q3)
    assert _trace(out, "expand")[0]["plan"]["example"] is True
    with pytest.raises(ConfigError, match="plan_example must be True, False or None"):
        create_graph_explore_graph(KG, llm=llm, plan_example="yes")


@pytest.mark.parametrize("bad", [0, -1, "two", True, 1.5])
def test_a_bad_hops_is_a_config_error(bad):
    for factory in (create_graph_agent_graph, create_graph_explore_graph):
        with pytest.raises(ConfigError, match="hops must be"):
            factory(KG, llm=FakeChat(tools=False), hops=bad)


def test_hops_from_the_command_line():
    from kg_agents.options import keyword_options, parse_options

    valid = keyword_options(create_graph_explore_graph)
    assert parse_options(["hops=2"], valid) == {"hops": 2}
    assert parse_options(["hops=none"], valid) == {"hops": "none"}
    with pytest.raises(ConfigError, match="hops must be"):
        create_graph_explore_graph(KG, llm=FakeChat(tools=False), **parse_options(["hops=two"], valid))


def test_ranked_agent_follows_a_relation_chain_ranked_once():
    # relation_chain (the default): once the start is retrieved, the agent ranks the chain of the walk's
    # length; each hop then offers only the NeighborCheck along it (no ranking call), and Finish comes at
    # its end
    llm = FakeChat(logprobs=trap_scores, tools=False)
    out = create_graph_agent_graph(KG, llm=llm, hops=3).invoke(Q3)
    steps = _trace(out, "expand")
    assert [s["action"] for s in steps] == [
        "RetrieveNode[Splash]",
        "NeighborCheck[Splash, written_by]",
        "NeighborCheck[Babaloo Mandel, ~written_by]",
        "NeighborCheck[Parenthood, starred_actors]",
        "Finish[Steve Martin]",
    ]
    plan = steps[1]["plan"]
    assert plan["chosen"] == ["written_by", "~written_by", "starred_actors"]
    assert plan["calibrated"] is True and plan["example"] is True  # the zero-shot model's chain ranking
    assert all("plan" not in s for s in steps[:1] + steps[2:])  # ranked once
    assert all(s["ranking"]["route"] == "only" for s in steps)  # one option a step: no ranking call
    assert llm.calls["logprobs"] == 2 and out["usage"]["llm_calls"] == 2  # the chain and its calibration
    assert out["answers"] == ["Steve Martin"]
    assert [p.to_text() for p in out["paths"]] == [
        "Splash -> written_by -> Babaloo Mandel -> ~written_by -> Parenthood"
        " -> starred_actors -> Steve Martin"
    ]
    # without it the agent ranks each hop's relations and takes the answer's type first
    llm = FakeChat(logprobs=trap_scores, tools=False)
    out = create_graph_agent_graph(KG, llm=llm, hops=3, calibrate=False, relation_chain=False).invoke(Q3)
    steps = _trace(out, "expand")
    assert steps[1]["action"] == "NeighborCheck[Splash, starred_actors]" and "plan" not in steps[1]
    assert out["answers"] != ["Steve Martin"]


def test_ranked_agent_ranks_a_chain_of_one_relation_at_one_hop():
    # at 1 hop the chain is one relation, ranked with the chain prompt (as at 2 and 3 hops) instead of
    # the NeighborCheck actions: the chain prompt prefers written_by, an action ranking the actors
    def scores(text: str, options: list[str]) -> list[float]:
        if text.rstrip().endswith("Relation chain:"):  # the chain, and its calibration prompt
            if "Question: [Splash]" in text:
                return [0.0] * len(options)
            return [0.0 if o == "written by" else -5.0 for o in options]
        return [0.0 if "starred" in o else -9.0 for o in options]

    question = {"question": "who wrote [Splash]", "topic_entities": ["Splash"]}
    llm = FakeChat(logprobs=scores, tools=False)
    out = create_graph_agent_graph(KG, llm=llm, hops=1, calibrate=False).invoke(question)
    steps = _trace(out, "expand")
    assert [s["action"] for s in steps[:2]] == ["RetrieveNode[Splash]", "NeighborCheck[Splash, written_by]"]
    assert steps[1]["plan"]["chosen"] == ["written_by"] and steps[-1]["action"].startswith("Finish[")
    assert llm.calls["logprobs"] == 2  # the chain and its calibration; each later step has one option
    assert out["answers"] and all(p.hops[0].relation == "written_by" for p in out["paths"])
    # relation_chain=False: the agent ranks its NeighborCheck actions at 1 hop, as the paper's agent does
    llm = FakeChat(logprobs=scores, tools=False)
    out = create_graph_agent_graph(KG, llm=llm, hops=1, calibrate=False, relation_chain=False).invoke(
        question
    )
    steps = _trace(out, "expand")
    assert steps[1]["action"] == "NeighborCheck[Splash, starred_actors]" and "plan" not in steps[1]


def test_agent_chain_offers_every_relation_where_no_node_has_the_chain_s_next_one():
    from kg_agents.kg import MemoryKG
    from tests.methods.graph_cot.helpers import agent_interaction

    kg = MemoryKG([("Film", "written_by", "Ann"), ("Film", "has_genre", "Drama"), ("Ann", "born_in", "Oslo")])
    agent = agent_interaction(FakeChat(tools=False), kg, relation_chain=True)
    branch = {"starts": ["Film"], "steps": [{"action": "RetrieveNode[Film]", "nodes": ["Film"]}]}
    chain_only = agent.action_options(branch, 2, ["written_by", "born_in"])
    assert [a for _, a, _ in chain_only] == [[("NeighborCheck", ["Film", "written_by"])]]
    # no frontier node has the chain's relation: every relation the nodes have is offered
    every = agent.action_options(branch, 2, ["in_language", "born_in"])
    assert {a[0][1][1] for _, a, _ in every} == {"written_by", "has_genre"}
    with pytest.raises(ConfigError, match="relation_chain must be True or False"):
        create_graph_agent_graph(kg, llm=FakeChat(tools=False), relation_chain="yes")


def test_agent_chain_with_a_specialist_is_ranked_plain_and_without_the_example(monkeypatch):
    # like graph_explore's: an adapter ranks the chain on its plain scores, without the worked example
    import kg_agents.methods.graph_cot.graph as graph_module

    monkeypatch.setattr(graph_module, "runs_adapter", lambda model: True)
    llm = FakeChat(logprobs=trap_scores, tools=False)
    out = create_graph_agent_graph(KG, llm=llm, hops=3, relation_chain=True).invoke(Q3)
    plan = _trace(out, "expand")[1]["plan"]
    assert plan["chosen"] == ["written_by", "~written_by", "starred_actors"]
    assert plan["calibrated"] is False and plan["example"] is False
    assert llm.calls["logprobs"] == 1  # the chain alone, once
    # plan_example=True shows the example to the adapter too
    llm = FakeChat(logprobs=trap_scores, tools=False)
    out = create_graph_agent_graph(KG, llm=llm, hops=3, relation_chain=True, plan_example=True).invoke(Q3)
    assert _trace(out, "expand")[1]["plan"]["example"] is True
    with pytest.raises(ConfigError, match="plan_example must be True, False or None"):
        create_graph_agent_graph(KG, llm=llm, plan_example="yes")
