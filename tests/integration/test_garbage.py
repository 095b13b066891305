"""Every registered reasoning graph fed garbage by a scripted chat model (unit tests, no real model).

The model answers every call with garbage drawn by hypothesis: empty strings, random unicode text, a
200,000-character output, JSON-looking junk, and for tool-calling agents invalid tool calls (unknown
tools, arguments that are not JSON, wrong argument types). Over the small contract KG, every method
(and every strategy of ``graph_agent`` / ``graph_explore``) must: not raise; end within its step budget
(no ``GraphRecursionError``); return answers that are strings (and only strings); return paths that
all verify against the KG; and say in ``errors`` why when it returns no answer.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langchain_core.messages import AIMessage

from kg_agents.core.registry import create_graph, list_methods
from kg_agents.kg import MemoryKG, verify_path
from kg_agents.kg.testing import CONTRACT_TRIPLES
from tests.fakes import FakeChat

KG = MemoryKG(CONTRACT_TRIPLES)
QUESTION = {"question": "who directed [Splash]", "topic_entities": ["Splash"]}
HUGE = ("Answer: " + "lorem ipsum dolor sit amet " * 8000)[:200_000]


def feed(model: FakeChat, outputs: list[Any]) -> None:
    """Make the (cached) ``model`` reply with ``outputs`` in turn, cycling; drop its old records."""
    model.replies = outputs
    model.prompts.clear()
    model.messages.clear()


def tool_garbage(i: int) -> AIMessage:
    """An AIMessage with invalid tool calls: unknown tool, unparseable args, wrong types."""
    return AIMessage(
        content="",
        tool_calls=[
            {"name": "NoSuchTool", "args": {"x": 1}, "id": f"a{i}", "type": "tool_call"},
            {
                "name": "NeighborCheck",
                "args": {"node": ["not", "a", "string"], "neighbor_type": None},
                "id": f"b{i}",
                "type": "tool_call",
            },
            {"name": "RetrieveNode", "args": {}, "id": f"c{i}", "type": "tool_call"},
        ],
        invalid_tool_calls=[
            {
                "name": "NodeFeature",
                "args": "{not json",
                "id": f"d{i}",
                "error": "bad json",
                "type": "invalid_tool_call",
            },
        ],
    )


JSONISH = [
    '{"answers": [null, 1, {"x": ]',
    '{"action": "NeighborCheck", "args": [[[',
    '[{"node": "Splash", "feature": }]',
    '{"thought": "", "action": "Finish", "args": [null]}',
    "Action 1: NeighborCheck[Splash, \u0000]\nAction 2: Finish[",
    '```json\n{"score": "NaN", "answers": {}}\n```',
    "Answer: \n\n\n |||| ;;; ---",
]

garbage_text = st.one_of(
    st.just(""),
    st.text(max_size=300),  # random unicode, control characters included
    st.sampled_from(JSONISH),
    st.just(HUGE),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", "replace")),
)
garbage_outputs = st.lists(
    st.one_of(garbage_text, st.integers(0, 3).map(tool_garbage)), min_size=1, max_size=4
)


def build(method: str, options: tuple[tuple[str, Any], ...], kg: Any = KG) -> tuple[Any, FakeChat]:
    """A compiled graph of ``method`` over ``kg`` with a FakeChat (tools accepted) whose replies each test
    sets with :func:`feed`."""
    model = FakeChat(replies=[""])
    opts = dict(options)
    if method == "gcr":
        from tests.methods.gcr.helpers import tiny_decoder

        opts["decoder"] = tiny_decoder(max_answer_tokens=4)
    if method == "text_rag":
        from kg_agents.kg.encoder import get_sentence_encoder

        opts["encoder"] = get_sentence_encoder()
    return create_graph(method, kg, llm=model, **opts), model


cached_build = functools.cache(build)


CASES = [
    ("llm_only", ()),
    ("graph_rag", ()),
    ("text_rag", ()),
    ("dualr", ()),
    ("gcr", ()),
    ("knowledge_navigator", ()),
    *[
        ("graph_agent", (("strategy", s), ("k", 2), ("depth", 2), ("max_steps", 4)))
        for s in ("cot", "tot", "got")
    ],
    ("graph_agent", (("action_mode", "tools"), ("max_steps", 4))),
    *[("graph_explore", (("strategy", s), ("k", 2), ("depth", 2))) for s in ("cot", "tot", "got")],
]
CONTEXT = {"knowledge_navigator": {"hops": 2}}
CASE_IDS = [m + "".join(f"-{v}" for _, v in o) for m, o in CASES]


def test_every_registered_method_is_covered() -> None:
    assert {m.name for m in list_methods()} == {name for name, _ in CASES}


def check(out: dict[str, Any], model: FakeChat, method: str) -> None:
    answers = out.get("answers")
    assert isinstance(answers, list) and all(isinstance(a, str) for a in answers), answers
    assert all(len(a) <= 1000 for a in answers)
    assert all(verify_path(KG, p) for p in out.get("paths") or [])
    if not answers:  # an unusable output is explained
        assert out.get("errors"), (method, out.get("trace"))


@pytest.mark.parametrize(("method", "options"), CASES, ids=CASE_IDS)
@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(outputs=garbage_outputs)
def test_graph_survives_garbage(
    method: str, options: tuple[tuple[str, Any], ...], outputs: list[Any]
) -> None:
    graph, model = cached_build(method, options)
    feed(model, outputs)
    ctx = CONTEXT.get(method)
    out = graph.invoke(dict(QUESTION), **({"context": ctx} if ctx else {}))
    check(out, model, method)


@pytest.mark.parametrize(("method", "options"), CASES, ids=CASE_IDS)
def test_empty_and_huge_outputs(method: str, options: tuple[tuple[str, Any], ...]) -> None:
    """The two extremes, always run (hypothesis may not draw them together)."""
    graph, model = cached_build(method, options)
    for outputs in ([""], [HUGE], [json.dumps({"answers": [None]})]):
        feed(model, outputs)
        ctx = CONTEXT.get(method)
        out = graph.invoke(dict(QUESTION), **({"context": ctx} if ctx else {}))
        check(out, model, method)
