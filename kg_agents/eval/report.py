"""Reports over many runs: the tables of ``kg-agents report`` (markdown and a chart), by dataset.

A run folder is any folder with ``summary.json`` and ``run.json`` (what ``kg-agents eval`` writes). Its
per-question figures come from ``scores.jsonl`` (:data:`SCORES`, written with every summary: each
question's id, scores, path and answer counts, usage and seconds, not the model's output) or, where a
folder has none, from ``predictions.jsonl``. So a run kept for the record needs only ``summary.json``,
``run.json`` and ``scores.jsonl`` (and ``grid.json`` when a grid ran it).

The page groups the runs by dataset family (MetaQA, PathQuestion, the WebQSP sample, then any other
dataset by name), one table per family and number of questions ``n``: rows method x hops (and the
settings that differ between the table's runs), columns n, Hits@1, F1, LLM calls, tokens, seconds per
question, grounded and faithful ratios. Where two runs of one dataset in a table cover different
questions, both are scored again on the questions they share (:func:`kg_agents.eval.metrics.summarize`
over their per-question records), and the table says so. The output depends only on the run folders:
sorted, one float format per column, so a committed page can be checked for staleness
(``kg-agents report ... --check``).

Example:
    >>> family_of("metaqa-2hop")
    ('MetaQA', '2')
    >>> family_of("pathquestion-pql-3h")
    ('PathQuestion', 'PQL 3')
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.eval.metrics import summarize
from kg_agents.eval.scores import SCORES, score_record, write_scores
from kg_agents.files import atomic_target, numbered_lines

__all__ = [
    "COLUMNS",
    "GRID_RECORD",
    "SCORES",
    "RunFolder",
    "Table",
    "draw_report_chart",
    "family_of",
    "find_runs",
    "render_page",
    "report_tables",
    "score_record",
    "write_scores",
]

#: Written into a run folder by ``kg-agents eval --grid``: the grid file, its output folder, the
#: machine and the source commit (see :mod:`kg_agents.eval.grid`).
GRID_RECORD = "grid.json"
#: run.json fields that tell runs of one method apart in a table (besides its options).
_SETTING_KEYS = ("model", "model_used", "dtype", "split", "seed")
_FAMILIES = ("MetaQA", "PathQuestion", "WebQSP sample")
COLUMNS = ("n", "Hits@1", "F1", "LLM calls", "tokens", "s/question", "grounded", "faithful")


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for n, line in numbered_lines(path):
        try:
            rec = json.loads(line)
            rec["id"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise DataFormatError(str(path), n, f"not a per-question record ({exc})") from exc
        out.append(rec)
    return out


# --------------------------------------------------------------------------- run folders
@dataclasses.dataclass
class RunFolder:
    """One finished run: its folder, ``run.json``, ``summary.json`` and ``grid.json`` (or ``{}``)."""

    path: Path
    info: dict[str, Any]
    summary: dict[str, Any]
    grid: dict[str, Any]
    _records: list[dict[str, Any]] | None = None

    @classmethod
    def read(cls, path: str | Path) -> RunFolder:
        path = Path(path)
        parts: list[dict[str, Any]] = []
        for name in ("run.json", "summary.json", GRID_RECORD):
            file = path / name
            if not file.is_file():
                parts.append({})
                continue
            try:
                data = json.loads(file.read_text(encoding="utf-8"))
            except json.JSONDecodeError as exc:
                raise DataFormatError(str(file), None, f"not JSON ({exc})") from exc
            if not isinstance(data, dict):
                raise DataFormatError(str(file), None, "not a JSON object")
            parts.append(data)
        info, summary, grid = parts
        for key in ("method", "dataset", "n"):
            if key not in summary:
                raise DataFormatError(str(path / "summary.json"), None, f"no {key!r}")
        return cls(path, info, summary, grid)

    @property
    def method(self) -> str:
        return str(self.summary["method"])

    @property
    def dataset(self) -> str:
        return str(self.summary["dataset"])

    def records(self) -> list[dict[str, Any]]:
        """The per-question records the summary was computed from (``scores.jsonl``, else predictions)."""
        if self._records is None:
            scores = self.path / SCORES
            if scores.is_file():
                self._records = _read_jsonl(scores)
            else:
                from kg_agents.eval.runner import PREDICTIONS, read_predictions

                preds = self.path / PREDICTIONS
                if not preds.is_file():
                    raise ConfigError(
                        f"{self.path} has neither {SCORES} nor {PREDICTIONS}: its questions are unknown"
                    )
                self._records = [score_record(r) for r in read_predictions(preds).values()]
        return self._records

    def question_ids(self) -> frozenset[str]:
        return frozenset(str(r["id"]) for r in self.records())

    def settings(self) -> dict[str, str]:
        """What tells this run apart from other runs of its method: options, model, dtype, match..."""
        out = {}
        for item in self.info.get("options") or []:
            key, _, value = str(item).partition("=")
            out[key.strip()] = value.strip()
        for key in _SETTING_KEYS:
            if self.info.get(key) is not None:
                out[key] = str(self.info[key])
        if "pack" in self.info:  # the KG pack the run used, by name
            out["pack"] = str((self.info["pack"] or {}).get("name") or "none")
        out["match"] = str(self.summary.get("match", "exact"))
        return out


def find_runs(dirs: Sequence[str | Path]) -> list[RunFolder]:
    """Every run folder (``summary.json`` with ``run.json`` beside it) at or under ``dirs``, sorted.

    Raises:
        ConfigError: a directory that does not exist, or no run folder under any of them.
    """
    found: dict[Path, None] = {}
    for d in dirs:
        d = Path(d)
        if not d.is_dir():
            raise ConfigError(f"no directory {d}")
        for summary in sorted(d.rglob("summary.json")):
            if (summary.parent / "run.json").is_file():
                found[summary.parent] = None
    if not found:
        raise ConfigError(f"no run folder (summary.json and run.json) under {', '.join(map(str, dirs))}")
    return [RunFolder.read(p) for p in sorted(found)]


# --------------------------------------------------------------------------- tables
_METAQA = re.compile(r"metaqa-(\d+)hop$")
_PATHQUESTION = re.compile(r"pathquestion-(pql?)-(\d+)h(-more)?$")


def family_of(dataset: str) -> tuple[str, str]:
    """The dataset's family (a page section) and its hops label (a table row)."""
    if m := _METAQA.match(dataset):
        return "MetaQA", m.group(1)
    if m := _PATHQUESTION.match(dataset):
        return "PathQuestion", f"{m.group(1).upper()} {m.group(2)}" + (" (more)" if m.group(3) else "")
    if dataset == "webqsp-sample":
        return "WebQSP sample", "-"
    return dataset, "-"


