"""A method built with ``pack=DIR`` follows the pack: its hop classifier sets the walk where the pack's
route says so, and nowhere else; ``pack="none"`` runs without it. The classifier is a tiny one trained
here over the hashing encoder (no sentence model is loaded); the chat model is the fake one."""

from __future__ import annotations

import pytest

import kg_agents.core.hops as hops_module
from kg_agents.core.hops import forget_loaded
from kg_agents.core.registry import create_graph, list_methods
from kg_agents.errors import ConfigError
from kg_agents.kg.encoder import HashingEncoder
from kg_agents.methods.graph_cot.graph import create_graph_explore_graph
from kg_agents.packs import register_pack
from tests.fakes import FakeChat
from tests.methods.graph_cot.helpers import KG, Q, explore_rules, trace_of
from tests.packs.helpers import hop_pack


@pytest.fixture
def pack_dir(tmp_path, monkeypatch):
    """A pack for the graph_cot tests' KG whose classifier says "who directed [Splash]" has 2 hops."""
    monkeypatch.setattr(hops_module, "default_encoder", HashingEncoder)
    folder = hop_pack(tmp_path / "pack", KG)
    yield folder
    forget_loaded(folder / "hops")


def director_scores(text: str, options: list[str]) -> list[float]:
    """End? says Yes at once; every other ranking prefers directed_by and Ron Howard."""
    if options == ["[Yes]", "[No]"]:
        return [0.0, -1.0]
    return [0.0 if ("directed_by" in o or "Ron Howard" in o) else -9.0 for o in options]


def explore(**options):
    llm = FakeChat(
        rules=explore_rules(lambda p: "I need the director."), logprobs=director_scores, tools=False
    )
    return create_graph_explore_graph(KG, llm=llm, max_steps=3, **options).invoke(Q)


def test_graph_explore_walks_the_pack_s_predicted_hops(pack_dir):
    out = explore(pack=str(pack_dir))
    assert trace_of(out, "prepare")[0]["hops"] == 2  # predicted by the pack's classifier
    assert out["answers"] == ["Parenthood"]  # two hops from Splash: End? never asked
    # without the pack the walk's length is left to End?, which stops after one hop
    out = explore(pack="none")
    assert trace_of(out, "prepare")[0]["hops"] is None and out["answers"] == ["Ron Howard"]


def test_auto_finds_the_registered_pack(pack_dir):
    assert trace_of(explore(), "prepare")[0]["hops"] is None  # nothing registered for this KG yet
    register_pack(pack_dir)
    out = explore()
    assert trace_of(out, "prepare")[0]["hops"] == 2 and out["answers"] == ["Parenthood"]


def test_a_pack_whose_route_does_not_predict_leaves_auto_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(hops_module, "default_encoder", HashingEncoder)
    folder = hop_pack(tmp_path / "pack", KG, routes={})
    try:
        assert trace_of(explore(pack=str(folder)), "prepare")[0]["hops"] is None
        # "predict" asks the pack's classifier (not the bundled MetaQA one)
        assert trace_of(explore(pack=str(folder), hops="predict"), "prepare")[0]["hops"] == 2
    finally:
        forget_loaded(folder / "hops")


def test_knowledge_navigator_takes_the_pack_s_classifier(pack_dir):
    llm = FakeChat(default="Answer: Ron Howard", logprobs=director_scores, tools=False)
    out = create_graph("knowledge_navigator", KG, llm=llm, pack=str(pack_dir), num_variants=0).invoke(Q)
    (step,) = trace_of(out, "analyse_question")
    assert step["hops"] == 2 and step["hops_source"] == "classifier"


def test_graph_rag_reads_the_predicted_distance(pack_dir):
    llm = FakeChat(logprobs=director_scores, tools=False)
    out = create_graph("graph_rag", KG, llm=llm, pack=str(pack_dir)).invoke(Q)
    assert trace_of(out, "retrieve")[0]["answer_hops"] == 2
    out = create_graph("graph_rag", KG, llm=llm, pack="none").invoke(Q)
    assert trace_of(out, "retrieve")[0]["answer_hops"] is None


def test_a_chain_route_walks_the_closest_chain_s_length(tmp_path, monkeypatch):
    """A pack built from the graph alone routes ``"auto"`` to the closest relation chain: the
    classifier says 2 hops for "who directed [Splash]", the chain "directed by" says 1."""
    monkeypatch.setattr(hops_module, "default_encoder", HashingEncoder)
    routes = {"graph_explore": "hops", "graph_rag": "answer_hops", "knowledge_navigator": "hops"}
    folder = hop_pack(tmp_path / "pack", KG, routes=routes, value="chain")
    try:
        out = explore(pack=str(folder))
        assert trace_of(out, "prepare")[0]["hops"] == 1 and out["answers"] == ["Ron Howard"]
        assert trace_of(explore(pack=str(folder), hops="predict"), "prepare")[0]["hops"] == 2
        llm = FakeChat(default="Answer: Ron Howard", logprobs=director_scores, tools=False)
        out = create_graph("knowledge_navigator", KG, llm=llm, pack=str(folder), num_variants=0).invoke(Q)
        (step,) = trace_of(out, "analyse_question")
        assert step["hops"] == 1 and step["hops_source"] == "relation chain"
        out = create_graph(
            "graph_rag", KG, llm=FakeChat(logprobs=director_scores, tools=False), pack=str(folder)
        )
        assert trace_of(out.invoke(Q), "retrieve")[0]["answer_hops"] == 1
    finally:
        forget_loaded(folder / "hops")


def test_knowledge_navigator_takes_chain_as_its_hops(pack_dir, monkeypatch):
    monkeypatch.setattr(hops_module, "default_encoder", HashingEncoder)
    llm = FakeChat(default="Answer: Ron Howard", logprobs=director_scores, tools=False)
    kn = create_graph("knowledge_navigator", KG, llm=llm, pack=str(pack_dir), num_variants=0)
    (step,) = trace_of(kn.invoke(Q, context={"hops": "chain"}), "analyse_question")
    assert step["hops"] == 1 and step["hops_source"] == "relation chain"
    out = kn.invoke(Q, context={"hops": "chains"})
    assert out["answers"] == [] and "hops must be" in str(out["errors"])


@pytest.mark.parametrize("method", [m.name for m in list_methods()])
def test_every_method_takes_a_pack_and_refuses_a_bad_one(method, tmp_path):
    assert {m.name: m for m in list_methods()}[method].options()["pack"].default == "auto"
    with pytest.raises(ConfigError, match="not a KG pack"):
        create_graph(method, KG, llm=FakeChat(), pack=str(tmp_path))
