"""Crash-safe runs: ``kg-agents eval``, ``train`` and ``build-tries`` killed at random moments and resumed.

Each test runs the command as a subprocess (:mod:`tests.cli.scripted_cli`: a scripted chat model, and
writes cut in two by a pause so that a kill can land inside one), kills it with SIGKILL many times
after seeded random delays or while a write is half done, resumes it each time, and compares the end
with an uninterrupted run. Ctrl-C (SIGINT) must end a run with status 130, what finished kept, and one
line naming the command that resumes it.

Run them with ``pytest tests/cli/test_crash_safety.py``.
"""

from __future__ import annotations

import json
import os
import random
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kg_agents.eval.runner import PREDICTIONS, SUMMARY, read_predictions, repair_predictions
from kg_agents.kg.testing import CONTRACT_TRIPLES
from tests.cli.scripted_cli import contract_questions, write_contract_kg

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = {
    "directed_by": "who directed [{}]",
    "starred_actors": "who starred in [{}]",
    "written_by": "who wrote [{}]",
    "release_year": "when was [{}] released",
}
TIMING = {"seconds", "avg_seconds"}


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    for key in (
        "HF_HUB_DISABLE_PROGRESS_BARS",
        "TRANSFORMERS_VERBOSITY",
        "TRANSFORMERS_NO_ADVISORY_WARNINGS",
    ):
        env.pop(key, None)
    return {**env, **extra}


def _default_sigint() -> None:
    # a test suite started in the background (`cmd &`, nohup) hands its children SIGINT ignored, and a
    # Python started so never raises KeyboardInterrupt: the child gets the default back, as in a terminal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str], **env: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.cli.scripted_cli", *args],
        cwd=ROOT,
        env=_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )


