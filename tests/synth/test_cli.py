"""``kg-agents synth``: writes the files and prints a summary; bad input is one line and status 2."""

from __future__ import annotations

import json

from kg_agents.cli.commands import main
from kg_agents.eval.datasets import load_jsonl_questions
from kg_agents.synth import read_questions


def test_synth_writes_the_files_and_a_summary(tmp_path, capsys):
    out = tmp_path / "synth"
    rc = main(
        ["synth", "pq-2h", "--out", str(out), "--n", "60", "--kinds", "chain,conjunction", "--seed", "3"]
    )
    assert rc == 0
    captured = capsys.readouterr()
    assert "synthesised 60 questions from pq-2h" in captured.out
    assert "48 train, 12 validation" in captured.out and str(out / "train.jsonl") in captured.out
    assert "synth: walks" in captured.err
    train, val = read_questions(out / "train.jsonl"), read_questions(out / "validation.jsonl")
    assert len(train) == 48 and len(val) == 12 and (out / "stats.json").is_file()
    assert len(load_jsonl_questions(out / "train.jsonl", kg="pq-2h")) == 48


def test_synth_balance_by_direction_pattern(tmp_path):
    out = tmp_path / "synth"
    assert (
        main(["synth", "pq-2h", "--out", str(out), "--n", "80", "--hops", "2", "--balance", "direction"]) == 0
    )
    stats = json.loads((out / "stats.json").read_text(encoding="utf-8"))
    assert stats["settings"]["balance"] == "direction"
    assert sorted(stats["per_direction"]) == ["ii", "io", "oi", "oo"] and set(
        stats["per_direction"].values()
    ) == {20}


def test_synth_bad_input_is_status_2(tmp_path, capsys):
    assert main(["synth", "pq-2h", "--out", str(tmp_path), "--hops", "1,x"]) == 2
    assert "--hops must be comma-separated integers" in capsys.readouterr().err
    assert main(["synth", "pq-2h", "--out", str(tmp_path), "--hops", "4"]) == 2
    ex = tmp_path / "ex.txt"
    ex.write_text("who wrote [A]?\n")
    assert main(["synth", "pq-2h", "--out", str(tmp_path), "--examples", str(ex)]) == 2
    assert "add --paraphrase" in capsys.readouterr().err
    assert main(["synth", "no_such_graph", "--out", str(tmp_path)]) == 2
    assert not (tmp_path / "train.jsonl").exists()


def test_synth_interrupted_says_how_to_run_again(tmp_path, capsys, monkeypatch):
    import kg_agents.synth.generate as generate

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(generate, "read_topic_labels", interrupted)
    argv = ["synth", "pq-2h", "--out", str(tmp_path / "o")]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert "synth writes its files at the end (stats.json last)" in err and "kg-agents synth pq-2h" in err
    assert not (tmp_path / "o").exists()
