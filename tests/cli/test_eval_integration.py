"""Integration: the CLI, the eval runner and text_rag with the real local model over MetaQA.

Cheap by design (a handful of short model calls): every call is capped with ``--max-tokens``.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from kg_agents.cli import commands as cli
from kg_agents.eval.datasets import get_dataset
from kg_agents.eval.metrics import SUMMARY_KEYS
from kg_agents.eval.runner import read_predictions, run_eval
from kg_agents.kg import open_kg, verify_path
from kg_agents.methods.baselines.graph import create_text_rag_graph

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def llm():
    from kg_agents.llm import resolve_chat_model

    return resolve_chat_model("local", max_tokens=24)


@pytest.fixture(scope="module")
def metaqa():
    return open_kg("metaqa")


def test_demo_links_and_answers(capsys):
    assert cli.main(["demo", "--max-tokens", "24"]) == 0
    out = capsys.readouterr().out
    assert "Question: who directed [Splash]" in out and "Answers:" in out
    assert "Usage: 1 LLM calls" in out
    paths = out.split("Reasoning paths:")[1].split("Usage:")[0].strip().splitlines()
    assert all(p.strip().startswith("Splash -> ") for p in paths if p.strip() != "(none)")
    # The default demo method (dualr) finds the director with a verified path.
    assert "Splash -> directed_by -> Ron Howard" in out


def test_ask_json_with_the_local_model(capsys):
    rc = cli.main(["ask", "who directed [Splash]", "--method", "llm_only", "--max-tokens", "16", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["usage"]["llm_calls"] == 1 and out["usage"]["input_tokens"] > 10
    assert 0 < out["usage"]["output_tokens"] <= 16 and out["paths"] == []


def test_text_rag_local_model_over_metaqa(llm, metaqa):
    g = create_text_rag_graph(metaqa, llm=llm, hops=1, max_candidates=40)
    out = g.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]}, context={"top_k": 5})
    assert "Splash directed by Ron Howard" in out["evidence"]  # the dense retriever ranks it in the top 5
    assert out["usage"]["llm_calls"] == 1 and out["usage"]["input_tokens"] > 0
    assert all(verify_path(metaqa, p) for p in out["paths"])


def test_eval_runner_local_model(tmp_path, llm):
    from kg_agents.methods.baselines.graph import create_graph_rag_graph

    ds = get_dataset("metaqa-1hop", "validation", limit=2)
    s = asyncio.run(
        run_eval(
            ds.questions,
            tmp_path,
            method="graph_rag",
            dataset="metaqa-1hop",
            build_graph=lambda kg: create_graph_rag_graph(kg, llm=llm),
            kg_for=ds.kg_for,
            progress=False,
        )
    )
    assert tuple(s) == SUMMARY_KEYS and s["n"] == 2 and s["errors"] == 0
    assert s["avg_llm_calls"] == 1.0 and s["avg_input_tokens"] > 20 and s["avg_seconds"] > 0
    recs = read_predictions(tmp_path / "predictions.jsonl")
    assert set(recs) == {q.id for q in ds}
    assert all(r["paths_faithful"] == r["paths_total"] for r in recs.values())
