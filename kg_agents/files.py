"""Where kg-agents keeps its caches, and writing files so that a crash never leaves half of one.

Every cache (converted model, entity index, KG-Tries, encodings) lives under :func:`cache_root`
(``$KG_AGENTS_CACHE``, else ``~/.cache/kg_agents``). Every file a run writes for later reads goes
through :func:`atomic_write` or :func:`atomic_target`: written to a temporary file in the same
folder, flushed, then renamed into place, so a reader sees the old file or the new one, never a part.
:func:`numbered_lines` reads such a file back a line at a time (a JSON-lines file's records).

Example:
    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "x.json"
    >>> atomic_write(target, '{"ok": true}')
    >>> target.read_text()
    '{"ok": true}'
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "PACKAGE_PREFIX",
    "PACKAGE_ROOT",
    "atomic_directory",
    "atomic_target",
    "atomic_write",
    "cache_root",
    "interrupts_deferred",
    "numbered_lines",
    "portable_path",
    "remove_temporaries",
    "safe_name",
]

#: The installed ``kg_agents`` package's folder, and the prefix that names a path inside it wherever it is
#: installed (a pack's component paths, a run's record of a bundled pack or adapter).
PACKAGE_ROOT = Path(__file__).resolve().parent
PACKAGE_PREFIX = "package:"


def numbered_lines(path: str | os.PathLike[str]) -> Iterator[tuple[int, str]]:
    """The lines of the UTF-8 text file at ``path`` that are not blank, as read, each with its number
    (from 1), so that an error can name the line.

    Example:
        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "x.jsonl"
        >>> _ = target.write_text('{"id": 1}\\n\\n{"id": 2}\\n')
        >>> list(numbered_lines(target))
        [(1, '{"id": 1}\\n'), (3, '{"id": 2}\\n')]
    """
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                yield n, line


def portable_path(path: str | os.PathLike[str], root: str | os.PathLike[str] | None = None) -> str | None:
    """``path`` as a record that travels to another machine: ``package:<path>`` inside the installed
    ``kg_agents`` package (:data:`PACKAGE_ROOT`), else relative to ``root`` (POSIX separators) when it
    lies below it, else None (no path that would mean the same there).

    Example:
        >>> portable_path(PACKAGE_ROOT / "packs" / "bundled" / "metaqa")
        'package:packs/bundled/metaqa'
        >>> portable_path("/data/packs/mine", root="/data"), portable_path("/data/packs/mine")
        ('packs/mine', None)
    """
    full = Path(path).expanduser().resolve()
    for base, prefix in ((PACKAGE_ROOT, PACKAGE_PREFIX), (root, "")):
        if base is None:
            continue
        anchor = Path(base).expanduser().resolve()
        if full.is_relative_to(anchor):
            return prefix + full.relative_to(anchor).as_posix()
    return None


def cache_root(*parts: str) -> Path:
    """The kg-agents cache folder (``$KG_AGENTS_CACHE`` or ``~/.cache/kg_agents``), joined with ``parts``.

    Example:
        >>> cache_root("index").name
        'index'
    """
    base = os.environ.get("KG_AGENTS_CACHE")
    root = Path(base).expanduser() if base else Path.home() / ".cache" / "kg_agents"
    return root.joinpath(*parts)


def safe_name(text: str) -> str:
    """``text`` as a file-name part: runs of other characters than letters, digits, ``.``, ``_`` and
    ``-`` become ``_``.

    Example:
        >>> safe_name("http://127.0.0.1:7878/query")
        'http_127.0.0.1_7878_query'
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "kg"


@contextlib.contextmanager
def atomic_target(path: str | os.PathLike[str], *, suffix: str = ".tmp") -> Iterator[Path]:
    """Yield a temporary path beside ``path``; when the block ends without error, rename it to ``path``.

    For writers that want a file name (``np.save``, ``torch.save``, ``faiss.write_index``). ``suffix``
    is the temporary file's ending (``np.save`` appends ``.npy`` unless the name ends with it). On an
    error the temporary file is removed and ``path`` is left as it was.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = ""
    try:  # created inside the try, so an interrupt right after creation still removes it
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=suffix)
        os.close(fd)
        yield Path(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold Ctrl-C (SIGINT) while the block runs; raise ``KeyboardInterrupt`` once it has ended.

    For short writes through libraries whose cleanup fails when an interrupt lands inside them
    (``np.savez_compressed``: the half-open member of its zip file makes ``close`` raise ``ValueError``
    over the ``KeyboardInterrupt``, and again when the file is collected). Outside the main thread, or
    while SIGINT has another handler than Python's own, the block runs as it is.

    Example:
        With Python's own SIGINT handler, as in a terminal (a job started in the background ignores SIGINT):

        >>> import os, signal
        >>> previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        >>> done = []
        >>> try:
        ...     with interrupts_deferred():
        ...         os.kill(os.getpid(), signal.SIGINT)
        ...         done.append("the block ran to its end")
        ... except KeyboardInterrupt:
        ...     done.append("then the interrupt")
        >>> done
        ['the block ran to its end', 'then the interrupt']
        >>> _ = signal.signal(signal.SIGINT, previous)
    """
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    held: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


def atomic_write(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file and a rename."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_target(path) as tmp:
        tmp.write_bytes(raw)


@contextlib.contextmanager
def atomic_directory(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield an empty temporary folder beside ``path``; when the block ends without error, it becomes
    ``path`` (replacing what was there).

    For writers of several files that belong together (a model adapter and its description). The swap is
    two renames, the old folder aside and the new one in place, then the old one is removed: a reader
    sees the old folder, the new one, or (after a crash between the two renames) none, never a mix of
    the two or a half-written file. On an error the temporary folder is removed and ``path`` is left as
    it was.

    Example:
        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "adapter"
        >>> with atomic_directory(target) as tmp:
        ...     _ = (tmp / "weights.bin").write_bytes(b"new")
        >>> sorted(p.name for p in target.parent.iterdir()), (target / "weights.bin").read_bytes()
        (['adapter'], b'new')
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    made = ""
    try:  # created inside the try, so an interrupt right after creation still removes it
        made = tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        tmp = Path(made)
        yield tmp
        for f in tmp.rglob("*"):
            if f.is_file():
                with open(f, "rb") as fh:
                    os.fsync(fh.fileno())
        old = tmp.with_name(tmp.name.removesuffix(".tmp") + ".old")
        if os.path.lexists(path):
            os.replace(path, old)
        os.replace(tmp, path)
    except BaseException:
        if made:
            shutil.rmtree(made, ignore_errors=True)
        raise
    if old.is_dir():
        shutil.rmtree(old, ignore_errors=True)
    elif os.path.lexists(old):
        old.unlink()


def remove_temporaries(directory: str | os.PathLike[str], pattern: str = "*") -> int:
    """Remove the temporary files that :func:`atomic_target` left in ``directory`` for targets whose
    names match ``pattern`` (a glob) when a process was killed while writing them; return how many.

    Call it only where no other process is writing the same targets at the same time.

    Example:
        >>> import tempfile, pathlib
        >>> d = pathlib.Path(tempfile.mkdtemp())
        >>> _ = (d / ".last.pt.k2j4x9_a.pt").write_bytes(b"half")
        >>> _ = (d / "last.pt").write_bytes(b"whole")
        >>> remove_temporaries(d, "last.pt"), sorted(p.name for p in d.iterdir())
        (1, ['last.pt'])
    """
    n = 0
    for tmp in Path(directory).glob(f".{pattern}.*"):
        if tmp.is_file():
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
                n += 1
    return n
