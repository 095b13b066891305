"""Evaluation grids: methods x datasets x options from one TOML or YAML file (``kg-agents eval --grid``).

A grid file::

    methods = ["dualr", "knowledge_navigator"]
    datasets = ["metaqa-1hop", "metaqa-2hop", "metaqa-3hop"]
    split = "validation"      # eval's --split (default: the dataset's)
    seed = 0                  # eval's --seed
    limit = 200               # eval's --limit
    concurrency = 16          # eval's --concurrency (optional)
    [options]                 # eval's --set key=value; a list is an axis: every combination runs
    answer_with = ["gnn"]

also ``model``, ``max_tokens`` and ``match`` (eval's ``--model``, ``--max-tokens``, ``--match``). Each
combination is one ordinary ``kg-agents eval`` run folder, ``OUT/<method>/<dataset>[/<key=value,...>]/``.
A run already complete there (same method, dataset, split, seed and options in its ``run.json``, every
question of the dataset's selection finished) is skipped; any other is run by ``kg-agents eval``, which
resumes a partial one from its ``predictions.jsonl``. Unknown keys, values of the wrong type, unknown
methods and datasets raise :class:`~kg_agents.errors.ConfigError` naming the file and the key.

Example:
    >>> grid = parse_grid({"methods": ["dualr"], "datasets": ["metaqa-1hop"],
    ...                    "options": {"answer_with": ["gnn", "llm"]}}, "g.toml")
    >>> [str(r.folder("runs")) for r in grid.runs]
    ['runs/dualr/metaqa-1hop/answer_with=gnn', 'runs/dualr/metaqa-1hop/answer_with=llm']
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import platform
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kg_agents.errors import ConfigError

__all__ = [
    "GRID_KEYS",
    "Grid",
    "GridRun",
    "hardware",
    "load_grid",
    "parse_grid",
    "run_complete",
    "source_commit",
]

#: The keys a grid file may hold, and the type of each value.
GRID_KEYS: dict[str, type] = {
    "methods": list,
    "datasets": list,
    "split": str,
    "seed": int,
    "limit": int,
    "concurrency": int,
    "model": str,
    "max_tokens": int,
    "match": str,
    "options": dict,
}
_TYPE_NAMES = {list: "a list", str: "a string", int: "an integer", dict: "a table"}
_SPLITS = ("dev", "train", "validation")
_MATCH = ("exact", "contains")
_PLAIN = re.compile(r"[A-Za-z0-9._+-]*")


@dataclasses.dataclass(frozen=True)
class GridRun:
    """One combination of a grid: a ``kg-agents eval`` run."""

    method: str
    dataset: str
    options: tuple[tuple[str, str], ...] = ()
    split: str | None = None
    seed: int = 0
    limit: int | None = None
    concurrency: int | None = None
    model: str | None = None
    max_tokens: int | None = None
    match: str | None = None

    @property
    def settings(self) -> list[str]:
        """The run's ``--set`` values, sorted (as ``run.json`` records them)."""
        return sorted(f"{k}={v}" for k, v in self.options)

    @property
    def effective_split(self) -> str:
        """The split eval uses: the grid's, else ``dev`` for ``webqsp-sample``, else ``validation``."""
        return self.split or ("dev" if self.dataset == "webqsp-sample" else "validation")

    def folder(self, out: str | Path) -> Path:
        """``OUT/<method>/<dataset>[/<key=value,...>]`` (values other than plain words made safe)."""
        from kg_agents.files import safe_name

        path = Path(out) / self.method / self.dataset
        if self.options:
            path /= ",".join(f"{k}={v if _PLAIN.fullmatch(v) else safe_name(v)}" for k, v in self.options)
        return path

    def eval_argv(self, out: str | Path) -> list[str]:
        """The ``kg-agents eval`` arguments of this run, writing into :meth:`folder`."""
        argv = ["eval", "--method", self.method, "--dataset", self.dataset, "--seed", str(self.seed)]
        for flag, value in (
            ("--split", self.split),
            ("--limit", self.limit),
            ("--concurrency", self.concurrency),
            ("--model", self.model),
            ("--max-tokens", self.max_tokens),
            ("--match", self.match),
        ):
            if value is not None:
                argv += [flag, str(value)]
        for setting in self.settings:
            argv += ["--set", setting]
        return [*argv, "--out", str(self.folder(out))]


@dataclasses.dataclass(frozen=True)
class Grid:
    """A grid file and its runs, in the file's order (methods, then datasets, then options)."""

    path: str
    runs: tuple[GridRun, ...]


def _bad(path: str, key: str, what: str) -> ConfigError:
    return ConfigError(f"grid {path}: {key}: {what}")