def _finish(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    p = _start(args, **env)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def _wait_for(check: Any, p: subprocess.Popen[str], timeout: float = 30.0) -> bool:
    """Poll ``check()`` every 5 ms until it holds (True) or ``p`` ended (False)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        if p.poll() is not None:
            return False
        time.sleep(0.005)
    raise AssertionError("the condition never held")


def _kill(p: subprocess.Popen[str]) -> bool:
    """SIGKILL ``p``; True when it was still running."""
    running = p.poll() is None
    if running:
        p.send_signal(signal.SIGKILL)
    p.communicate(timeout=30)
    return running


@pytest.fixture
def kg_and_questions(tmp_path: Path) -> tuple[str, str, int]:
    """The contract KG as a triples file and 96 questions about it (16 distinct, each six times)."""
    kg = write_contract_kg(tmp_path / "kb.tsv")
    lines = [q + "\t" + "|".join(ts) for q, _, ts in contract_questions(TEMPLATES)] * 6
    qs = tmp_path / "qs.txt"
    qs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(kg), str(qs), len(lines)


def _eval_args(kg: str, qs: str, out: Path) -> list[str]:
    out_args = ["--out", str(out), "--no-progress", "--concurrency", "2"]
    return ["eval", "--method", "graph_rag", "--kg", kg, "--questions", qs, *out_args]


def _complete_lines(path: Path) -> list[dict[str, Any]]:
    """Every complete line of ``predictions.jsonl`` parsed (a failure to parse fails the test)."""
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    return [json.loads(line) for line in text.splitlines(keepends=True) if line.endswith("\n")]


def _torn(path: Path) -> bool:
    return path.is_file() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")


def _without_timing(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _without_timing(v) for k, v in x.items() if k not in TIMING}
    return x


def test_a_torn_last_line_is_dropped_never_counted_and_the_question_runs_again(tmp_path):
    path = tmp_path / PREDICTIONS
    whole = json.dumps({"id": "q1", "predictions": ["a"], "error": None}) + "\n"
    cut = json.dumps({"id": "q2", "predictions": ["b"], "error": None})
    path.write_text(whole + cut[: len(cut) // 2], encoding="utf-8")
    assert set(read_predictions(path)) == {"q1"}  # the torn line is not read
    assert repair_predictions(path) == len(cut) // 2
    assert path.read_text(encoding="utf-8") == whole
    assert repair_predictions(path) == 0
    # a torn line that is a whole record but for its newline is dropped too (its write did not finish)
    path.write_text(whole + cut, encoding="utf-8")
    assert set(read_predictions(path)) == {"q1"} and repair_predictions(path) == len(cut)
    # a file that is one torn line becomes empty; a corrupt complete line is an error, not skipped
    path.write_text(cut[:5], encoding="utf-8")
    assert repair_predictions(path) == 5 and path.read_bytes() == b""
    path.write_text(whole + "{not json\n" + whole, encoding="utf-8")
    from kg_agents.errors import DataFormatError

    with pytest.raises(DataFormatError, match=r"predictions.jsonl:2: not a prediction record"):
        read_predictions(path)
    # a run.json that is not one (written by hand, or by a version that did not write it atomically)
    from kg_agents.eval.runner import check_run_info

    (tmp_path / "run.json").write_text('{"method": "gr', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"run\.json: not a run description"):
        check_run_info(tmp_path, {"method": "graph_rag"})


@pytest.mark.slow
def test_eval_killed_many_times_resumes_to_the_uninterrupted_result(tmp_path, kg_and_questions):
    """SIGKILL 12 times; resume; the same predictions and summary as an uninterrupted run.

    The kills come in turn: at a random moment after the start (the start included: ``run.json``), at
    a random moment after the next finished question, and while a line is half written. Each round
    lets only a bounded number of questions finish (every write pauses), so the run ends only after
    all twelve kills, on a fast machine too.
    """
    kg, qs, n = kg_and_questions
    ref_dir, run_dir = tmp_path / "ref", tmp_path / "run"
    _finish(_eval_args(kg, qs, ref_dir))
    ref = read_predictions(ref_dir / PREDICTIONS)
    assert len(ref) == n
    rng = random.Random(20261125)
    args = _eval_args(kg, qs, run_dir)
    pred = run_dir / PREDICTIONS
    kills = torn = 0
    for round_ in range(12):
        p = _start(args, SCRIPTED_CLI_SLOW="predictions", SCRIPTED_CLI_PAUSE="0.04")
        if round_ % 3 == 0:
            time.sleep(rng.uniform(0.05, 1.0))
        elif round_ % 3 == 1:
            n_before = len(_complete_lines(pred))
            _wait_for(lambda n=n_before: len(_complete_lines(pred)) > n, p)
            time.sleep(rng.uniform(0.0, 0.3))
        else:  # wait until a line is half written, then kill
            _wait_for(lambda: _torn(pred), p)
        kills += _kill(p)
        torn += _torn(pred)
        lines = _complete_lines(pred)  # every complete line parses
        ids = [r["id"] for r in lines]
        assert len(ids) == len(set(ids)), "a question was written twice"
        assert all(not r["error"] for r in lines)
        if (run_dir / "run.json").is_file():
            json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        if len(ids) == n:
            break
    assert kills == 12 and torn >= 4, (kills, torn)
    _finish(args)
    lines = _complete_lines(pred)
    assert pred.read_bytes().endswith(b"\n")
    assert len(lines) == n and {r["id"] for r in lines} == set(ref)
    assert {r["id"]: _without_timing(r) for r in lines} == {i: _without_timing(r) for i, r in ref.items()}
    summary = json.loads((run_dir / SUMMARY).read_text(encoding="utf-8"))
    ref_summary = json.loads((ref_dir / SUMMARY).read_text(encoding="utf-8"))
    assert _without_timing(summary) == _without_timing(ref_summary) and summary["n"] == n


@pytest.mark.slow
def test_ctrl_c_ends_eval_with_what_finished_and_the_resume_command(tmp_path, kg_and_questions):
    kg, qs, n = kg_and_questions
    out = tmp_path / "run"
    args = _eval_args(kg, qs, out)
    pred = out / PREDICTIONS
    # slow enough writes that the run cannot end before the signal lands, even on a loaded machine
    p = _start(args, SCRIPTED_CLI_SLOW="predictions", SCRIPTED_CLI_PAUSE="0.3")
    assert _wait_for(lambda: len(_complete_lines(pred)) >= 3, p)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    done = _complete_lines(pred)
    assert 3 <= len(done) < n and pred.read_bytes().endswith(b"\n")  # what finished is flushed
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        f"kg-agents: interrupted; {len(done)} finished questions are in {pred}; "
        f"to resume, run: kg-agents {shlex.join(args)}"
    )
    assert not (out / SUMMARY).exists()
    _finish(args)
    assert len(_complete_lines(pred)) == n and len(read_predictions(pred)) == n


# --------------------------------------------------------------------------- build-tries
def _entities_file(tmp_path: Path) -> tuple[str, str, list[str]]:
    kg = write_contract_kg(tmp_path / "kb.tsv")
    names = sorted({x for h, _, t in CONTRACT_TRIPLES for x in (h, t)})
    ents = tmp_path / "entities.txt"
    ents.write_text("\n".join(names) + "\n", encoding="utf-8")
    return str(kg), str(ents), names


def _tries_args(kg: str, ents: str, out: Path) -> list[str]:
    return ["build-tries", "--kg", kg, "--entities", ents, "--hops", "2", "--out", str(out), "--json"]


def _indexed_tries(out: Path) -> dict[str, tuple[list[list[int]], list[str]]]:
    """Every trie that ``index.json`` names, loaded (a file that does not load fails the test)."""
    from kg_agents.methods.gcr.trie import KGTrie

    if not (out / "index.json").is_file():
        return {}
    index = json.loads((out / "index.json").read_text(encoding="utf-8"))
    tries = {e: KGTrie.load(out / name) for e, name in index["entities"].items()}
    return {e: ([list(s) for s in t.sequences], list(t.texts)) for e, t in tries.items()}


def _index_names(out: Path) -> list[str]:
    """The entities ``index.json`` names (none while it is missing or being replaced)."""
    try:
        return list(json.loads((out / "index.json").read_text(encoding="utf-8"))["entities"])
    except (OSError, ValueError, KeyError):
        return []


def _temporaries(out: Path) -> list[Path]:
    return [f for f in out.glob(".*") if f.is_file()] if out.is_dir() else []


def _half_written(out: Path) -> bool:
    """A temporary file in ``out`` holds some bytes (a write is under way)."""
    for f in _temporaries(out):
        try:
            if f.stat().st_size:
                return True
        except FileNotFoundError:  # renamed into place meanwhile
            pass
    return False


@pytest.mark.slow
def test_build_tries_killed_many_times_resumes_to_the_uninterrupted_tries(tmp_path):
    """SIGKILL 8 times (in turn: at a random moment after a trie was written, and while one is half
    written); no half-written file is ever read, and the end is the uninterrupted run's tries."""
    kg, ents, names = _entities_file(tmp_path)
    env = {"SCRIPTED_CLI_BYTE_TOKENIZER": "1"}
    ref_dir, out = tmp_path / "ref", tmp_path / "tries"
    _finish(_tries_args(kg, ents, ref_dir), **env)
    ref = _indexed_tries(ref_dir)
    assert sorted(ref) == names
    rng = random.Random(7)
    kills = torn = 0
    for round_ in range(8):
        p = _start(_tries_args(kg, ents, out), SCRIPTED_CLI_SLOW="npz", SCRIPTED_CLI_PAUSE="0.15", **env)
        if round_ % 2:
            _wait_for(lambda: _half_written(out), p)
        else:
            n_before = len(list(out.glob("[!.]*.npz")))
            _wait_for(lambda n=n_before: len(list(out.glob("[!.]*.npz"))) > n, p)
            time.sleep(rng.uniform(0.0, 0.3))
        kills += _kill(p)
        torn += bool(_temporaries(out))
        have = _indexed_tries(out)  # every indexed file is whole
        assert all(have[e] == ref[e] for e in have)
        if len(have) == len(names):
            break
    assert kills == 8 and torn >= 4, (kills, torn)
    r = _finish(_tries_args(kg, ents, out), **env)
    summary = json.loads(r.stdout)
    assert sorted(summary["built"] + summary["skipped_existing"]) == names
    assert summary["skipped_existing"]  # the killed runs' tries were kept, not built again
    assert summary["files"] == len(names)
    assert _indexed_tries(out) == ref and not _temporaries(out)


@pytest.mark.slow
def test_ctrl_c_ends_build_tries_with_the_built_tries_indexed(tmp_path):
    kg, ents, names = _entities_file(tmp_path)
    env = {"SCRIPTED_CLI_BYTE_TOKENIZER": "1", "SCRIPTED_CLI_SLOW": "npz", "SCRIPTED_CLI_PAUSE": "0.1"}
    out = tmp_path / "tries"
    args = _tries_args(kg, ents, out)
    p = _start(args, **env)
    # two tries in the index (a trie's file is in place a moment before the index names it)
    assert _wait_for(lambda: len(_index_names(out)) >= 2, p)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130 and "Traceback" not in err, err
    assert err.strip().splitlines()[-1] == (
        "kg-agents: interrupted; the tries built so far are kept; "
        f"to resume, run: kg-agents {shlex.join(args)}"
    )
    kept = _indexed_tries(out)
    assert 2 <= len(kept) < len(names) and not _temporaries(out)
    summary = json.loads(_finish(args, SCRIPTED_CLI_BYTE_TOKENIZER="1").stdout)
    assert sorted(summary["skipped_existing"]) == sorted(kept)
    assert len(summary["built"]) == len(names) - len(kept)


def test_an_interrupted_overwrite_never_leaves_an_index_of_other_settings(tmp_path, monkeypatch):
    """Rebuilding with other settings writes the new index first: the old one never names a new file."""
    from kg_agents.kg import open_kg
    from kg_agents.methods.gcr import trie as trie_mod
    from kg_agents.methods.gcr.trie import build as trie_build
    from tests.cli.scripted_cli import ByteTokenizer

    kg_file, _, _ = _entities_file(tmp_path)
    kg, tok, out = open_kg(kg_file), ByteTokenizer(), tmp_path / "tries"
    trie_mod.build_tries(kg, ["Splash", "Big"], tok, out, max_hops=2)
    build = trie_build.build_trie
    calls = []

    def build_once(*args, **kwargs):
        calls.append(args[1])
        if len(calls) > 1:
            raise KeyboardInterrupt
        return build(*args, **kwargs)

    monkeypatch.setattr(trie_build, "build_trie", build_once)
    with pytest.raises(KeyboardInterrupt):
        trie_mod.build_tries(kg, ["Splash", "Big"], tok, out, max_hops=1, overwrite=True)
    index = json.loads((out / "index.json").read_text(encoding="utf-8"))
    assert index["settings"]["max_hops"] == 1 and list(index["entities"]) == ["Splash"]
    one_hop = trie_mod.KGTrie.load(out / index["entities"]["Splash"])
    assert all(t.count(" -> ") == 2 for t in one_hop.texts)


def test_an_interrupt_during_an_index_rewrite_leaves_no_temporary_file(tmp_path, monkeypatch):
    """Ctrl-C while a periodic index rewrite has its temporary file open: the final index still names
    every finished trie, and no temporary file stays behind."""
    from kg_agents.kg import open_kg
    from kg_agents.methods.gcr import trie as trie_mod
    from kg_agents.methods.gcr.trie import build as trie_build
    from tests.cli.scripted_cli import ByteTokenizer

    kg_file, _, _ = _entities_file(tmp_path)
    kg, tok, out = open_kg(kg_file), ByteTokenizer(), tmp_path / "tries"
    write = trie_build.atomic_write
    calls = []

    def write_then_interrupt(path, data):
        calls.append(path)
        if len(calls) == 3:  # the rewrite after the second trie: its temporary file exists, then Ctrl-C
            (path.parent / f".{path.name}.interrupted.tmp").write_text(data[:10])
            raise KeyboardInterrupt
        write(path, data)

    monkeypatch.setattr(trie_build, "INDEX_COST_RATIO", 0.0)  # rewrite after every trie
    monkeypatch.setattr(trie_build, "atomic_write", write_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        trie_mod.build_tries(kg, ["Splash", "Big", "Cast Away"], tok, out, max_hops=2)
    index = json.loads((out / "index.json").read_text(encoding="utf-8"))
    assert list(index["entities"]) == ["Splash", "Big"] and not _temporaries(out)


# --------------------------------------------------------------------------- train
def _train_args(tmp_path: Path, out: Path) -> list[str]:
    kg = tmp_path / "kb.tsv"
    qs = tmp_path / "train.jsonl"
    if not qs.is_file():
        write_contract_kg(kg)
        rows = [
            {"question": q, "answers": ts, "topic_entities": [h]}
            for q, h, ts in contract_questions(TEMPLATES)
        ] * 3
        qs.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    settings = [
        f"kg={kg}",
        f"questions={qs}",
        f"out={out}",
        "epochs=4",
        "batch_size=4",
        "checkpoint_every=2",
        "hidden=16",
        "layers=2",
        "top_k=10",
        "patience=10",
        "threads=1",
        "progress=false",
    ]
    return ["train", "dualr", *[x for s in settings for x in ("--set", s)]]


def _checkpoint_state(out: Path) -> tuple[int, int, list[dict[str, Any]]] | None:
    """``(epoch, step, history)`` of ``last.pt`` (a file that does not load fails the test), or None."""
    import torch

    from kg_agents.methods.dualr.gnn.explorer import DualRExplorer

    if (out / "best.pt").is_file():
        DualRExplorer.load(out / "best.pt")
    if not (out / "last.pt").is_file():
        return None
    state = torch.load(out / "last.pt", map_location="cpu", weights_only=False)
    return state["epoch"], state["step"], state["history"]


def _history(h: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in rec.items() if k != "train_seconds"} for rec in h]


@pytest.mark.slow
def test_train_dualr_killed_many_times_resumes_to_the_uninterrupted_model(tmp_path, monkeypatch, capsys):
    """Ctrl-C once, then SIGKILL 3 times (two while a checkpoint is half written); resume; same model.

    Each restart pays the imports of torch and torch_geometric (seconds), hence few rounds and ``slow``;
    the uninterrupted run runs in this process.
    """
    import torch

    from kg_agents.cli import commands as cli
    from kg_agents.methods.dualr import train as dualr_train
    from tests.cli.scripted_cli import HashEncoder

    env = {"SCRIPTED_CLI_HASH_ENCODER": "1", "KG_AGENTS_CACHE": str(tmp_path / "cache")}
    ref_dir, out = tmp_path / "ref", tmp_path / "dualr"
    monkeypatch.setattr(dualr_train, "get_text_encoder", lambda name=None: HashEncoder())
    monkeypatch.setenv("KG_AGENTS_CACHE", env["KG_AGENTS_CACHE"])
    threads = torch.get_num_threads()
    try:
        assert cli.main(_train_args(tmp_path, ref_dir)) == 0
    finally:
        torch.set_num_threads(threads)
    ref = json.loads(capsys.readouterr().out)
    assert [rec["epoch"] for rec in ref["history"]] == [1, 2, 3, 4]
    args = _train_args(tmp_path, out)
    slow = {**env, "SCRIPTED_CLI_SLOW": "torch", "SCRIPTED_CLI_PAUSE": "0.1"}
    rng = random.Random(3)
    seen: tuple[int, int] = (0, 0)
    kills = torn = 0
    for round_ in range(4):
        p = _start(args, **slow)
        if round_ % 2:  # kill while a checkpoint is half written
            _wait_for(lambda: _half_written(out), p, timeout=60)
        else:  # at a random moment once training runs
            _wait_for(lambda: (out / "last.pt").is_file() or bool(_temporaries(out)), p, timeout=60)
            time.sleep(rng.uniform(0.0, 0.8))
        if round_ == 0:
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=60)
            assert p.returncode == 130 and "Traceback" not in err, err
            assert err.strip().splitlines()[-1] == (
                "kg-agents: interrupted; to resume from the last checkpoint, "
                f"run: kg-agents {shlex.join(args)}"
            )
            assert not _temporaries(out)  # the checkpoint being written was dropped, not left half
        else:
            kills += _kill(p)
            torn += bool(_temporaries(out))
        state = _checkpoint_state(out)  # loads: never half-written
        if state is not None:
            epoch, step, history = state
            assert (epoch, step) >= seen, ((epoch, step), seen)  # never goes back
            assert [rec["epoch"] for rec in history] == list(range(1, epoch + 1))
            seen = (epoch, step)
    assert kills == 3 and torn >= 2, (kills, torn)
    res = json.loads(_finish(args, **env).stdout)
    # the same training: the same epochs, losses, validation scores and weights
    assert _history(res["history"]) == _history(ref["history"])
    assert res["val_hits1"] == ref["val_hits1"] and res["best_epoch"] == ref["best_epoch"]
    mine = torch.load(out / "best.pt", map_location="cpu", weights_only=False)
    theirs = torch.load(ref_dir / "best.pt", map_location="cpu", weights_only=False)
    assert mine["state_dict"].keys() == theirs["state_dict"].keys()
    for key, tensor in theirs["state_dict"].items():
        assert torch.equal(mine["state_dict"][key], tensor), key
    assert sorted(f.name for f in out.iterdir()) == ["best.pt", "last.pt"]


