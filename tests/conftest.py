"""Shared fixtures of the test suite."""

from __future__ import annotations

import pytest

pytest_plugins = ["tests.servers", "tests.vllm_fixtures"]


@pytest.fixture(autouse=True)
def _pack_registry(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test registers KG packs in a registry of its own, never in the user's."""
    from kg_agents.packs.registry import PACKS_ENV

    monkeypatch.setenv(PACKS_ENV, str(tmp_path_factory.mktemp("packs")))