def _option_value(path: str, key: str, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise _bad(path, f"options.{key}", f"{value!r} is not a string, number or boolean (or a list of them)")


def _names(path: str, key: str, value: Any, valid: Any) -> list[str]:
    if not value or not all(isinstance(v, str) for v in value):
        raise _bad(path, key, "must be a non-empty list of names")
    unknown = [v for v in value if v not in valid]
    if unknown:
        raise _bad(path, key, f"unknown {unknown[0]!r}; valid: {', '.join(sorted(valid))}")
    return list(value)


def parse_grid(data: Any, path: str) -> Grid:
    """The :class:`Grid` of a parsed grid file (``path`` names it in errors)."""
    from kg_agents.core.registry import list_methods
    from kg_agents.eval.datasets import DATASETS

    if not isinstance(data, Mapping):
        raise ConfigError(f"grid {path}: not a table of keys")
    for key, value in data.items():
        if key not in GRID_KEYS:
            raise _bad(path, str(key), f"unknown key; valid keys: {', '.join(GRID_KEYS)}")
        want = GRID_KEYS[key]
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise _bad(path, key, f"{value!r} is not {_TYPE_NAMES[want]}")
    for key in ("methods", "datasets"):
        if key not in data:
            raise _bad(path, key, "missing")
    methods = _names(path, "methods", data["methods"], {m.name for m in list_methods()})
    datasets = _names(path, "datasets", data["datasets"], set(DATASETS))
    if data.get("split") is not None and data["split"] not in _SPLITS:
        raise _bad(path, "split", f"{data['split']!r}; valid: {', '.join(_SPLITS)}")
    if data.get("match") is not None and data["match"] not in _MATCH:
        raise _bad(path, "match", f"{data['match']!r}; valid: {', '.join(_MATCH)}")
    for key in ("limit", "concurrency", "max_tokens"):
        if key in data and data[key] < 1:
            raise _bad(path, key, f"must be >= 1, got {data[key]}")
    axes: list[list[tuple[str, str]]] = []
    for key, value in sorted((data.get("options") or {}).items()):
        values = value if isinstance(value, list) else [value]
        if not values:
            raise _bad(path, f"options.{key}", "an empty list (give at least one value)")
        axes.append([(str(key), _option_value(path, key, v)) for v in values])
    runs = [
        GridRun(
            method=m,
            dataset=d,
            options=tuple(combo),
            split=data.get("split"),
            seed=data.get("seed", 0),
            limit=data.get("limit"),
            concurrency=data.get("concurrency"),
            model=data.get("model"),
            max_tokens=data.get("max_tokens"),
            match=data.get("match"),
        )
        for m in methods
        for d in datasets
        for combo in itertools.product(*axes)
    ]
    return Grid(path, tuple(runs))


def load_grid(path: str | Path) -> Grid:
    """Read a grid file: TOML (``.toml``) or YAML (``.yaml``, ``.yml``).

    Raises:
        ConfigError: no such file, another suffix, a file that does not parse, or a bad key.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"no grid file at {path}")
    text = p.read_text(encoding="utf-8")
    if p.suffix == ".toml":
        import tomllib

        try:
            data: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"grid {path}: not TOML ({exc})") from exc
    elif p.suffix in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"grid {path}: not YAML ({exc})") from exc
    else:
        raise ConfigError(f"grid {path}: a grid file is .toml, .yaml or .yml")
    return parse_grid(data, str(path))


def run_complete(run: GridRun, folder: str | Path) -> bool:
    """Whether ``folder`` holds this run, finished: its ``run.json`` names the same method, dataset,
    split, seed and options, and every question of the selection is finished without error."""
    import json

    from kg_agents.eval.datasets import get_dataset
    from kg_agents.eval.report import RunFolder

    folder = Path(folder)
    if not (folder / "summary.json").is_file() or not (folder / "run.json").is_file():
        return False
    done = RunFolder.read(folder)
    same = {
        "method": run.method,
        "dataset": run.dataset,
        "split": run.effective_split,
        "seed": run.seed,
        "options": run.settings,
    }
    if any(done.info.get(k) != v for k, v in same.items()):
        return False
    expected = {q.id for q in get_dataset(run.dataset, run.effective_split, seed=run.seed, limit=run.limit)}
    try:
        finished = {str(r["id"]) for r in done.records() if not r.get("error")}
    except (ConfigError, json.JSONDecodeError):
        return False
    return expected <= finished and int(done.summary["n"]) == len(expected) and not done.summary.get("errors")


def hardware() -> str:
    """The machine in words: CPU model, the cores this process may use, and a CUDA device if torch
    (already imported) sees one."""
    import sys

    model = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            model = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), "")
    except OSError:
        pass
    model = model or platform.processor() or platform.machine() or "unknown CPU"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    text = f"{model}, {cores} cores"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        text += f", {torch.cuda.get_device_name(0)}"
    return text


def source_commit() -> dict[str, Any] | None:
    """The git commit of the source tree kg_agents is imported from, and whether it has uncommitted
    changes (:func:`kg_agents.eval.provenance.source_commit`); None outside a git checkout (never raises)."""
    from kg_agents.eval.provenance import source_commit as commit_and_dirty

    sha, dirty = commit_and_dirty()
    return None if sha is None else {"commit": sha, "dirty": bool(dirty)}