def _family_key(family: str) -> tuple[int, str]:
    return (_FAMILIES.index(family), "") if family in _FAMILIES else (len(_FAMILIES), family)


def _fmt(value: Any, spec: str) -> str:
    return "-" if value is None else format(float(value), spec)


def _row_figures(s: Mapping[str, Any]) -> list[str]:
    inp, outp = s.get("avg_input_tokens"), s.get("avg_output_tokens")
    tokens = None if inp is None and outp is None else float(inp or 0) + float(outp or 0)
    return [
        str(s["n"]),
        _fmt(s.get("hits@1"), ".3f"),
        _fmt(s.get("f1"), ".3f"),
        _fmt(s.get("avg_llm_calls"), ".1f"),
        _fmt(tokens, ".0f"),
        _fmt(s.get("avg_seconds"), ".2f"),
        _fmt(s.get("grounded_answer_ratio"), ".3f"),
        _fmt(s.get("faithful_path_ratio"), ".3f"),
    ]


def _shared_summaries(runs: Sequence[RunFolder]) -> tuple[list[dict[str, Any]], str | None]:
    """The runs' figures on the questions they all cover, and a note when that is fewer than one has."""
    ids = [r.question_ids() for r in runs]
    if len(runs) < 2 or all(i == ids[0] for i in ids):
        return [r.summary for r in runs], None
    shared = frozenset.intersection(*ids)
    dataset = runs[0].dataset
    if not shared:
        return [r.summary for r in runs], f"these runs of {dataset} share no question: each on its own"
    out = []
    for r in runs:
        recs = [rec for rec in r.records() if str(rec["id"]) in shared]
        out.append(summarize(recs, method=r.method, dataset=dataset, match=r.summary.get("match", "exact")))
    sizes = ", ".join(str(len(i)) for i in ids)
    note = f"compared on the {len(shared)} questions of {dataset} these runs share (of {sizes})"
    return out, note


