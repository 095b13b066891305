"""Integration: the CLI, the eval runner and text_rag with the real local model over MetaQA.

Cheap by design (a handful of short model calls): every call is capped with ``--max-tokens``.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kg_agents.cli import commands as cli
from kg_agents.eval.datasets import get_dataset
from kg_agents.eval.metrics import SUMMARY_KEYS
from kg_agents.eval.runner import read_predictions, run_eval
from kg_agents.kg import open_kg, verify_path
from kg_agents.methods.baselines.graph import create_text_rag_graph

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def llm():
    from kg_agents.llm import resolve_chat_model

    return resolve_chat_model("local", max_tokens=24)


@pytest.fixture(scope="module")
def metaqa():
    return open_kg("metaqa")


def _cli_env() -> dict[str, str]:
    """The environment for a ``kg-agents`` subprocess, without what an in-process ``main`` set."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    for key in ("HF_HUB_DISABLE_PROGRESS_BARS", "TRANSFORMERS_VERBOSITY"):
        env.pop(key, None)
    env.pop("TRANSFORMERS_NO_ADVISORY_WARNINGS", None)
    return env


def test_demo_prints_the_answer_and_nothing_else(tmp_path):
    """``kg-agents demo`` from another directory: question, answer, path and cost, no loading noise."""
    env = _cli_env()
    argv = [sys.executable, "-m", "kg_agents.cli", "demo", "--max-tokens", "24"]
    r = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Question: who directed [Splash]") and lines[1] == "Answers:", lines
    i = lines.index("Reasoning paths:")
    answers, paths = lines[2:i], lines[i + 1 : -1]
    assert answers and all(a.startswith("  ") and a.strip() for a in answers), lines
    # The default demo method (dualr) finds the director with a verified path.
    assert "  Splash -> directed_by -> Ron Howard" in paths
    assert all(p.startswith("  Splash -> ") for p in paths)
    assert lines[-1].startswith("Usage: 1 LLM calls"), lines


def test_verbose_shows_model_loading(tmp_path):
    env = _cli_env()
    argv = [sys.executable, "-m", "kg_agents.cli", "ask", "who directed [Splash]", "--method", "dualr"]
    argv += ["--set", "answer_with=gnn"]
    quiet = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    loud = subprocess.run([*argv, "-v"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert quiet.returncode == loud.returncode == 0, (quiet.stderr, loud.stderr)
    assert quiet.stderr == "" and "Loading weights" in loud.stderr
    assert quiet.stdout.splitlines()[:-1] == loud.stdout.splitlines()[:-1]  # all but the timing


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
