from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kg_agents.cli import commands as cli
from kg_agents.core.registry import register_trainer, unregister_trainer
from kg_agents.errors import EndpointError
from kg_agents.eval.metrics import SUMMARY_KEYS
from tests.fakes import FakeChat

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = {"[Splash]": "Answer: Ron Howard", "[Big]": "Answer: Penny Marshall"}


@pytest.fixture
def resolved() -> list[str]:
    """The model specs the CLI resolved (through the ``chat`` fixture)."""
    return []


@pytest.fixture
def chat(monkeypatch, resolved):
    llm = FakeChat(rules=SCRIPT)

    def fake_resolve(spec, **options):
        resolved.append(spec)
        return llm

    monkeypatch.setattr("kg_agents.cli.setup.resolve_model", fake_resolve)
    return llm


def eval_args(kg_file: str | Path, questions: str | Path, out: str | Path, *extra: str) -> list[str]:
    """``kg-agents eval`` arguments: graph_rag over ``kg_file`` and the ``questions`` file, into ``out``."""
    return [
        "eval",
        "--method",
        "graph_rag",
        "--kg",
        str(kg_file),
        "--questions",
        str(questions),
        "--out",
        str(out),
        *extra,
    ]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "kg_agents.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_methods_lists_one_line_each(capsys):
    assert cli.main(["methods"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    names = [ln.split()[0] for ln in lines]
    assert {"llm_only", "graph_rag", "text_rag"} <= set(names) and names == sorted(names)


def test_ask_json_output_contract(capsys, chat, resolved, kg_file):
    rc = cli.main(["ask", "who directed [Splash]", "--kg", kg_file, "--topic", "Splash", "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["answers"] == ["Ron Howard"]
    assert out["paths"] == ["Splash -> directed_by -> Ron Howard"]
    assert out["usage"]["llm_calls"] == 1 and {"evidence", "errors", "trace"} <= set(out)
    assert resolved == ["local"]


def test_ask_text_output(capsys, chat, kg_file):
    assert cli.main(["ask", "who directed [Splash]", "--kg", kg_file, "--topic", "Splash"]) == 0
    text = capsys.readouterr().out
    assert "Ron Howard" in text and "Splash -> directed_by -> Ron Howard" in text and "1 LLM calls" in text


def test_ask_stream_prints_each_node_as_it_finishes(capsys, chat, kg_file):
    argv = ["ask", "who directed [Splash]", "--kg", kg_file, "--method", "graph_rag"]
    assert cli.main([*argv, "--stream"]) == 0
    lines = capsys.readouterr().out.splitlines()
    steps = lines[: lines.index("Answers:")]
    names = ["[link_entities]", "[retrieve]", "[answer]", "[constrain]"]
    assert [ln.split("]")[0] + "]" for ln in steps] == names, steps
    assert steps[0].startswith("[link_entities] linked=[Splash]") and "answers=[Ron Howard]" in steps[2]
    assert "1 LLM calls" in steps[2] and "KG calls" in steps[1]
    assert lines[lines.index("Answers:") :][:4] == [
        "Answers:",
        "  Ron Howard",
        "Reasoning paths:",
        "  Splash -> directed_by -> Ron Howard",
    ]


def test_ask_stream_with_json_keeps_stdout_json(capsys, chat, kg_file):
    argv = ["ask", "who directed [Splash]", "--kg", kg_file, "--stream", "--json"]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["answers"] == ["Ron Howard"]
    steps = [ln.split("]")[0] + "]" for ln in captured.err.splitlines()]
    assert steps == ["[link_entities]", "[retrieve]", "[answer]", "[constrain]"]


@pytest.mark.parametrize(
    ("argv", "verbose"),
    [(["demo"], False), (["-v", "demo"], True), (["demo", "-v"], True), (["ask", "q", "--verbose"], True)],
)
def test_verbose_flag_before_or_after_the_command(argv, verbose):
    assert cli.build_parser().parse_args(argv).verbose is verbose


def test_prepare_is_quiet_unless_verbose(capsys, monkeypatch, tmp_path):
    from kg_agents.llm import local_model
    from kg_agents.llm.local_model import PreparedWeights

    calls = []

    def prepare(dtypes, *, verify=False):
        calls.append((list(dtypes), verify, local_model._SHOW_PROGRESS))
        return [
            PreparedWeights("float32", tmp_path / "f32", False, None, 0.01),
            PreparedWeights("bfloat16", tmp_path / "bf16", True, "no checkpoint at x", 1.5),
        ]

    monkeypatch.setattr(cli, "prepare_local_model", prepare)
    monkeypatch.setattr(local_model, "_SHOW_PROGRESS", False)
    assert cli.main(["prepare"]) == 0
    assert capsys.readouterr() == ("", "")
    assert cli.main(["prepare", "-v", "--dtypes", "bfloat16", "--verify"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert calls == [(["float32", "bfloat16"], False, False), (["bfloat16"], True, True)]
    assert err == [
        f"float32: {tmp_path / 'f32'} (cached, whole)",
        f"bfloat16: {tmp_path / 'bf16'} (converted in 1.5 s: no checkpoint at x)",
    ]
    with pytest.raises(SystemExit):  # int8 is quantized from float32's weights as they load
        cli.main(["prepare", "--dtypes", "int8"])


def test_ask_set_factory_and_context_options(capsys, chat, kg_file):
    rc = cli.main(
        [
            "ask",
            "who directed [Splash]",
            "--kg",
            kg_file,
            "--topic",
            "Splash",
            "--json",
            "--set",
            "fanout_limit=1",
            "--set",
            "max_triples=1",
        ]
    )
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    retrieve = next(t for t in out["trace"] if t["node"] == "retrieve")
    assert retrieve["triples"] == 1


@pytest.mark.parametrize(
    "setting,msg",
    [
        (
            "beam_size=5",
            "unknown option 'beam_size' for method 'graph_rag'; valid options: adapter, answer_hops, "
            "answer_ratio, calibrate, candidate_text, conjunction, constraint, decide, fanout_limit, "
            "hop_classifier, hop_fanout, index, llm, max_answers, max_hops, max_neighbourhood, max_triples, "
            "pack, prompt",
        ),
        ("fanout_limit=many", "option fanout_limit: 'many' is not an int"),
        ("max_triples", "expected KEY=VALUE"),
    ],
)
def test_ask_bad_set(capsys, chat, kg_file, setting, msg):
    rc = cli.main(["ask", "who directed [Splash]", "--kg", kg_file, "--set", setting])
    assert rc == 2
    assert msg in capsys.readouterr().err
    assert chat.prompts == []


def test_text_rag_options_are_typed(capsys, chat, kg_file):
    rc = cli.main(
        ["ask", "who directed [Splash]", "--method", "text_rag", "--kg", kg_file, "--set", "scope=web"]
    )
    assert rc == 2 and "'web' is not one of neighborhood, kg" in capsys.readouterr().err


def test_empty_question_rejected_before_any_model(capsys, monkeypatch):
    def boom(spec, **options):
        raise AssertionError("model resolved for an empty question")

    monkeypatch.setattr("kg_agents.cli.setup.resolve_model", boom)
    assert cli.main(["ask", "   "]) == 2
    assert "empty question" in capsys.readouterr().err


def test_endpoint_error_is_one_line(capsys, chat, monkeypatch):
    def unreachable(spec):
        raise EndpointError(spec, "connection refused")

    monkeypatch.setattr(cli, "open_kg_spec", unreachable)
    assert cli.main(["ask", "who directed [Splash]", "--kg", "http://127.0.0.1:9/sparql"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "http://127.0.0.1:9/sparql" in err and "Traceback" not in err


def test_eval_questions_file_resume_and_compare(tmp_path, capsys, chat, kg_file):
    qf = tmp_path / "qs.txt"
    qf.write_text("who directed [Splash]\tRon Howard\nwho directed [Big]\tPenny Marshall\n")
    out = tmp_path / "run"
    args = eval_args(kg_file, qf, out, "--no-progress", "--concurrency", "2")
    assert cli.main(args) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert tuple(summary) == SUMMARY_KEYS and summary["n"] == 2 and summary["hits@1"] == 1.0
    assert summary["dataset"] == "qs.txt" and (out / "metrics.png").is_file()
    n_calls = len(chat.prompts)
    assert cli.main(args) == 0  # resumed: nothing left to ask
    assert len(chat.prompts) == n_calls
    out2 = tmp_path / "run2"
    args2 = eval_args(kg_file, qf, out2, "--no-progress", "--set", "max_triples=0")
    assert cli.main(args2) == 0
    capsys.readouterr()
    chart = tmp_path / "cmp.png"
    assert cli.main(["eval", "--compare", str(out), str(out2), "--chart", str(chart)]) == 0
    table = capsys.readouterr().out
    assert table.count("| graph_rag |") == 2 and chart.is_file()


def test_eval_bad_input(capsys, chat):
    assert cli.main(["eval", "--method", "graph_rag", "--dataset", "nope", "--out", "x"]) == 2
    assert "valid: metaqa-1hop" in capsys.readouterr().err
    assert cli.main(["eval", "--method", "nope", "--dataset", "metaqa-1hop", "--out", "x"]) == 2
    assert "valid methods:" in capsys.readouterr().err
    assert cli.main(["eval", "--method", "graph_rag", "--out", "x"]) == 2
    assert "exactly one of --dataset" in capsys.readouterr().err


def toy_trainer(*, steps: int = 1, name: str = "toy") -> dict[str, object]:
    """A trainer for the registry test: returns what it was given."""
    return {"steps": steps, "name": name}


def test_train_registry(capsys):
    register_trainer("toy", "tests.cli.test_commands:toy_trainer", "a toy trainer")
    try:
        assert cli.main(["train"]) == 0
        assert "toy  a toy trainer" in capsys.readouterr().out
        assert cli.main(["train", "toy", "--set", "steps=3"]) == 0
        assert json.loads(capsys.readouterr().out) == {"steps": 3, "name": "toy"}
        assert cli.main(["train", "toy", "--set", "epochs=3"]) == 2
        assert "valid options: name, steps" in capsys.readouterr().err
    finally:
        unregister_trainer("toy")
    assert cli.main(["train", "toy"]) == 2
    assert "unknown trainer 'toy'" in capsys.readouterr().err


def test_subprocess_exit_codes_without_traceback():
    r = run_cli("ask", "")
    assert r.returncode == 2 and "empty question" in r.stderr and "Traceback" not in r.stderr
    r = run_cli("ask", "who directed [Splash]", "--method", "nope")
    assert r.returncode == 2 and "valid methods: " in r.stderr and "graph_rag" in r.stderr
    assert "Traceback" not in r.stderr
    r = run_cli("methods")
    assert r.returncode == 0 and "text_rag" in r.stdout


def test_langgraph_json_exposes_every_registered_method():
    import importlib

    from kg_agents import langgraph_entry
    from kg_agents.core.registry import list_methods

    conf = json.loads((ROOT / "langgraph.json").read_text())
    graphs = conf["graphs"]
    assert sorted(graphs) == sorted(m.name for m in list_methods())
    for name, target in graphs.items():
        module, _, attr = target.partition(":")
        assert module == "kg_agents.langgraph_entry" and attr == name, target  # module syntax: no file path
        assert importlib.import_module(module) is langgraph_entry and callable(getattr(langgraph_entry, attr))


def test_unreachable_model_server_is_one_line(tmp_path):
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "PYTHONPATH": str(ROOT),
        "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
    }
    for cmd in (
        ["ask", "who directed [Splash]", "--method", "llm_only"],
        [
            "eval",
            "--method",
            "llm_only",
            "--dataset",
            "pathquestion-pq-2h",
            "--limit",
            "2",
            "--out",
            str(tmp_path / "run"),
        ],
    ):
        r = subprocess.run(
            [sys.executable, "-m", "kg_agents.cli", *cmd, "--model", "openai:smollm2"],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=120,
        )
        assert r.returncode == 1, r.stderr
        assert r.stderr.strip().count("\n") == 0 and "http://127.0.0.1:9/v1" in r.stderr
        assert "Traceback" not in r.stderr


async def test_langgraph_entry_builds_a_working_graph(kg_file):
    """The server's factory (a coroutine, built off the event loop) gives a graph over the configured KG."""
    from kg_agents import langgraph_entry
    from kg_agents.errors import ConfigError

    llm = FakeChat(rules=SCRIPT)
    graph = await langgraph_entry.graph_rag({"configurable": {"kg": kg_file, "model": llm}})
    out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert out["answers"] == ["Ron Howard"] and [p.to_text() for p in out["paths"]] == [
        "Splash -> directed_by -> Ron Howard"
    ]
    with pytest.raises(ConfigError, match="valid methods"):
        langgraph_entry.build("no_such_method", {"configurable": {"kg": kg_file, "model": llm}})


def test_langgraph_entry_takes_factory_options_from_configurable(kg_file, monkeypatch):
    """``configurable.options`` reaches the factory, typed; a no-model option loads no model."""
    from kg_agents import langgraph_entry
    from kg_agents.errors import ConfigError

    def no_model(spec, **options):
        raise AssertionError(f"model {spec!r} resolved for a graph that needs none")

    monkeypatch.setattr(langgraph_entry, "resolve_chat_model", no_model)
    assert langgraph_entry.factory_options("graph_rag", {"fanout_limit": "7"}) == {"fanout_limit": 7}
    assert langgraph_entry.factory_options("dualr", {"top_k": [3, 2]}) == {"top_k": [3, 2]}
    conf = {"kg": kg_file, "options": {"answer_with": "gnn"}}
    graph = langgraph_entry.build("dualr", {"configurable": conf})
    assert graph.name == "dualr"  # built without a model (the server test runs it)
    with pytest.raises(ConfigError, match=r"unknown option 'beams'.*valid options: .*num_beams"):
        langgraph_entry.build("gcr", {"configurable": {"kg": kg_file, "options": {"beams": 2}}})
    with pytest.raises(ConfigError, match="'llm'"):
        langgraph_entry.factory_options("graph_rag", {"llm": "local"})
    with pytest.raises(ConfigError, match="must be a mapping"):
        langgraph_entry.factory_options("graph_rag", ["fanout_limit=7"])  # type: ignore[arg-type]


@pytest.mark.parametrize("flag", ["--concurrency", "--max-endpoint-failures"])
def test_eval_rejects_a_count_below_one_before_any_model(flag, capsys, monkeypatch, tmp_path, kg_file):
    def boom(spec, **options):
        raise AssertionError("model resolved for a bad eval option")

    monkeypatch.setattr("kg_agents.cli.setup.resolve_model", boom)
    qf = tmp_path / "qs.txt"
    qf.write_text("who directed [Splash]\tRon Howard\n")
    args = eval_args(kg_file, qf, tmp_path / "run", flag, "0")
    assert cli.main(args) == 2
    assert f"{flag} must be >= 1, got 0" in capsys.readouterr().err
    assert not (tmp_path / "run").exists()


def test_eval_passes_max_endpoint_failures_to_the_runner(tmp_path, chat, kg_file, monkeypatch):
    from kg_agents.eval import runner

    seen = {}
    real = runner.run_eval

    async def spy(*args, **kwargs):
        seen.update(kwargs)
        return await real(*args, **kwargs)

    monkeypatch.setattr(runner, "run_eval", spy)
    qf = tmp_path / "qs.txt"
    qf.write_text("who directed [Splash]\tRon Howard\n")
    assert (
        cli.main(eval_args(kg_file, qf, tmp_path / "run", "--no-progress", "--max-endpoint-failures", "3"))
        == 0
    )
    assert seen["max_endpoint_failures"] == 3


def test_unreachable_sparql_endpoint_is_one_line():
    r = run_cli("ask", "who directed [Splash]", "--kg", "http://127.0.0.1:9/sparql", "--topic", "Splash")
    assert r.returncode == 1, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("kg-agents:")]
    assert len(lines) == 1 and "http://127.0.0.1:9/sparql" in lines[0] and "Traceback" not in r.stderr


def test_build_tries_from_a_file_then_resume_and_limits(capsys, kg_file, tmp_path):
    from kg_agents.kg import open_kg
    from kg_agents.methods.gcr.graph import create_gcr_graph
    from kg_agents.methods.gcr.trie import TrieCache
    from tests.methods.gcr.helpers import tiny_decoder

    ents = tmp_path / "entities.txt"
    ents.write_text("Splash\nBig\n\nNobody At All\n", encoding="utf-8")
    out = tmp_path / "tries"
    args = ["build-tries", "--kg", kg_file, "--entities", str(ents), "--hops", "1", "--out", str(out)]
    assert cli.main(args) == 0
    text = capsys.readouterr().out
    assert "built 2 KG-Tries (L=1)" in text and "0 already there; 2 files" in text
    assert "limits hit: none" in text and "1 entities not in the KG, skipped: Nobody At All" in text
    assert "per entity: build median" in text
    assert len(list(out.glob("*.npz"))) == 2 and (out / "index.json").is_file()
    # a rerun keeps what is there
    assert cli.main([*args, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_built"] == 0 and summary["skipped_existing"] == ["Splash", "Big"]
    assert summary["files"] == 2 and summary["total_bytes"] > 0
    # the gcr graph's cache reads them from disk instead of building
    dec = tiny_decoder(max_answer_tokens=2)
    kg = open_kg(kg_file)
    cache = TrieCache(kg, dec.tokenizer, max_hops=1, directory=out)
    g = create_gcr_graph(kg, general_llm=None, decoder=dec, trie_cache=cache, num_beams=2, max_hops=1)
    res = g.invoke({"question": "who directed Splash", "topic_entities": ["Splash"]})
    assert next(t for t in res["trace"] if t["node"] == "get_trie")["from_disk"] == 1
    # other settings in the same directory are refused; --overwrite rebuilds; limits are reported
    assert cli.main([*args[:-4], "--hops", "2", "--out", str(out)]) == 2
    assert "other settings" in capsys.readouterr().err
    assert cli.main([*args, "--max-paths", "2", "--overwrite"]) == 0
    text = capsys.readouterr().out
    assert "built 2 KG-Tries" in text and "limits hit (fan-out 500 per entity and hop, or 2 paths" in text
    assert "for 2 entities: Splash, Big" in text


def test_build_tries_for_a_dataset_and_bad_command_lines(capsys, tmp_path):
    out = tmp_path / "t"
    assert (
        cli.main(
            [
                "build-tries",
                "--dataset",
                "metaqa-1hop",
                "--split",
                "train",
                "--limit",
                "3",
                "--hops",
                "1",
                "--out",
                str(out),
                "--json",
            ]
        )
        == 0
    )
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_built"] == 3 == summary["files"] and summary["seconds_p95"] >= summary["seconds_median"]
    prepared = tmp_path / "prepared"
    argv = ["build-tries", "--dataset", "metaqa-1hop", "--split", "train", "--limit", "3", "--hops", "1"]
    assert cli.main([*argv, "--out", str(prepared), "--prepare-labels", "--json"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["n_built"] == 3 and again["prepared_labels"] >= 0 and again["prepare_seconds"] >= 0
    from kg_agents.methods.gcr.trie import KGTrie

    def tries(d):
        return sorted((t.texts, t.sequences) for t in map(KGTrie.load, sorted(d.glob("*.npz"))))

    assert tries(prepared) == tries(out)  # the same tries, with the labels tokenised up front
    for bad in (
        ["--out", str(out)],
        ["--dataset", "metaqa-1hop", "--entities", "x", "--out", str(out)],
        ["--entities", str(tmp_path / "missing.txt"), "--out", str(out)],
        ["--dataset", "metaqa-1hop", "--hops", "0", "--out", str(out)],
        ["--dataset", "nope", "--out", str(out)],
    ):
        assert cli.main(["build-tries", *bad]) == 2, bad
        assert capsys.readouterr().err.startswith("kg-agents: error:")


def test_ask_gcr_with_a_vllm_decoder_spec_that_is_down(capsys, chat, kg_file):
    """``--set decoder=vllm:URL`` reaches the gcr graph as a spec; a server that is down is exit 1, named."""
    from kg_agents.llm.vllm_server import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    rc = cli.main(
        [
            "ask",
            "who directed [Splash]",
            "--method",
            "gcr",
            "--kg",
            kg_file,
            "--topic",
            "Splash",
            "--set",
            f"decoder=vllm:{url}",
            "--set",
            "num_beams=2",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 1 and url in err and "ModelError" in err
    assert cli.main(["ask", "q", "--method", "gcr", "--kg", kg_file, "--set", "decoder=nope"]) == 2
    assert "unknown decoder spec 'nope'" in capsys.readouterr().err


def test_an_error_raised_over_ctrl_c_still_ends_as_interrupted(monkeypatch, capsys):
    """A library's cleanup that fails while Ctrl-C unwinds (numpy's zip writer raises ValueError over the
    KeyboardInterrupt) ends the command as interrupted (130), not as a failure with a traceback."""

    def interrupted_in_cleanup(args):
        try:
            raise KeyboardInterrupt
        finally:
            raise ValueError("Can't close the ZIP file while there is an open writing handle on it.")

    monkeypatch.setattr(cli, "cmd_methods", interrupted_in_cleanup)
    assert cli.main(["methods"]) == 130
    assert capsys.readouterr().err.strip() == "kg-agents: interrupted"

    def plain_failure(args):
        raise ValueError("not an interrupt")

    monkeypatch.setattr(cli, "cmd_methods", plain_failure)
    with pytest.raises(ValueError, match="not an interrupt"):
        cli.main(["methods"])
