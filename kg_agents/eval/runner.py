"""The evaluation runner: questions in; ``predictions.jsonl``, ``summary.json``, ``report.md``, a chart out.

- Questions run concurrently through ``abatch_as_completed`` (at most ``concurrency`` at once); each
  finished question is appended to ``predictions.jsonl`` at once (one line, flushed), so an interrupted
  run loses nothing and a rerun with the same ``out_dir`` skips the questions already there. A last
  line that a crash cut short (no newline) is dropped before the rerun appends, so that question runs
  again; ``run.json``, ``summary.json``, ``report.md`` and the chart are written whole or not at all
  (:mod:`kg_agents.files`).
- A question that raised is recorded with its error, counts as wrong, and the run goes on; it is tried
  again on a rerun. So is a question whose graph ended because a KG endpoint failed: the graphs
  record the :class:`~kg_agents.errors.EndpointError` in their trace and end instead of raising it
  (:func:`endpoint_failure`); after ``max_endpoint_failures`` such questions in a row the run
  stops with the ``EndpointError``. An error that a graph lets through and that concerns the whole run (the
  model server or KG endpoint is unreachable: :class:`~kg_agents.errors.EndpointError`,
  :class:`~kg_agents.errors.ModelError`, a connection error) stops the run instead, so that it can be
  resumed once the server is back.
- Every returned path is checked again here against the question's KG (``faithful_path_ratio``), and
  every answer against the paths: an answer is grounded when it is the KG node (its id or label) that
  ends a returned path that verified (``grounded_answer_ratio``).
- Answers are scored under one matching rule, ``exact`` by default or ``contains`` for comparing with
  papers' scripts (:mod:`kg_agents.eval.metrics`); the summary and report name the rule.
- ``summary.json`` is computed from ``predictions.jsonl`` only (:func:`kg_agents.eval.metrics.summarize`).

Example:
    >>> import asyncio
    >>> from kg_agents import create_graph
    >>> from kg_agents.eval.datasets import get_dataset
    >>> qs = get_dataset("metaqa-1hop", "validation", limit=5)                      # doctest: +SKIP
    >>> asyncio.run(run_eval(qs, "runs/x", method="graph_rag", dataset="metaqa-1hop",  # doctest: +SKIP
    ...     build_graph=lambda kg: create_graph("graph_rag", kg), kg_for=qs.kg_for))
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kg_agents.core.records import error_text
from kg_agents.errors import ConfigError, DataFormatError, EndpointError, KGAgentsError, ModelError
from kg_agents.eval.metrics import METRIC_KEYS, SUMMARY_KEYS, MatchRule, score_aliased, summarize
from kg_agents.files import atomic_target, atomic_write
from kg_agents.kg.base import Path as KGPath
from kg_agents.kg.base import verify_path

__all__ = [
    "CHART",
    "CHART_KEYS",
    "PREDICTIONS",
    "REPORT",
    "RUN_INFO",
    "SUMMARY",
    "TABLE_KEYS",
    "check_run_info",
    "compare_runs",
    "draw_chart",
    "endpoint_failure",
    "gold_sets",
    "grounded_count",
    "is_run_level_error",
    "load_questions_file",
    "load_summary",
    "markdown_table",
    "question_kind",
    "read_predictions",
    "render_report",
    "repair_predictions",
    "run_eval",
    "supported_count",
    "write_summary",
]

PREDICTIONS = "predictions.jsonl"
SUMMARY = "summary.json"
REPORT = "report.md"
CHART = "metrics.png"
RUN_INFO = "run.json"
_RUN_KEYS = ("method", "dataset", "split", "seed", "model", "options", "kg")
#: Also written to ``run.json``: the chat model the graph really ran (``--model local`` is the embedded
#: model with the specialist adapter on MetaQA) and the KG pack it ran with (name, fingerprint and a
#: folder that travels, or null: ``kg_agents.packs.pack_record``), each compared on a rerun when the
#: earlier run recorded it (older runs did not); and the dtype the embedded model ran in (compared the same
#: way), the package version, git commit and the adapters loaded, for the record only
#: (:mod:`kg_agents.eval.provenance`).
_RUN_EXTRA_KEYS = ("model_used", "pack", "dtype")


def gold_sets(q: Any) -> list[list[str]]:
    """The gold answers of ``q`` as alias lists.

    PathQuestion questions (``meta["answer"]`` set) list one answer and its aliases, so their
    ``answers`` form one alias list. Questions that give each answer's label (``meta["answer_labels"]``,
    one per answer, as synthesised questions do) accept an answer's id or its label. Otherwise every
    answer is its own gold answer.
    """
    meta = getattr(q, "meta", None) or {}
    if "answer" in meta:
        return [list(q.answers)]
    labels = meta.get("answer_labels")
    if isinstance(labels, list) and len(labels) == len(q.answers):
        pairs = zip(q.answers, (str(x) for x in labels), strict=True)
        return [[a, label] if label != a else [a] for a, label in pairs]
    return [[a] for a in q.answers]


def load_questions_file(
    path: str | Path, kg: Any = None, *, split: str = "dev", seed: int = 0, limit: int | None = None
) -> Any:
    """A :class:`~kg_agents.eval.datasets.Dataset` from a MetaQA-format or JSONL questions file.

    The format is chosen by the first non-blank character (``{``: JSONL, see
    :func:`~kg_agents.eval.datasets.load_jsonl_questions`; else MetaQA lines
    ``question with [topic]<TAB>a1|a2``). ``kg`` is the KG spec the questions are asked over
    (MetaQA format: default ``"metaqa"``).
    """
    from kg_agents.eval.datasets import load_jsonl_questions, load_metaqa_file, read_lines

    first = next((ln.lstrip() for ln in read_lines(path) if ln.strip()), "")
    if first.startswith("{"):
        if kg is None:
            raise ConfigError("JSONL questions need --kg SPEC (the KG they are asked over)")
        return load_jsonl_questions(path, kg=kg, split=split, seed=seed, limit=limit)
    return load_metaqa_file(path, kg=kg or "metaqa", split=split, seed=seed, limit=limit)


def is_run_level_error(exc: BaseException) -> bool:
    """True for errors that concern the whole run (unreachable server/endpoint), not one question."""
    if isinstance(exc, EndpointError | ModelError | ConnectionError):
        return True
    names = {c.__name__ for c in type(exc).__mro__}
    return bool(names & {"APIConnectionError", "ConnectError", "ConnectTimeout"})


def read_predictions(path: str | Path) -> dict[str, dict[str, Any]]:
    """Records of ``predictions.jsonl`` by question id (a later line replaces an earlier one).

    A last line without its newline is a write that a crash cut short: it is not read (the runner
    drops it before it appends; :func:`repair_predictions`).

    Raises:
        DataFormatError: a complete line that is not a JSON record with an ``id``.
    """
    path = Path(path)
    out: dict[str, dict[str, Any]] = {}
    if not path.is_file():
        return out
    with open(path, encoding="utf-8", errors="replace") as fh:
        for n, line in enumerate(fh, 1):
            if not line.endswith("\n") or not line.strip():
                continue
            try:
                rec = json.loads(line)
                out[rec["id"]] = rec
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise DataFormatError(str(path), n, f"not a prediction record ({exc})") from exc
    return out


def repair_predictions(path: str | Path) -> int:
    """Drop a last line cut short by an interrupted write (no trailing newline); return the bytes dropped.

    One ``truncate`` call, so a crash during the repair leaves the file as it was or repaired.
    """
    path = Path(path)
    if not path.is_file():
        return 0
    size = path.stat().st_size
    with open(path, "rb") as fh:
        end = size
        while end > 0:  # find the last newline, reading backwards in blocks
            start = max(0, end - 65536)
            fh.seek(start)
            block = fh.read(end - start)
            i = block.rfind(b"\n")
            if i >= 0:
                end = start + i + 1
                break
            end = start
    if end == size:
        return 0
    os.truncate(path, end)
    return size - end


def check_run_info(out_dir: Path, info: dict[str, Any]) -> None:
    """Write ``run.json``, or check that an existing one describes the same run."""
    from kg_agents.eval.provenance import run_provenance

    provenance = run_provenance(model_used=info.get("model_used"), root=Path.cwd())
    info = {**info, "dtype": provenance["dtype"]}
    path = out_dir / RUN_INFO
    if path.is_file():
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
            keys = (*_RUN_KEYS, *(k for k in _RUN_EXTRA_KEYS if k in saved and k in info))
            old = {k: saved.get(k) for k in keys}
        except (json.JSONDecodeError, AttributeError, TypeError) as exc:
            raise DataFormatError(
                str(path), None, f"not a run description ({exc}); remove it, or use another --out directory"
            ) from exc
        diff = {k: (old[k], info.get(k)) for k in keys if old[k] != info.get(k)}
        if diff:
            raise ConfigError(f"{out_dir} holds another run (differs in {diff}); use another --out directory")
    else:
        record = {k: info.get(k) for k in _RUN_KEYS} | {k: info[k] for k in _RUN_EXTRA_KEYS if k in info}
        atomic_write(path, json.dumps({**provenance, **record}, indent=2) + "\n")


def grounded_count(kg: Any, answers: Sequence[str], paths: Sequence[KGPath]) -> int:
    """How many ``answers`` are the node (id or label) that ends one of ``paths`` (verified ones)."""
    ends = {p.end for p in paths if p.hops}
    names = set(ends) | {kg.label(e) for e in ends}
    return sum(1 for a in answers if a in names)


def question_kind(q: Any) -> str | None:
    """The kind of ``q`` (``chain``, ``conjunction``, ``constraint``): ``meta["kind"]``, else its ``qtype``
    when that is a kind (synthesised questions), else None (MetaQA's qtypes are not kinds)."""
    from kg_agents.synth.questions import QUESTION_KINDS

    meta = getattr(q, "meta", None) or {}
    for kind in (meta.get("kind"), getattr(q, "qtype", None)):
        if kind in QUESTION_KINDS:
            return str(kind)
    return None


def supported_count(kg: Any, answers: Sequence[str], topics: Sequence[str], paths: Sequence[KGPath]) -> int:
    """How many ``answers`` have, from every topic entity, one of ``paths`` (verified ones) that starts at
    the topic and ends at the answer (ids or labels)."""

    def names(e: str | None) -> set[str]:
        return set() if e is None else {e, kg.label(e)}

    ends = [(names(p.start), names(p.end)) for p in paths if p.hops]
    return sum(1 for a in answers if topics and all(any(t in s and a in e for s, e in ends) for t in topics))


def _record(
    q: Any,
    out: dict[str, Any] | BaseException,
    seconds: float | None,
    kg: Any,
    match: MatchRule = "exact",
) -> dict[str, Any]:
    rec: dict[str, Any] = {
        "id": q.id,
        "question": q.question,
        "gold": list(q.answers),
        "topic_entities": getattr(q, "topic_entities", None),
        "qtype": getattr(q, "qtype", None),
        "kind": question_kind(q),
    }
    if isinstance(out, BaseException):
        rec.update(
            predictions=[],
            paths=[],
            paths_total=0,
            paths_faithful=0,
            answers_total=0,
            answers_grounded=0,
            scores={k: 0.0 for k in METRIC_KEYS},
            usage={},
            seconds=None,
            graph_errors=[],
            error=f"{type(out).__name__}: {out}",
        )
        return rec
    answers = [str(a) for a in out.get("answers") or []]
    paths = [p for p in out.get("paths") or [] if isinstance(p, KGPath)]
    error = endpoint_failure(out)
    supported = None
    try:
        verified = [p for p in paths if verify_path(kg, p)]
        grounded = grounded_count(kg, answers, verified)
        if rec["kind"] == "conjunction":
            supported = supported_count(kg, answers, list(q.topic_entities or []), verified)
    except KGAgentsError as exc:  # the KG failed while the paths were checked again
        verified, grounded, supported = [], 0, 0 if rec["kind"] == "conjunction" else None
        error = error or f"{type(exc).__name__}: {exc} (checking the returned paths)"
    rec.update(
        predictions=answers,
        paths=[p.to_text() for p in paths],
        paths_total=len(paths),
        paths_faithful=len(verified),
        answers_total=len(answers),
        answers_grounded=grounded,
        **({"answers_supported": supported} if supported is not None else {}),
        scores=score_aliased(answers, gold_sets(q), match),
        usage=dict(out.get("usage") or {}),
        seconds=seconds,
        graph_errors=list(out.get("errors") or []),
        error=error,
    )
    if error:
        rec["scores"] = {k: 0.0 for k in METRIC_KEYS}
    return rec


def _endpoint_record(res: Any) -> dict[str, Any] | None:
    out = res[0] if isinstance(res, tuple) else res
    for rec in (out.get("errors") if isinstance(out, dict) else None) or []:
        if isinstance(rec, dict) and rec.get("endpoint"):
            return rec
    return None


def endpoint_failure(out: dict[str, Any]) -> str | None:
    """The error of a graph run that ended because a KG endpoint failed, or None.

    Graphs record such a failure as an error record with its ``endpoint`` (see
    :func:`kg_agents.core.records.error_update`) and end; the runner counts the question as an error,
    not as a wrong answer, so that a rerun tries it again.
    """
    rec = _endpoint_record(out)
    return error_text(rec) if rec else None


async def run_eval(
    questions: Sequence[Any],
    out_dir: str | Path,
    *,
    method: str,
    dataset: str,
    build_graph: Callable[[Any], Any],
    kg_for: Callable[[Any], Any],
    concurrency: int = 1,
    context: Any = None,
    run_info: dict[str, Any] | None = None,
    progress: bool = True,
    max_endpoint_failures: int = 5,
    match: MatchRule = "exact",
) -> dict[str, Any]:
    """Evaluate a reasoning graph on ``questions``; write the run files into ``out_dir``.

    Args:
        questions: :class:`~kg_agents.eval.datasets.Question` s (or objects with ``id``, ``question``,
            ``answers``, ``topic_entities``, and optionally ``kg``, ``qtype``, ``meta``).
        out_dir: the run directory (created; an existing run there is resumed).
        method: the method name (for the summary).
        dataset: the dataset name (for the summary).
        build_graph: ``kg -> compiled graph``; called once per distinct KG.
        kg_for: ``question -> KG`` (e.g. :meth:`Dataset.kg_for`); a question with its own graph
            (``question.kg`` set) gets its own compiled graph.
        concurrency: how many questions run at once. Sync graph nodes run in the event loop's default
            executor; give the loop one with at least ``concurrency`` threads (``kg-agents eval`` does) so
            that many are really in flight and the local model can batch their calls.
        context: the graphs' per-run context (``ainvoke(..., context=...)``), or None.
        run_info: what identifies the run (method, dataset, split, seed, model, options, kg; and
            ``model_used``, ``pack`` where known); a rerun in the same directory must match it.
        progress: show a progress bar on stderr.
        max_endpoint_failures: stop the run (raising the ``EndpointError``) once this many questions
            in a row ended because a KG endpoint failed: the endpoint is down, not one question's
            queries; each such question is recorded as an error, and a rerun resumes.
        match: the matching rule of the scores, ``exact`` (default) or ``contains``.

    Returns:
        The summary (also written to ``summary.json``).

    Raises:
        ConfigError: ``out_dir`` holds a different run, or ``concurrency`` < 1.
        EndpointError, ModelError: the model server or KG endpoint failed for the whole run.
    """
    from langchain_core.runnables import RunnableLambda
    from tqdm.auto import tqdm

    if concurrency < 1:
        raise ConfigError(f"concurrency must be >= 1, got {concurrency}")
    if max_endpoint_failures < 1:
        raise ConfigError(f"max_endpoint_failures must be >= 1, got {max_endpoint_failures}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    check_run_info(out, {"method": method, "dataset": dataset, **(run_info or {})})
    pred_path = out / PREDICTIONS
    repair_predictions(pred_path)
    done = {i for i, r in read_predictions(pred_path).items() if not r.get("error")}
    todo = [q for q in questions if q.id not in done]
    graphs: dict[str, tuple[Any, Any]] = {}

    def graph_for(q: Any) -> tuple[Any, Any]:
        key = q.id if getattr(q, "kg", None) is not None else "\0shared"
        if key not in graphs:
            qkg = kg_for(q)
            graphs[key] = (build_graph(qkg), qkg)
        return graphs[key]

    async def run_one(q: Any) -> tuple[dict[str, Any], float]:
        graph, _ = graph_for(q)
        t0 = time.perf_counter()
        kwargs = {"context": context} if context is not None else {}
        result = await graph.ainvoke({"question": q.question, "topic_entities": q.topic_entities}, **kwargs)
        return result, time.perf_counter() - t0

    runner = RunnableLambda(run_one, name="eval_question")
    failed_in_a_row = 0
    bar = tqdm(
        total=len(questions),
        initial=len(questions) - len(todo),
        desc=f"{method} on {dataset}",
        unit="q",
        disable=not progress,
        file=sys.stderr,
    )
    try:
        with open(pred_path, "a", encoding="utf-8") as fh:
            async for i, res in runner.abatch_as_completed(
                todo, {"max_concurrency": concurrency}, return_exceptions=True
            ):
                q = todo[i]
                if isinstance(res, BaseException):
                    if is_run_level_error(res):
                        raise res
                    rec = _record(q, res, None, None, match)
                else:
                    result, seconds = res
                    rec = _record(q, result, seconds, graph_for(q)[1], match)
                    if q.id in graphs:  # a per-question graph is used once
                        del graphs[q.id]
                fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
                fh.flush()
                bar.update(1)
                failure = _endpoint_record(res) if not isinstance(res, BaseException) else None
                failed_in_a_row = failed_in_a_row + 1 if failure else 0
                if failure and failed_in_a_row >= max_endpoint_failures:
                    raise EndpointError(
                        str(failure["endpoint"]),
                        f"{failed_in_a_row} questions in a row failed on it; last: {error_text(failure)}",
                    )
    except asyncio.CancelledError:
        # Ctrl-C: the questions not started yet stay un-awaited coroutines inside abatch_as_completed;
        # Python would warn about each when it collects them.
        warnings.filterwarnings("ignore", "coroutine .* was never awaited", RuntimeWarning)
        raise
    finally:
        bar.close()
    return write_summary(out, questions, method=method, dataset=dataset, match=match)


def write_summary(
    out_dir: str | Path,
    questions: Sequence[Any],
    *,
    method: str,
    dataset: str,
    match: MatchRule = "exact",
) -> dict[str, Any]:
    """Compute ``summary.json`` from ``predictions.jsonl`` (for ``questions``); write it, report and chart.

    Every finished question is scored again under ``match``, so a run can be re-scored under the other
    rule without running it again.
    """
    out = Path(out_dir)
    preds = read_predictions(out / PREDICTIONS)
    records = []
    for q in questions:
        if q.id in preds:
            rec = dict(preds[q.id])
            rec["kind"] = question_kind(q)
            if not rec.get("error"):  # scored again, so the summary always follows metrics.py
                rec["scores"] = score_aliased(rec.get("predictions") or [], gold_sets(q), match)
            records.append(rec)
    summary = summarize(records, method=method, dataset=dataset, match=match)
    atomic_write(out / SUMMARY, json.dumps(summary, indent=2) + "\n")
    from kg_agents.eval.scores import write_scores  # the per-question figures a report compares on

    write_scores(out, records)
    info = json.loads((out / RUN_INFO).read_text(encoding="utf-8")) if (out / RUN_INFO).is_file() else {}
    atomic_write(out / REPORT, render_report(summary, records, info))
    draw_chart([summary], out / CHART, title=f"{method} on {dataset} (n={summary['n']})")
    return summary


# --------------------------------------------------------------------------- reports
TABLE_KEYS = SUMMARY_KEYS[2:]  # every summary figure (all but method and dataset)


def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def markdown_table(summaries: Sequence[dict[str, Any]]) -> str:
    """One markdown table row per run summary."""
    head = ["method", "dataset", *TABLE_KEYS]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for s in summaries:
        lines.append("| " + " | ".join(_fmt(s.get(k)) for k in head) + " |")
    return "\n".join(lines)


def render_report(summary: dict[str, Any], records: Sequence[dict[str, Any]], info: dict[str, Any]) -> str:
    """``report.md``: the run's settings, its metrics, a per-question-type breakdown and the errors."""
    parts = [
        f"# {summary['method']} on {summary['dataset']}",
        "",
        "Settings: " + ", ".join(f"{k}={info[k]!r}" for k in _RUN_KEYS if k in info),
        "",
        markdown_table([summary]),
        "",
        f"Answers are matched under the `{summary.get('match', 'exact')}` rule after one normalisation "
        "(kg_agents.eval.metrics.normalize_answer); faithful_path_ratio re-checks every returned path "
        "against the KG, and grounded_answer_ratio is the share of answers that end a verified path.",
        "",
    ]
    by_type: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("qtype"):
            by_type.setdefault(r["qtype"], []).append(r)
    if by_type:
        parts += ["## By question type", "", "| qtype | n | hits@1 | f1 |", "|---|---|---|---|"]
        for t, rs in sorted(by_type.items()):
            h = sum(r["scores"]["hits@1"] for r in rs) / len(rs)
            f = sum(r["scores"]["f1"] for r in rs) / len(rs)
            parts.append(f"| {t} | {len(rs)} | {h:.3f} | {f:.3f} |")
        parts.append("")
    kinds = summary.get("per_kind") or {}
    if kinds:
        parts += [
            "## By question kind",
            "",
            "supported_answer_ratio: the share of a conjunction's returned answers with a verified returned "
            "path from every topic entity.",
            "",
            "| kind | n | hits@1 | f1 | supported_answer_ratio |",
            "|---|---|---|---|---|",
        ]
        for kind, fig in kinds.items():
            cells = [kind, fig["n"], fig["hits@1"], fig["f1"], fig.get("supported_answer_ratio")]
            parts.append("| " + " | ".join(_fmt(c) for c in cells) + " |")
        parts.append("")
    errs = [r for r in records if r.get("error")]
    if errs:
        parts += ["## Questions that raised", ""]
        parts += [f"- `{r['id']}`: {r['error']}" for r in errs[:20]]
        if len(errs) > 20:
            parts.append(f"- ... and {len(errs) - 20} more")
        parts.append("")
    return "\n".join(parts)


CHART_KEYS = ("hits@1", "hit", "f1", "precision", "recall", "faithful_path_ratio", "grounded_answer_ratio")


def draw_chart(summaries: Sequence[dict[str, Any]], path: str | Path, *, title: str = "") -> Path:
    """A grouped bar chart of the quality metrics of one or more runs, saved as PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(CHART_KEYS) * max(1, len(summaries)) / 2), 4))
    width = 0.8 / max(1, len(summaries))
    for j, s in enumerate(summaries):
        xs = [i + j * width for i in range(len(CHART_KEYS))]
        ys = [s.get(k) or 0.0 for k in CHART_KEYS]
        ax.bar(xs, ys, width, label=f"{s.get('method')} / {s.get('dataset')}")
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(CHART_KEYS))], CHART_KEYS)
    ax.set_ylim(0, 1)
    ax.set_ylabel("score")
    if title:
        ax.set_title(title)
    ax.legend(fontsize="small")
    fig.tight_layout()
    path = Path(path)
    try:
        with atomic_target(path, suffix=path.suffix or ".png") as tmp:
            fig.savefig(tmp, dpi=100)
    finally:
        plt.close(fig)
    return path


def load_summary(run_dir: str | Path) -> dict[str, Any]:
    """``summary.json`` of a run directory; ``ConfigError`` when there is none."""
    path = Path(run_dir) / SUMMARY
    if not path.is_file():
        raise ConfigError(f"no {SUMMARY} in {run_dir} (not a finished `kg-agents eval` run)")
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def compare_runs(run_dirs: Sequence[str | Path], chart: str | Path) -> tuple[str, Path]:
    """A markdown table over several runs and one chart; returns ``(table, chart path)``."""
    summaries = [load_summary(d) for d in run_dirs]
    return markdown_table(summaries), draw_chart(summaries, chart, title="comparison")
