"""The shipped specialist adapter: the default of the embedded model on MetaQA, one question through every
method that uses it, and the zero-shot model one option away (``adapter="none"``)."""

from __future__ import annotations

import json

import pytest

from kg_agents.core.models import BUNDLED_SPECIALIST, BUNDLED_SPECIALISTS, default_llm
from kg_agents.core.registry import create_graph
from kg_agents.kg import open_kg
from kg_agents.kg.base import verify_path

pytestmark = [pytest.mark.integration, pytest.mark.slow]

METHODS = ["knowledge_navigator", "graph_agent", "graph_explore", "graph_rag", "text_rag", "dualr"]


@pytest.fixture(scope="module")
def metaqa():
    return open_kg("metaqa")


@pytest.mark.parametrize("folder", sorted({BUNDLED_SPECIALIST, *BUNDLED_SPECIALISTS.values()}))
def test_the_shipped_adapters_carry_their_training_record(folder):
    record = json.loads((folder / "specialist_train.json").read_text(encoding="utf-8"))
    assert record["objective"] == "rank" and record["split"] == "train"
    assert record["loss_curve"] and record["decisions_per_role"]
    size = sum(f.stat().st_size for f in folder.glob("adapter_model.*"))
    assert 0 < size < 10_000_000 and record["adapter_bytes"] == size
    assert (folder / "README.md").is_file()


def test_the_embedded_model_runs_the_specialist_on_metaqa_and_zero_shot_on_request(metaqa):
    assert default_llm(None, kg=metaqa).model_name == "SmolLM2-135M-Instruct+metaqa"
    own = default_llm(None, kg=metaqa, method="knowledge_navigator")
    assert own.model_name == "SmolLM2-135M-Instruct+metaqa-kn"
    explorer = default_llm(None, kg=metaqa, method="graph_explore")
    assert explorer.model_name == "SmolLM2-135M-Instruct+metaqa-ge"
    agent = default_llm(None, kg=metaqa, method="graph_agent")  # its own, from the explorer's
    assert agent.model_name == "SmolLM2-135M-Instruct+metaqa-ga"
    # gcr's general reasoner: its own, trained on gcr's answer decisions over K = 5 decoded paths
    assert default_llm(None, kg=metaqa, method="gcr").model_name == "SmolLM2-135M-Instruct+metaqa-gcr"
    assert default_llm("local", kg=metaqa, adapter="none").model_name == "smollm2-135m-instruct"
    assert default_llm(None, kg=open_kg("pq-2h")).model_name == "smollm2-135m-instruct"


def test_every_method_defaults_to_the_specialist_on_metaqa():
    from kg_agents.core.registry import get_method

    defaults = {m: get_method(m).options()["adapter"].default for m in METHODS}
    assert defaults == dict.fromkeys(METHODS, "auto")


@pytest.mark.parametrize("method", METHODS)
def test_one_question_through_each_method_on_the_shipped_adapter(method, metaqa):
    graph = create_graph(method, metaqa, adapter="specialist")  # llm=None: the embedded model, adapted
    out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert not out.get("errors"), out.get("errors")
    assert out["answers"] and out["usage"]["llm_calls"] >= 1
    # an answer is a neighbour of Splash reached by a returned, verified path
    around = {metaqa.label(t.other("Splash")) for t in metaqa.neighbors("Splash", direction="both")}
    assert out["answers"][0] in around
    ends = {metaqa.label(p.end) for p in out["paths"]}
    assert set(out["answers"]) <= ends and all(verify_path(metaqa, p) for p in out["paths"])


def test_one_question_through_gcr_s_general_reasoner_on_its_shipped_adapter(metaqa):
    from kg_agents.methods.gcr import create_gcr_graph

    graph = create_gcr_graph(metaqa, general_adapter="specialist", num_beams=3)
    assert graph.get_graph() is not None
    out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert not out.get("errors"), out.get("errors")
    reason = [t for t in out["trace"] if t.get("node") == "reason"][-1]
    assert reason["mode"] == "general_llm" and out["usage"]["llm_calls"] >= 2  # decoded, then ranked
    ends = {metaqa.label(p.end) for p in out["paths"]}
    assert out["answers"] and set(out["answers"]) <= ends
    assert all(verify_path(metaqa, p) for p in out["paths"])


def test_run_json_names_the_model_each_method_really_uses(metaqa):
    """``model_used`` follows each factory's own ``adapter`` default, and the method's own bundled
    adapter; gcr's ``adapter`` is its path decoder's, its ``general_adapter`` its general reasoner's."""
    from kg_agents.cli.commands import MethodSetup

    def used(method, settings=()):
        return MethodSetup.from_args(method, list(settings), "local").model_used(metaqa)

    assert used("knowledge_navigator") == "SmolLM2-135M-Instruct+metaqa-kn"  # its own adapter
    assert used("knowledge_navigator", ["adapter=specialist"]) == "SmolLM2-135M-Instruct+metaqa-kn"
    assert used("knowledge_navigator", ["adapter=none"]) == "smollm2-135m-instruct"
    assert used("graph_explore") == "SmolLM2-135M-Instruct+metaqa-ge"  # its own adapter too
    assert used("graph_rag") == "SmolLM2-135M-Instruct+metaqa"
    assert used("graph_agent") == "SmolLM2-135M-Instruct+metaqa-ga"  # its own, from graph_explore's
    assert used("graph_agent", ["adapter=specialist"]) == "SmolLM2-135M-Instruct+metaqa-ga"
    assert used("graph_agent", ["adapter=none"]) == "smollm2-135m-instruct"
    # gcr's general reasoner: its own (its general_adapter); its adapter is the decoder's
    assert used("gcr", ["num_beams=5"]) == "SmolLM2-135M-Instruct+metaqa-gcr"
    assert used("gcr") == used("gcr", ["adapter=none"]) == "SmolLM2-135M-Instruct+metaqa-gcr"
    assert used("gcr", ["general_adapter=specialist"]) == "SmolLM2-135M-Instruct+metaqa-gcr"
    assert used("gcr", ["general_adapter=none"]) == "smollm2-135m-instruct"
