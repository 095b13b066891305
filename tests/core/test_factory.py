"""The factories' shared setup: pack, model, hop classifier, metered KG, context and graph start."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from langgraph.graph import END

from kg_agents.core.factory import LINK_NODE, context_defaults, reasoning_graph, setup_method
from kg_agents.core.metering import MeteredKG
from kg_agents.core.state import ReasoningState
from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from tests.fakes import FakeChat

KG = MemoryKG([("Splash", "directed_by", "Ron Howard")])


@dataclass
class Ctx:
    top_k: int | None = None
    hops: int | None = None


def test_setup_resolves_the_pack_the_model_and_the_metered_kg():
    llm = FakeChat()
    setup = setup_method(KG, "graph_rag", llm=llm, pack="none", hops_option="answer_hops")
    assert isinstance(setup.kg, MeteredKG) and setup.kg.inner is KG
    assert setup.llm is llm and setup.pack is None
    assert (setup.hop_classifier, setup.auto_hops) == (None, False)


def test_a_given_hop_classifier_wins_and_chat_false_resolves_no_model():
    clf = object()
    setup = setup_method(KG, "gcr", llm=FakeChat(), pack="none", hop_classifier=clf, chat=False)
    assert setup.llm is None and (setup.hop_classifier, setup.auto_hops) == (clf, None)
    none = setup_method(KG, "dualr", pack="none", hop_classifier=clf, hops_option=None, chat=False)
    assert none.hop_classifier is None


def test_setup_checks_the_pack_and_the_adapter():
    with pytest.raises(ConfigError, match="pack"):
        setup_method(KG, "graph_rag", llm=FakeChat(), pack="")
    with pytest.raises(ConfigError, match="adapter"):
        setup_method(KG, "graph_rag", llm=FakeChat(), adapter="specialist", pack="none")


def test_context_defaults_take_the_factory_options_by_name_unless_given():
    assert context_defaults(Ctx, {"top_k": 3, "hops": 1, "kg": KG}) == Ctx(top_k=3, hops=1)
    assert context_defaults(Ctx, {"top_k": 3}, hops=2) == Ctx(top_k=3, hops=2)
    with pytest.raises(ConfigError, match=r"Ctx: no factory option for \['hops'\]"):
        context_defaults(Ctx, {"top_k": 3})


def test_reasoning_graph_starts_at_linking_with_a_setup():
    setup = setup_method(KG, "graph_rag", llm=FakeChat(), pack="none")
    g = reasoning_graph(ReasoningState, Ctx, setup)
    g.add_edge(LINK_NODE, END)
    out = g.compile().invoke({"question": "who directed [Splash]"})
    assert out["trace"] == [{"node": LINK_NODE, "linked": ["Splash"]}] and out["errors"] == []
    bare = reasoning_graph(ReasoningState, Ctx)
    assert LINK_NODE not in bare.nodes and bare.context_schema is Ctx
