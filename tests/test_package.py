"""The public API is pinned: a change to it is a deliberate change to this test."""

from __future__ import annotations

import subprocess
import sys

import kg_agents


def test_all_is_pinned_and_sorted():
    assert kg_agents.__all__ == sorted(kg_agents.__all__)
    assert set(kg_agents.__all__) == {
        "ConfigError",
        "DataFormatError",
        "EndpointError",
        "EntityIndex",
        "EntityNotFound",
        "InvalidTermError",
        "KGAgentsError",
        "KGError",
        "KnowledgeGraph",
        "MemoryKG",
        "ModelError",
        "Path",
        "Triple",
        "__version__",
        "create_graph",
        "kg_toolkit",
        "list_methods",
        "open_kg",
        "reasoning_tool",
        "resolve_chat_model",
        "verify_path",
    }


def test_every_exported_name_resolves():
    for name in kg_agents.__all__:
        assert getattr(kg_agents, name) is not None, name


def test_errors_share_one_base():
    for name in (
        "ConfigError",
        "DataFormatError",
        "EndpointError",
        "EntityNotFound",
        "InvalidTermError",
        "KGError",
        "ModelError",
    ):
        assert issubclass(getattr(kg_agents, name), kg_agents.KGAgentsError)


def test_import_is_light():
    """Importing the package or listing methods loads no torch, transformers or faiss."""
    code = (
        "import sys, kg_agents; from kg_agents import list_methods; list_methods(); "
        "print(sorted(m for m in ('torch', 'transformers', 'faiss') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
