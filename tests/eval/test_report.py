"""``kg_agents.eval.report`` and ``kg-agents report``: tables by dataset, shared questions, the page."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

import pytest

from kg_agents.cli import commands as cli
from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.eval.metrics import score_answers, summarize
from kg_agents.eval.report import SCORES, family_of, find_runs, render_page, report_tables, score_record

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "results.md"


def _record(qid: str, hit: bool, *, calls: int = 1, seconds: float = 0.5) -> dict:
    scores = score_answers(["x"], ["x"] if hit else ["y"])
    return {
        "id": qid,
        "error": None,
        "scores": scores,
        "paths_total": 1,
        "paths_faithful": 1,
        "answers_total": 1,
        "answers_grounded": 1 if hit else 0,
        "usage": {"llm_calls": calls, "input_tokens": 100, "output_tokens": 5, "kg_calls": 2},
        "seconds": seconds,
        "predictions": ["x"],
        "question": f"question {qid}",
    }


def make_run(
    folder: Path,
    method: str,
    dataset: str,
    hits: dict[str, bool],
    *,
    options: tuple[str, ...] = (),
    scores_file: bool = True,
    **info: object,
) -> Path:
    """A finished run folder, as ``kg-agents eval`` writes it (with or without ``scores.jsonl``)."""
    folder.mkdir(parents=True)
    records = [_record(q, h) for q, h in hits.items()]
    summary = summarize(records, method=method, dataset=dataset)
    run = {"method": method, "dataset": dataset, "split": "validation", "seed": 0, "model": None}
    run |= {"options": sorted(options), "kg": "x", "version": "0.1.0", **info}
    (folder / "run.json").write_text(json.dumps(run))
    (folder / "summary.json").write_text(json.dumps(summary))
    if scores_file:
        (folder / SCORES).write_text("".join(json.dumps(score_record(r)) + "\n" for r in records))
    else:
        (folder / "predictions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return folder


def test_family_and_hops_of_each_dataset():
    assert family_of("metaqa-3hop") == ("MetaQA", "3")
    assert family_of("pathquestion-pq-2h") == ("PathQuestion", "PQ 2")
    assert family_of("pathquestion-pql-3h-more") == ("PathQuestion", "PQL 3 (more)")
    assert family_of("webqsp-sample") == ("WebQSP sample", "-")
    assert family_of("my_questions.jsonl") == ("my_questions.jsonl", "-")


def test_runs_of_one_dataset_with_other_questions_are_compared_on_the_shared_ones(tmp_path):
    # a: q1..q4, all right; b: q3..q6, right on q3 only. Shared: q3, q4.
    a = make_run(tmp_path / "a", "m1", "metaqa-1hop", {f"q{i}": True for i in range(1, 5)})
    make_run(tmp_path / "b", "m2", "metaqa-1hop", {"q3": True, "q4": False, "q5": False, "q6": True})
    [table] = report_tables(find_runs([tmp_path]))
    assert table.family == "MetaQA" and table.n == 4
    rows = {row[0]: row for row in table.rows}
    assert rows["m1"][3]["n"] == 2 and rows["m1"][3]["hits@1"] == 1.0
    assert rows["m2"][3]["n"] == 2 and rows["m2"][3]["hits@1"] == 0.5
    assert rows["m1"][4] == rows["m2"][4] == "*"
    text = "\n".join(table.markdown())
    assert "| m1 | 1 | 2* | 1.000 |" in text and "| m2 | 1 | 2* | 0.500 |" in text
    assert "* compared on the 2 questions of metaqa-1hop these runs share (of 4, 4)." in text
    # on the same questions, the runs' own summaries are used as they are
    shutil.rmtree(tmp_path / "b")
    make_run(tmp_path / "c", "m2", "metaqa-1hop", {f"q{i}": i % 2 == 0 for i in range(1, 5)})
    [table] = report_tables(find_runs([tmp_path]))
    assert not table.notes and all(row[4] == "" for row in table.rows)
    assert table.rows[0][3] == json.loads((a / "summary.json").read_text())


def test_tables_by_family_and_n_with_the_settings_that_differ(tmp_path):
    for hop in (2, 1, 3):
        make_run(tmp_path / f"gnn-{hop}", "dualr", f"metaqa-{hop}hop", {"q1": True}, options=("x=1",))
        make_run(tmp_path / f"llm-{hop}", "dualr", f"metaqa-{hop}hop", {"q1": False}, options=("x=2",))
    make_run(tmp_path / "pq", "dualr", "pathquestion-pq-2h", {"q1": True, "q2": True}, options=("x=1",))
    make_run(tmp_path / "wq", "graph_rag", "webqsp-sample", {"q1": True}, dtype="bfloat16")
    make_run(tmp_path / "m200", "dualr", "metaqa-1hop", {"q1": True, "q2": False}, options=("x=1",))
    tables = report_tables(find_runs([tmp_path]))
    assert [(t.family, t.n) for t in tables] == [
        ("MetaQA", 2),
        ("MetaQA", 1),
        ("PathQuestion", 2),
        ("WebQSP sample", 1),
    ]
    metaqa = tables[1]
    assert [(r[1], r[2]) for r in metaqa.rows] == [
        ("x=1", "1"),
        ("x=1", "2"),
        ("x=1", "3"),
        ("x=2", "1"),
        ("x=2", "2"),
        ("x=2", "3"),
    ]
    assert metaqa.common["split"] == "validation" and "x" not in metaqa.common
    lines = metaqa.markdown()
    assert lines[0].startswith("| method | settings | hops | n | Hits@1 | F1 | LLM calls | tokens |")
    assert "| dualr | x=1 | 1 | 1 | 1.000 | 1.000 | 1.0 | 105 | 0.50 | 1.000 | 1.000 |" in lines
    assert tables[3].common["dtype"] == "bfloat16" and "settings" not in tables[3].markdown()[0]


def test_page_is_the_same_whatever_the_order_runs_are_found_in(tmp_path):
    make_run(tmp_path / "z" / "a", "m1", "metaqa-1hop", {"q1": True, "q2": False})
    make_run(tmp_path / "a" / "b", "m2", "metaqa-1hop", {"q2": True, "q3": False})
    runs = find_runs([tmp_path / "z", tmp_path / "a"])
    page = render_page(runs, command="kg-agents report x")
    assert page == render_page(list(reversed(runs)), command="kg-agents report x")
    assert (
        page.startswith("# Measured results\n") and "\n## MetaQA\n" in page and "kg-agents report x" in page
    )


def test_predictions_stand_in_for_scores_and_bad_folders_are_named(tmp_path):
    make_run(tmp_path / "a", "m1", "metaqa-1hop", {"q1": True}, scores_file=False)
    make_run(tmp_path / "b", "m2", "metaqa-1hop", {"q2": True})
    [table] = report_tables(find_runs([tmp_path]))
    assert "no question" in table.notes[0]  # none shared: each on its own
    with pytest.raises(ConfigError, match="no directory"):
        find_runs([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no run folder"):
        find_runs([tmp_path / "empty"])
    (tmp_path / "b" / SCORES).write_text('{"id": "q2"}\nnot json\n')
    with pytest.raises(DataFormatError, match=r"scores\.jsonl"):
        report_tables(find_runs([tmp_path]))


def test_report_command_writes_checks_and_prints(tmp_path, capsys, monkeypatch):
    make_run(tmp_path / "runs" / "a", "m1", "metaqa-1hop", {"q1": True})
    monkeypatch.chdir(tmp_path)
    args = ["report", "runs", "--out", "docs/page.md", "--chart", "docs/img/chart.png"]
    assert cli.main(args) == 0
    page = (tmp_path / "docs" / "page.md").read_text()
    assert "![Hits@1 of every row](img/chart.png)" in page and (tmp_path / "docs/img/chart.png").is_file()
    assert "kg-agents report runs --out docs/page.md --chart docs/img/chart.png\n" in page
    assert cli.main([*args, "--check"]) == 0
    (tmp_path / "docs" / "page.md").write_text(page.replace("1.000", "0.999"))
    assert cli.main([*args, "--check"]) == 1
    assert "differs from what the report writes" in capsys.readouterr().err
    assert cli.main(["report", "runs"]) == 0
    assert capsys.readouterr().out.startswith("# Measured results")
    assert cli.main(["report", "runs", "--check"]) == 2  # --check needs --out


def test_committed_results_page_is_what_the_report_writes(monkeypatch, capsys):
    """docs/results.md is generated: the command its header names, with ``--check``, renders the page
    again from docs/results/runs and compares it with the committed one."""
    page = PAGE.read_text(encoding="utf-8")
    command = next(ln for ln in page.splitlines() if ln.startswith("kg-agents report "))
    argv = shlex.split(command)[1:]
    assert argv[:2] == ["report", "docs/results/runs"] and "--out" in argv
    monkeypatch.chdir(ROOT)
    assert cli.main([*argv, "--check"]) == 0, f"docs/results.md is stale: run {command}"
