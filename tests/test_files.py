"""Atomic writes leave no temporary file behind, also when interrupted right after creating it."""

import os

import pytest

from kg_agents import files


def _leftovers(directory):
    return sorted(p.name for p in directory.iterdir() if p.name.startswith("."))


def test_atomic_write_replaces_the_file(tmp_path):
    target = tmp_path / "index.json"
    files.atomic_write(target, "old")
    files.atomic_write(target, "new")
    assert target.read_text() == "new" and _leftovers(tmp_path) == []


def test_an_interrupt_right_after_the_temporary_file_exists_removes_it(tmp_path, monkeypatch):
    # Ctrl-C can land between creating the temporary file and the first statement that would clean
    # it up; the file must still go, and the target keep its old contents.
    target = tmp_path / "index.json"
    files.atomic_write(target, "old")
    real_close = os.close

    def interrupted_close(fd):
        real_close(fd)
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "close", interrupted_close)
    with pytest.raises(KeyboardInterrupt):
        files.atomic_write(target, "new")
    monkeypatch.undo()
    assert target.read_text() == "old" and _leftovers(tmp_path) == []
