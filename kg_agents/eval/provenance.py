"""What a run records of the code and the models it ran with (``run.json``), beside what identifies it.

Two runs of the same command before and after a change of default must not look alike: ``run.json`` holds
the package version and, when the package is imported from a git checkout, the commit (``git rev-parse
HEAD``) and whether the checkout had uncommitted changes to tracked files (``dirty``); the dtype the
embedded model ran in (:func:`kg_agents.llm.local_model.resolve_dtype`; None when the run used no embedded
model); and the LoRA adapters the process loaded on it (:func:`kg_agents.llm.adapters.adapters_used`), their
paths recorded so that they hold on another machine (:func:`kg_agents.files.portable_path`).
Nothing here fails a run: what cannot be found is None.

Example:
    >>> sorted(run_provenance(embedded=False))
    ['adapters', 'commit', 'dirty', 'dtype', 'version']
    >>> run_provenance(embedded=False)["dtype"] is None
    True
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

__all__ = ["PROVENANCE_KEYS", "run_provenance", "source_commit", "uses_embedded_model"]

#: The keys :func:`run_provenance` adds to ``run.json``.
PROVENANCE_KEYS = ("version", "commit", "dirty", "dtype", "adapters")

_GIT_TIMEOUT = 10.0


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(cwd), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def source_commit(package_dir: str | Path | None = None) -> tuple[str | None, bool | None]:
    """``(commit, dirty)`` of the git checkout the package is imported from, or ``(None, None)``.

    The commit counts only when the package's own ``__init__.py`` is tracked there (an installed copy
    inside some other repository's folder, a virtual environment say, has none); ``dirty``: a tracked file
    differs from the commit. Never raises (no git, a timeout, a broken repository: ``(None, None)``).

    Args:
        package_dir: the package folder (default: the imported ``kg_agents``).
    """
    pkg = Path(package_dir) if package_dir is not None else Path(__file__).resolve().parent.parent
    top = _git(pkg, "rev-parse", "--show-toplevel")
    if not top or not top.strip():
        return None, None
    root = Path(top.strip())
    try:
        rel = (pkg.resolve() / "__init__.py").relative_to(root.resolve())
    except ValueError:
        return None, None
    if _git(root, "ls-files", "--error-unmatch", "--", str(rel)) is None:
        return None, None
    head = _git(root, "rev-parse", "--verify", "HEAD")
    if not head or not head.strip():
        return None, None
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return head.strip(), (None if status is None else bool(status.strip()))


def _portable(adapter: dict[str, str], root: str | Path | None) -> dict[str, str]:
    from kg_agents.files import portable_path

    out = {k: v for k, v in adapter.items() if k != "path"}
    where = portable_path(adapter["path"], root) if "path" in adapter else None
    return out if where is None else {**out, "path": where}


def uses_embedded_model(model_used: str | None, adapters: list[dict[str, str]]) -> bool:
    """Whether a run used the embedded model: its chat model is it (with or without an adapter), or the
    process loaded an adapter on it (GCR's path decoder)."""
    from kg_agents.llm.adapters import ADAPTED_PREFIX
    from kg_agents.llm.local_model import DEFAULT_LOCAL_MODEL

    base = ADAPTED_PREFIX.rstrip("+").lower()
    name = (model_used or "").lower()
    return bool(adapters) or name.startswith(base) or name.startswith(DEFAULT_LOCAL_MODEL)


def run_provenance(
    *, model_used: str | None = None, embedded: bool | None = None, root: str | Path | None = None
) -> dict[str, Any]:
    """The code and model record of a run: version, commit, dirty, dtype, adapters (see the module).

    Args:
        model_used: the chat model the graph ran (``run.json``'s ``model_used``).
        embedded: whether the run used the embedded model (default: from ``model_used`` and the adapters
            loaded, :func:`uses_embedded_model`); when not, ``dtype`` is None.
        root: an adapter's ``path`` is recorded so that it travels (:func:`kg_agents.files.portable_path`):
            ``package:<path>`` for a bundled adapter, else relative to ``root`` when below it, else left
            out (its name and digest stand for it).
    """
    from kg_agents import __version__
    from kg_agents.errors import ConfigError
    from kg_agents.llm.adapters import adapters_used
    from kg_agents.llm.local_model import resolve_dtype

    commit, dirty = source_commit()
    adapters = [_portable(a, root) for a in adapters_used()]
    used = embedded if embedded is not None else uses_embedded_model(model_used, adapters)
    dtype: str | None = None
    if used:
        try:
            dtype = resolve_dtype()
        except ConfigError:
            dtype = None
    return {"version": __version__, "commit": commit, "dirty": dirty, "dtype": dtype, "adapters": adapters}
