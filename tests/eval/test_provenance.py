"""run.json's record of the code and models a run used: commit, dirty flag, dtype, adapters."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kg_agents.errors import ConfigError
from kg_agents.eval import provenance
from kg_agents.eval.provenance import run_provenance, source_commit, uses_embedded_model
from kg_agents.eval.runner import RUN_INFO, check_run_info
from kg_agents.llm import adapters

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A git checkout holding a package folder ``pkg`` with a committed ``__init__.py``."""
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "__init__.py").write_text("x = 1\n", encoding="utf-8")
    _git(repo, "init", "-q")
    _git(repo, "add", "pkg/__init__.py")
    _git(repo, "commit", "-q", "-m", "one")
    return repo


@needs_git
def test_source_commit_is_head_and_dirty_follows_tracked_files(checkout: Path) -> None:
    head = _git(checkout, "rev-parse", "HEAD")
    assert source_commit(checkout / "pkg") == (head, False)
    (checkout / "untracked.txt").write_text("new", encoding="utf-8")  # untracked files do not count
    assert source_commit(checkout / "pkg") == (head, False)
    (checkout / "pkg" / "__init__.py").write_text("x = 2\n", encoding="utf-8")
    assert source_commit(checkout / "pkg") == (head, True)


@needs_git
def test_source_commit_is_none_for_a_copy_git_does_not_track(checkout: Path, tmp_path: Path) -> None:
    (checkout / "venv" / "pkg").mkdir(parents=True)  # an installed copy inside another checkout
    (checkout / "venv" / "pkg" / "__init__.py").write_text("x = 1\n", encoding="utf-8")
    assert source_commit(checkout / "venv" / "pkg") == (None, None)
    outside = tmp_path / "plain" / "pkg"
    outside.mkdir(parents=True)
    assert source_commit(outside) == (None, None)


def test_source_commit_never_fails_without_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no git executable on the path
    assert source_commit(tmp_path) == (None, None)


def test_dtype_is_recorded_only_for_runs_of_the_embedded_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adapters, "_USED", {})
    monkeypatch.setenv("KG_AGENTS_DTYPE", "bfloat16")
    assert run_provenance(model_used="SmolLM2-135M-Instruct+metaqa")["dtype"] == "bfloat16"
    assert run_provenance(model_used="smollm2-135m-instruct")["dtype"] == "bfloat16"
    assert run_provenance(model_used=None)["dtype"] is None  # dualr's GNN alone: no embedded model
    assert run_provenance(model_used="gpt-4o-mini")["dtype"] is None
    monkeypatch.setenv("KG_AGENTS_DTYPE", "float64")  # a bad value is refused where a model loads, not here
    assert run_provenance(embedded=True)["dtype"] is None


def _adapter(folder: Path, weights: bytes) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}", encoding="utf-8")
    (folder / "adapter_model.safetensors").write_bytes(weights)
    return folder


def test_adapters_loaded_are_recorded_with_their_digest(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(adapters, "_USED", {})
    b = _adapter(tmp_path / "b-adapter", b"bbb")
    a = _adapter(tmp_path / "a-adapter", b"aaa")
    adapters.note_adapter(b)
    adapters.note_adapter(a)
    adapters.note_adapter(a)  # loaded twice: listed once
    used = adapters.adapters_used()
    assert [u["name"] for u in used] == ["a-adapter", "b-adapter"]
    assert used[0]["digest"] != used[1]["digest"] and len(used[0]["digest"]) == 10
    assert uses_embedded_model(None, used)  # GCR's decoder: an adapter on the embedded model
    monkeypatch.setenv("KG_AGENTS_DTYPE", "float32")
    assert run_provenance(model_used=None)["dtype"] == "float32"


def test_run_json_records_provenance_and_a_rerun_in_another_dtype_is_refused(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(adapters, "_USED", {})
    monkeypatch.setattr(provenance, "source_commit", lambda package_dir=None: ("abc123", True))
    monkeypatch.setenv("KG_AGENTS_DTYPE", "float32")
    info = {"method": "graph_rag", "dataset": "d", "model": "local", "model_used": "SmolLM2-135M-Instruct"}
    check_run_info(tmp_path, info)
    saved = json.loads((tmp_path / RUN_INFO).read_text(encoding="utf-8"))
    assert (saved["commit"], saved["dirty"], saved["dtype"], saved["adapters"]) == (
        "abc123",
        True,
        "float32",
        [],
    )
    check_run_info(tmp_path, info)  # the same run resumes
    monkeypatch.setattr(provenance, "source_commit", lambda package_dir=None: ("def456", False))
    check_run_info(tmp_path, info)  # another commit resumes too: recorded, not compared
    monkeypatch.setenv("KG_AGENTS_DTYPE", "bfloat16")
    with pytest.raises(ConfigError, match="dtype"):
        check_run_info(tmp_path, info)


def test_a_run_without_the_embedded_model_resumes_in_any_dtype(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(adapters, "_USED", {})
    monkeypatch.setenv("KG_AGENTS_DTYPE", "float32")
    info = {"method": "dualr", "dataset": "d", "options": ["answer_with=gnn"], "model_used": None}
    check_run_info(tmp_path, info)
    assert json.loads((tmp_path / RUN_INFO).read_text(encoding="utf-8"))["dtype"] is None
    monkeypatch.setenv("KG_AGENTS_DTYPE", "bfloat16")
    check_run_info(tmp_path, info)