def _settings_text(settings: Mapping[str, str]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(settings.items())) or "-"


@dataclasses.dataclass
class Table:
    """One table of the page: a dataset family at one number of questions ``n``.

    ``rows`` are ``(method, settings that differ, hops label, figures, mark)`` in page order, the figures
    those of :func:`kg_agents.eval.metrics.summarize` (on the shared questions where ``mark`` is set);
    ``common`` holds the settings every row shares; ``notes`` the footnotes the marks refer to.
    """

    family: str
    n: int
    rows: list[tuple[str, str, str, dict[str, Any], str]]
    common: dict[str, str]
    notes: list[str]

    def markdown(self) -> list[str]:
        """The table's lines: the markdown table, the settings its rows share, its notes."""
        show_settings = any(row[1] != "-" for row in self.rows)
        head = ["method", *(["settings"] if show_settings else []), "hops", *COLUMNS]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        for method, settings, hops, figures, mark in self.rows:
            cells = _row_figures(figures)
            cells[0] += mark
            lines.append(
                "| " + " | ".join([method, *([settings] if show_settings else []), hops, *cells]) + " |"
            )
        return [*lines, "", f"All rows: {_settings_text(self.common)}.", *self.notes]


def report_tables(runs: Sequence[RunFolder]) -> list[Table]:
    """The page's tables: one per dataset family and number of questions, families in page order."""
    groups: dict[tuple[str, int], list[RunFolder]] = {}
    for r in runs:
        groups.setdefault((family_of(r.dataset)[0], int(r.summary["n"])), []).append(r)
    tables = []
    for (family, n), members in sorted(groups.items(), key=lambda kv: (_family_key(kv[0][0]), -kv[0][1])):
        settings = [r.settings() for r in members]
        common = {k: v for k, v in settings[0].items() if all(s.get(k) == v for s in settings)}
        varying = [_settings_text({k: v for k, v in s.items() if k not in common}) for s in settings]
        keys = [(r.method, v, r.dataset) for r, v in zip(members, varying, strict=True)]
        for i, r in enumerate(members):  # runs alike in all but their folder: the folder tells them apart
            if keys.count(keys[i]) > 1:
                varying[i] = ", ".join(x for x in (varying[i], f"run {r.path.as_posix()}") if x != "-")
        by_dataset: dict[str, list[int]] = {}
        for i, r in enumerate(members):
            by_dataset.setdefault(r.dataset, []).append(i)
        figures: dict[int, dict[str, Any]] = {}
        notes: list[str] = []
        marks: dict[int, str] = {}
        for dataset in sorted(by_dataset):
            idx = by_dataset[dataset]
            summaries, note = _shared_summaries([members[i] for i in idx])
            for i, summary in zip(idx, summaries, strict=True):
                figures[i] = summary
                if note:
                    marks[i] = "*" * (len(notes) + 1)
            if note:
                notes.append(f"{'*' * (len(notes) + 1)} {note}.")
        labels = [family_of(r.dataset)[1] for r in members]
        order = sorted(
            range(len(members)), key=lambda i: (members[i].method, varying[i], _hops_key(labels[i]))
        )
        rows = [(members[i].method, varying[i], labels[i], figures[i], marks.get(i, "")) for i in order]
        tables.append(Table(family, n, rows, common, notes))
    return tables


def _hops_key(label: str) -> tuple[str, int, str]:
    """Rows of one set together, by hops: ``PQ 2``, ``PQ 3``, ``PQL 2``..."""
    digits = re.search(r"\d+", label)
    return (label[: digits.start()] if digits else label, int(digits.group()) if digits else 0, label)


def _values(runs: Iterable[RunFolder], *keys: str, missing: str = "not recorded") -> str:
    seen = set()
    for r in runs:
        value = next((src[k] for k in keys for src in (r.info, r.grid) if src.get(k) is not None), None)
        seen.add(_commit_text(value) if keys[0] == "commit" else str(value) if value is not None else missing)
    return "; ".join(sorted(seen))


