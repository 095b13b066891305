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


def test_a_portable_path_is_package_relative_or_root_relative_or_none(tmp_path):
    bundled = files.PACKAGE_ROOT / "packs" / "bundled" / "metaqa"
    assert files.portable_path(bundled) == "package:packs/bundled/metaqa"
    assert files.portable_path(bundled, root=tmp_path) == "package:packs/bundled/metaqa"
    mine = tmp_path / "packs" / "mine"
    assert files.portable_path(mine, root=tmp_path) == "packs/mine"
    assert files.portable_path(mine, root=str(tmp_path / "packs" / "mine")) == "."
    assert files.portable_path(mine) is None and files.portable_path(mine, root=tmp_path / "other") is None
    assert files.portable_path(tmp_path / "a" / ".." / "b", root=tmp_path) == "b"  # resolved first


@pytest.fixture
def python_sigint():
    """Python's own SIGINT handler for the test (a job started in the background inherits SIGINT ignored,
    and Python then installs none), the process's own afterwards."""
    import signal

    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_an_interrupt_inside_a_trie_write_is_held_until_the_file_is_whole(
    tmp_path, monkeypatch, python_sigint
):
    # Ctrl-C inside numpy's zip writer used to surface as a ValueError from its cleanup (a traceback,
    # exit status 1); held, it ends the run right after the file is renamed into place.
    import signal

    import numpy as np

    from kg_agents.methods.gcr.trie import tree

    real = np.savez_compressed

    def interrupted_savez(fh, **arrays):
        os.kill(os.getpid(), signal.SIGINT)  # lands while the writer runs
        real(fh, **arrays)

    monkeypatch.setattr(tree.np, "savez_compressed", interrupted_savez)
    trie = tree.KGTrie([[1, 2, 3], [1, 4]], ["a -> r -> b", "a -> s -> c"])
    with pytest.raises(KeyboardInterrupt):
        trie.save(tmp_path / "a.npz")
    monkeypatch.undo()
    assert tree.KGTrie.load(tmp_path / "a.npz").texts == trie.texts and _leftovers(tmp_path) == []
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_an_error_inside_a_held_interrupt_block_restores_ctrl_c(tmp_path, python_sigint):
    import signal

    with pytest.raises(OSError), files.interrupts_deferred():
        raise OSError("disk full")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