def test_the_interrupted_line_of_each_command():
    from kg_agents.cli.commands import build_parser, interrupted_message

    def line(*argv: str) -> str:
        return interrupted_message(build_parser().parse_args(list(argv)), list(argv))

    assert line("train", "dualr", "--set", "out=runs/my dir") == (
        "kg-agents: interrupted; to resume from the last checkpoint, "
        "run: kg-agents train dualr --set 'out=runs/my dir'"
    )
    assert line("train", "hops") == (
        "kg-agents: interrupted; this trainer does not resume; to train again, run: kg-agents train hops"
    )
    assert line("ask", "who directed [Splash]") == "kg-agents: interrupted"


def test_an_adapter_folder_is_replaced_whole_or_not_at_all(tmp_path):
    """``train gcr`` saves its adapter through ``atomic_directory``: a crash mid-save keeps the old one."""
    from kg_agents.errors import ConfigError
    from kg_agents.files import atomic_directory
    from kg_agents.methods.gcr.train import check_adapter_out

    target = tmp_path / "lora"
    with atomic_directory(target) as tmp:
        (tmp / "adapter_config.json").write_text("old", encoding="utf-8")
        (tmp / "adapter_model.safetensors").write_bytes(b"old weights")
    with pytest.raises(KeyboardInterrupt), atomic_directory(target) as tmp:
        (tmp / "adapter_model.safetensors").write_bytes(b"new wei")
        raise KeyboardInterrupt  # Ctrl-C while the new adapter is half written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lora"]  # no temporary folder left
    assert (target / "adapter_model.safetensors").read_bytes() == b"old weights"
    with atomic_directory(target) as tmp:
        (tmp / "adapter_model.safetensors").write_bytes(b"new weights")
    assert sorted(p.name for p in target.iterdir()) == ["adapter_model.safetensors"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["lora"]
    # train gcr refuses, before any training, an out that holds other things than an adapter
    (target / "adapter_config.json").write_text("{}", encoding="utf-8")
    check_adapter_out(target)  # an adapter folder: replaced
    check_adapter_out(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_adapter_out(tmp_path / "empty")
    with pytest.raises(ConfigError, match="other files than an adapter"):
        check_adapter_out(tmp_path)
    with pytest.raises(ConfigError, match="is a file"):
        check_adapter_out(target / "adapter_config.json")