def _commit_text(value: Any) -> str:
    if value is None:
        return "not recorded"
    if isinstance(value, Mapping):  # {"commit": ..., "dirty": ...} or the like
        sha = next((value[k] for k in ("commit", "sha", "hash") if value.get(k)), None)
        text = str(sha)[:12] if sha else "not recorded"
        return text + (" (uncommitted changes)" if value.get("dirty") else "")
    return str(value)[:12] if re.fullmatch(r"[0-9a-f]{13,}", str(value)) else str(value)


def _regenerate(runs: Sequence[RunFolder]) -> str:
    commands = set()
    for r in runs:
        if r.grid.get("grid"):
            commands.add(f"`kg-agents eval --grid {r.grid['grid']} --out {r.grid.get('out', 'DIR')}`")
        else:
            commands.add("`kg-agents eval` by hand (no grid file; see each folder's run.json)")
    return "; ".join(sorted(commands))


def render_page(runs: Sequence[RunFolder], *, command: str, chart: str | None = None) -> str:
    """The results page: a header, then one section per dataset family with its tables.

    ``command`` is the command that writes the page (named in its header); ``chart``, the chart's
    path relative to the page, is linked when given.
    """
    tables = report_tables(runs)
    parts = [
        "# Measured results",
        "",
        "Generated by this command, from the run folders it names:",
        "",
        "```bash",
        command,
        "```",
        "",
        "Do not edit it by hand: add a run folder (its `summary.json`, `run.json` and `scores.jsonl`)",
        "and run the command again. How each figure is measured: [eval.md](eval.md); what was measured",
        "before, and why things changed: [the history](dev/results-history.md). Speed, reliability and",
        "security have pages of their own: [speed.md](speed.md), [reliability.md](reliability.md),",
        "[security.md](security.md).",
        "",
        "Columns: Hits@1 and F1 under the run's matching rule; LLM calls, tokens (input and output) and",
        "seconds per finished question (seconds under the run's concurrency, on a machine shared with",
        "other jobs: upper bounds); grounded: the share of answers that end a returned path that verified;",
        "faithful: the share of returned paths found in the KG (- where none was returned).",
        "",
    ]
    if chart:
        parts += [f"![Hits@1 of every row]({chart})", ""]
    for family in sorted({t.family for t in tables}, key=_family_key):
        members = [r for r in runs if family_of(r.dataset)[0] == family]
        parts += [
            f"## {family}",
            "",
            f"- Hardware: {_values(members, 'hardware')}.",
            f"- kg-agents: {_values(members, 'version')}; commit: {_values(members, 'commit')}.",
            f"- Runs: {_regenerate(members)}.",
            "",
        ]
        for table in tables:
            if table.family == family:
                parts += [f"### n = {table.n}", "", *table.markdown(), ""]
    return "\n".join(parts).rstrip() + "\n"


def draw_report_chart(runs: Sequence[RunFolder], path: str | Path) -> Path:
    """Hits@1 of every row of :func:`report_tables`, one panel per table, saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tables = report_tables(runs)
    fig, axes = plt.subplots(len(tables), 1, figsize=(9, 2.2 + 0.28 * len(runs)), squeeze=False)
    for ax, table in zip(axes[:, 0], tables, strict=True):
        labels = [
            " ".join(x for x in (method, settings, hops) if x != "-")
            for method, settings, hops, _, _ in table.rows
        ]
        values = [float(row[3].get("hits@1") or 0.0) for row in table.rows]
        ax.barh(range(len(values)), values)
        ax.set_yticks(range(len(values)), labels, fontsize="small")
        ax.invert_yaxis()
        ax.set_xlim(0, 1)
        ax.set_title(f"{table.family}, n = {table.n}: Hits@1", fontsize="medium")
    fig.tight_layout()
    path = Path(path)
    try:
        with atomic_target(path, suffix=path.suffix or ".png") as tmp:
            fig.savefig(tmp, dpi=100, metadata={"Software": None})
    finally:
        plt.close(fig)
    return path
