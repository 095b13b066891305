"""``kg-agents ask --method dualr``: GNN-only answering (``--set answer_with=gnn``) resolves no model."""

from __future__ import annotations

import json

import pytest

import kg_agents.llm
from kg_agents.cli import commands as cli
from kg_agents.core import models
from kg_agents.core.registry import get_method
from kg_agents.methods.dualr import create_dualr_graph
from kg_agents.options import needs_model
from tests.fakes import FakeChat


@pytest.fixture
def no_model(monkeypatch):
    """Every way to a chat model (the CLI's ``--model``, ``llm=None``, a spec string) fails the test."""

    def refuse(spec, **options):
        raise AssertionError(f"a chat model was resolved: {spec!r}")

    monkeypatch.setattr("kg_agents.cli.setup.resolve_model", refuse)
    monkeypatch.setattr(kg_agents.llm, "resolve_chat_model", refuse)
    monkeypatch.setattr(models, "resolve_chat_model", refuse)


def test_ask_dualr_gnn_only_makes_no_llm_call_and_loads_no_model(capsys, kg_file, no_model):
    argv = ["ask", "who directed [Splash]", "--method", "dualr", "--kg", kg_file, "--topic", "Splash"]
    rc = cli.main([*argv, "--set", "answer_with=gnn", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["answers"][0] == "Ron Howard" and out["usage"]["llm_calls"] == 0
    assert "Splash -> directed_by -> Ron Howard" in out["paths"]
    decided = next(t for t in out["trace"] if t["node"] == "determine_answer")
    assert decided["mode"] == "gnn_only"


def test_ask_dualr_default_answers_with_the_model(capsys, kg_file, monkeypatch):
    llm = FakeChat(replies=["Answer: A"])
    resolved: list[str] = []

    def resolve(spec, **options):
        resolved.append(spec)
        return llm

    monkeypatch.setattr("kg_agents.cli.setup.resolve_model", resolve)
    argv = ["ask", "who directed [Splash]", "--method", "dualr", "--kg", kg_file, "--topic", "Splash"]
    assert cli.main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert resolved == ["local"] and out["usage"]["llm_calls"] == 1 and llm.calls["replies"] == 1
    assert out["answers"] == ["Ron Howard"]


def test_needs_model_reads_the_factory_modules_no_llm_options():
    assert needs_model(create_dualr_graph, {}) is True
    assert needs_model(create_dualr_graph, {"answer_with": "llm"}) is True
    assert needs_model(create_dualr_graph, {"answer_with": "gnn"}) is False
    assert needs_model(get_method("graph_rag").load(), {}) is True  # no NO_LLM_OPTIONS

    def no_llm_factory(kg, *, k: int = 1):
        raise AssertionError

    assert needs_model(no_llm_factory, {}) is False
