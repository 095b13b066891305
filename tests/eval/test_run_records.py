"""Run records travel: ``run.json`` names packs and adapters by paths that hold on another machine."""

from __future__ import annotations

import json
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest

from kg_agents.eval import provenance
from kg_agents.eval.runner import check_run_info
from kg_agents.llm import adapters

RUNS = Path(__file__).resolve().parents[2] / "docs" / "results" / "runs"


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def _absolute(text: str) -> bool:
    return PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute() or text.startswith("~")


def test_committed_run_records_hold_no_absolute_path():
    records = sorted(RUNS.rglob("run.json"))
    assert records, f"no run.json under {RUNS}"
    for path in records:
        data = json.loads(path.read_text(encoding="utf-8"))
        bad = [s for s in _strings(data) if _absolute(s)]
        assert not bad, f"{path.relative_to(RUNS)} records absolute paths {bad}"
        pack = data.get("pack") or {}
        assert set(pack) <= {"name", "fingerprint", "directory"}


def _adapter(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}", encoding="utf-8")
    (folder / "adapter_model.safetensors").write_bytes(b"w")
    return folder


def test_run_json_records_adapters_relative_to_the_working_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(adapters, "_USED", {})
    monkeypatch.setattr(provenance, "source_commit", lambda package_dir=None: ("abc123", False))
    cwd = tmp_path / "cwd"
    adapters.note_adapter(_adapter(cwd / "work" / "mine"))
    adapters.note_adapter(_adapter(tmp_path / "other" / "theirs"))
    (cwd / "run").mkdir()
    monkeypatch.chdir(cwd)
    check_run_info(cwd / "run", {"method": "gcr", "dataset": "d"})
    recorded = json.loads((cwd / "run" / "run.json").read_text())["adapters"]
    by_name = {a["name"]: a for a in recorded}
    assert by_name["mine"]["path"] == "work/mine" and "path" not in by_name["theirs"]
    assert all(len(a["digest"]) == 10 for a in recorded)
