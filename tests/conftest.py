"""Shared fixtures of the test suite."""

from __future__ import annotations

import os

import pytest

# The embedded model's default dtype is ``auto``: bfloat16 where the CPU computes it, else float32. The suite
# runs the real model in float32 unless the environment names a dtype, so that it checks the same outputs on
# every machine: in bfloat16 a reply can change with the batch it shares (a decode step's matrix products
# round differently at another batch size) and scores move by up to about 0.4 against a full forward pass,
# which the exact-output tests (batched = sequential, prefix cache = full forward to 1e-4) do not allow.
# Tests of ``auto`` itself set or clear the variable; one integration test runs the default as it resolves.
os.environ.setdefault("KG_AGENTS_DTYPE", "float32")

pytest_plugins = ["tests.servers", "tests.vllm_fixtures"]


@pytest.fixture(autouse=True)
def _pack_registry(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test registers KG packs in a registry of its own, never in the user's."""
    from kg_agents.packs.registry import PACKS_ENV

    monkeypatch.setenv(PACKS_ENV, str(tmp_path_factory.mktemp("packs")))
