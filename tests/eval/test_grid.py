"""``kg_agents.eval.grid`` and ``kg-agents eval --grid``: parsing, folders, resuming."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kg_agents.cli import commands as cli
from kg_agents.errors import ConfigError
from kg_agents.eval.grid import GridRun, load_grid, parse_grid, run_complete
from kg_agents.eval.report import GRID_RECORD, SCORES
from tests.fakes import FakeChat

ROOT = Path(__file__).resolve().parents[2]
GRID = """
methods = ["llm_only"]
datasets = ["pathquestion-pq-2h", "pathquestion-pql-2h"]
split = "validation"
seed = 0
limit = 2
concurrency = 2
[options]
pack = ["none"]
"""


def test_options_lists_are_axes_and_each_run_has_its_folder_and_command():
    grid = parse_grid(
        {
            "methods": ["dualr", "graph_rag"],
            "datasets": ["metaqa-1hop"],
            "limit": 5,
            "options": {"max_triples": [10, 20], "answer_with": "gnn", "flag": True, "path": "a b/c"},
        },
        "g.toml",
    )
    assert len(grid.runs) == 4
    run = grid.runs[0]
    assert run.options == (("answer_with", "gnn"), ("flag", "true"), ("max_triples", "10"), ("path", "a b/c"))
    assert run.folder("out") == Path(
        "out/dualr/metaqa-1hop/answer_with=gnn,flag=true,max_triples=10,path=a_b_c"
    )
    argv = run.eval_argv("out")
    assert argv[:7] == ["eval", "--method", "dualr", "--dataset", "metaqa-1hop", "--seed", "0"]
    assert argv[argv.index("--limit") + 1] == "5" and "--split" not in argv
    assert argv.count("--set") == 4 and "path=a b/c" in argv
    assert argv[-2:] == ["--out", str(run.folder("out"))]
    assert [r.method for r in grid.runs] == ["dualr", "dualr", "graph_rag", "graph_rag"]
    assert GridRun("dualr", "metaqa-1hop").folder("o") == Path("o/dualr/metaqa-1hop")
    assert GridRun("dualr", "webqsp-sample").effective_split == "dev"


@pytest.mark.parametrize(
    "data,key,what",
    [
        ({"methods": ["dualr"], "datasets": ["metaqa-1hop"], "limt": 5}, "limt", "unknown key"),
        ({"methods": ["dualr"], "datasets": ["metaqa-1hop"], "seed": "0"}, "seed", "is not an integer"),
        ({"methods": ["dualr"], "datasets": ["metaqa-1hop"], "limit": True}, "limit", "is not an integer"),
        ({"methods": ["dualr"], "datasets": ["metaqa-1hop"], "limit": 0}, "limit", ">= 1"),
        ({"methods": ["dualr"], "datasets": ["metaqa-1hop"], "split": "test"}, "split", "valid"),
        ({"methods": ["dualr"], "datasets": ["metaqa-1hop"], "match": "fuzzy"}, "match", "valid"),
        ({"methods": ["nope"], "datasets": ["metaqa-1hop"]}, "methods", "unknown 'nope'"),
        ({"methods": ["dualr"], "datasets": ["metaqa-9hop"]}, "datasets", "unknown 'metaqa-9hop'"),
        ({"methods": "dualr", "datasets": ["metaqa-1hop"]}, "methods", "is not a list"),
        ({"methods": [], "datasets": ["metaqa-1hop"]}, "methods", "non-empty"),
        ({"datasets": ["metaqa-1hop"]}, "methods", "missing"),
        ({"methods": ["dualr"], "datasets": ["metaqa-1hop"], "options": {"k": []}}, "options.k", "empty"),
        ({"methods": ["dualr"], "datasets": ["metaqa-1hop"], "options": {"k": [{}]}}, "options.k", "string"),
    ],
)
def test_bad_grids_name_the_file_and_the_key(data, key, what):
    with pytest.raises(ConfigError) as err:
        parse_grid(data, "docs/g.toml")
    assert f"grid docs/g.toml: {key}:" in str(err.value) and what in str(err.value)


def test_grid_files_in_toml_and_yaml(tmp_path):
    (tmp_path / "g.toml").write_text(GRID)
    (tmp_path / "g.yaml").write_text(
        "methods: [llm_only]\ndatasets: [pathquestion-pq-2h, pathquestion-pql-2h]\nsplit: validation\n"
        "seed: 0\nlimit: 2\nconcurrency: 2\noptions:\n  pack: [none]\n"
    )
    assert load_grid(tmp_path / "g.toml").runs == load_grid(tmp_path / "g.yaml").runs
    (tmp_path / "bad.toml").write_text("methods = [")
    (tmp_path / "g.json").write_text("{}")
    for name, what in (
        ("bad.toml", "not TOML"),
        ("g.json", ".toml, .yaml or .yml"),
        ("none.toml", "no grid"),
    ):
        with pytest.raises(ConfigError, match=what):
            load_grid(tmp_path / name)
    # the committed grids parse
    for grid in sorted((ROOT / "docs" / "results").glob("*.toml")):
        assert load_grid(grid).runs


@pytest.fixture
def chat(monkeypatch):
    llm = FakeChat(rules={"": "Answer: nobody"})
    monkeypatch.setattr("kg_agents.cli.setup.resolve_model", lambda spec, **options: llm)
    return llm


def test_grid_runs_every_combination_then_skips_what_is_complete(tmp_path, chat, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("g.toml").write_text(GRID)
    assert cli.main(["eval", "--grid", "g.toml", "--out", "runs", "--no-progress"]) == 0
    folders = [
        Path("runs/llm_only/pathquestion-pq-2h/pack=none"),
        Path("runs/llm_only/pathquestion-pql-2h/pack=none"),
    ]
    for folder in folders:
        assert json.loads((folder / "summary.json").read_text())["n"] == 2
        assert len((folder / SCORES).read_text().splitlines()) == 2
        record = json.loads((folder / GRID_RECORD).read_text())
        assert record["grid"] == "g.toml" and record["out"] == "runs" and "cores" in record["hardware"]
        assert json.loads((folder / "run.json").read_text())["options"] == ["pack=none"]
    assert len(chat.prompts) == 4
    # again: both complete, nothing asked
    capsys.readouterr()
    assert cli.main(["eval", "--grid", "g.toml", "--out", "runs", "--no-progress"]) == 0
    assert capsys.readouterr().out.count("complete, skipped") == 2 and len(chat.prompts) == 4
    # a run cut short: eval resumes it, asking only the question that was not finished
    preds = folders[1] / "predictions.jsonl"
    preds.write_text(preds.read_text().splitlines(keepends=True)[0])
    (folders[1] / "summary.json").unlink()
    assert cli.main(["eval", "--grid", "g.toml", "--out", "runs", "--no-progress"]) == 0
    assert len(chat.prompts) == 5 and json.loads((folders[1] / "summary.json").read_text())["n"] == 2
    # a folder holding another run is not taken for this one
    run = load_grid("g.toml").runs[0]
    assert run_complete(run, folders[0])
    assert not run_complete(GridRun("llm_only", "pathquestion-pq-2h", limit=3), folders[0])
    assert not run_complete(
        GridRun("llm_only", "pathquestion-pq-2h", (("pack", "auto"),), limit=2), folders[0]
    )
    # the grid sets each run's flags
    assert cli.main(["eval", "--grid", "g.toml", "--out", "runs", "--limit", "3"]) == 2
    assert "--grid takes its settings from the file; drop --limit" in capsys.readouterr().err
    assert cli.main(["eval", "--grid", "g.toml"]) == 2
    argv = ["eval", "--grid", "g.toml", "--out", "runs"]
    message = cli.interrupted_message(cli.build_parser().parse_args(argv), argv)
    assert "grid's finished runs are kept" in message and message.endswith(
        "kg-agents eval --grid g.toml --out runs"
    )
