"""Building a pack end to end (`kg-agents specialise`) on a small KG at the smallest budget."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from kg_agents.errors import ConfigError
from kg_agents.specialise import BUDGETS, _stages, specialise
from tests.packs.helpers import fake_adapter


def small_kg(path: Path, seed: int = 0) -> Path:
    """A small people-and-places graph: 60 people with spouses, children, birthplaces and professions."""
    rng = random.Random(seed)
    people = [f"Person {i:02d}" for i in range(60)]
    cities = [f"City {c}" for c in "ABCDEFGH"]
    countries = ["Country North", "Country South", "Country East"]
    jobs = ["Painter", "Engineer", "Sailor", "Baker", "Poet"]
    rows = []
    for i in range(0, 60, 2):
        rows.append((people[i], "spouse", people[i + 1]))
    for i in range(20, 60):
        rows.append((people[i], "parents", people[rng.randrange(0, 20)]))
    for p in people:
        rows.append((p, "place_of_birth", rng.choice(cities)))
        rows.append((p, "profession", rng.choice(jobs)))
    for c in cities:
        rows.append((c, "located_in", rng.choice(countries)))
    path.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in sorted(set(rows))), encoding="utf-8")
    return path


def test_stage_names_resolve_and_bad_ones_are_typed_errors() -> None:
    assert _stages("train") == ["hops", "dualr", "gcr", "specialist"]
    assert _stages("evaluate,synth") == ["synth", "evaluate"]
    assert _stages(None)[0] == "synth"
    with pytest.raises(ConfigError, match="unknown stage"):
        _stages("synth,bake")
    with pytest.raises(ConfigError, match="budget"):
        specialise("metaqa", "/nonexistent/x", budget="huge")


def test_a_trainer_stage_needs_the_questions_first(tmp_path: Path) -> None:
    kb = small_kg(tmp_path / "kb.tsv")
    with pytest.raises(ConfigError, match="synth stage first"):
        specialise(str(kb), tmp_path / "pack", budget="tiny", stages="hops", quiet=True, register=False)


def test_relation_noise_reaches_the_questions_and_a_changed_share_synthesises_again(tmp_path: Path) -> None:
    from kg_agents.cli.commands import main as cli

    kb = small_kg(tmp_path / "kb.tsv")
    out = tmp_path / "pack"
    args = [str(kb), "--out", str(out), "--budget", "tiny", "--stages", "synth", "--no-register"]
    assert cli(["specialise", *args, "--relation-noise", "1"]) == 0
    stats = json.loads((out / "questions" / "stats.json").read_text(encoding="utf-8"))
    assert stats["relation_noise"]["share"] == 1.0 and stats["relation_noise"]["questions"] > 0
    synth = json.loads((out / "pack.json").read_text(encoding="utf-8"))["stages"]["synth"]
    assert synth["questions"]["relation_noise"] == stats["relation_noise"]  # the manifest says so
    assert cli(["specialise", *args]) == 0  # the default share is another setting: the stage runs again
    stats = json.loads((out / "questions" / "stats.json").read_text(encoding="utf-8"))
    assert stats["relation_noise"] == {"share": 0.0, "questions": 0}
    again = json.loads((out / "pack.json").read_text(encoding="utf-8"))["stages"]["synth"]
    assert again["settings_key"] != synth["settings_key"] and "relation_noise" not in again["questions"]
    with pytest.raises(ConfigError, match="relation_noise"):
        specialise(str(kb), tmp_path / "p2", budget="tiny", stages="synth", relation_noise=2, quiet=True)


def test_balance_reaches_the_questions_and_a_changed_one_synthesises_again(tmp_path: Path) -> None:
    from kg_agents.cli.commands import main as cli

    kb = small_kg(tmp_path / "kb.tsv")
    out = tmp_path / "pack"
    args = [str(kb), "--out", str(out), "--budget", "tiny", "--stages", "synth", "--no-register"]

    def synth_record() -> tuple[dict, dict]:
        stats = json.loads((out / "questions" / "stats.json").read_text(encoding="utf-8"))
        return stats, json.loads((out / "pack.json").read_text(encoding="utf-8"))["stages"]["synth"]

    assert cli(["specialise", *args]) == 0
    stats, by_path = synth_record()
    assert stats["settings"]["balance"] == "path"
    assert cli(["specialise", *args, "--balance", "direction"]) == 0  # another setting: synthesised again
    stats, by_direction = synth_record()
    assert (
        stats["settings"]["balance"] == "direction"
        and by_direction["settings_key"] != by_path["settings_key"]
    )
    written = (out / "questions" / "stats.json").stat().st_mtime_ns
    assert cli(["specialise", *args, "--balance", "direction"]) == 0  # the same: not run again
    assert (out / "questions" / "stats.json").stat().st_mtime_ns == written
    with pytest.raises(ConfigError, match="balance"):
        specialise(str(kb), tmp_path / "p2", budget="tiny", stages="synth", balance="hops", quiet=True)


@pytest.mark.integration
@pytest.mark.slow
def test_a_pack_built_end_to_end_answers_with_its_components(tmp_path: Path) -> None:
    from kg_agents.core.registry import create_graph
    from kg_agents.kg import open_kg
    from kg_agents.packs import Pack, find_pack

    kb = small_kg(tmp_path / "kb.tsv")
    out = tmp_path / "pack"
    data = specialise(str(kb), out, budget="tiny", methods=("dualr", "knowledge_navigator"), quiet=True)
    assert set(data["components"]) >= {"hop_classifier", "dualr", "gcr_path_generator", "specialist"}
    assert set(data["stages"]) == {"synth", "hops", "dualr", "gcr", "specialist", "evaluate"}
    val = data["stages"]["evaluate"]["validation"]["synthesised"]
    assert set(val) == {"dualr", "knowledge_navigator"} and all(
        v["n"] == BUDGETS["tiny"].eval_questions for v in val.values()
    )
    # the manifest on disk is the one returned, and it loads as a pack
    assert json.loads((out / "pack.json").read_text()) == json.loads(json.dumps(data, default=str))
    pack = Pack.load(out)
    # the pack is registered for the KG's fingerprint: the same triples opened again find it
    kg = open_kg(str(kb))
    assert find_pack(kg) is not None and Path(find_pack(kg).directory).resolve() == out.resolve()
    assert pack.component_path("dualr") is not None
    # a rerun does nothing more: every stage is done with the same settings
    again = specialise(str(kb), out, budget="tiny", methods=("dualr", "knowledge_navigator"), quiet=True)
    assert again["stages"] == data["stages"]
    # and a method answers with the pack's GNN: an answer that is a KG entity on a verified path
    q = json.loads((out / "questions" / "validation.jsonl").read_text().splitlines()[0])
    graph = create_graph("dualr", kg, answer_with="gnn", pack=str(out))
    res = graph.invoke({"question": q["question"], "topic_entities": q["topic_entities"]})
    assert res["answers"] and all(kg.has_entity(a) for a in res["answers"])
    assert res["paths"] and res["paths"][0].end in res["answers"]


def test_a_built_pack_walks_the_closest_chain_s_length_and_ranks_with_the_right_model(tmp_path: Path) -> None:
    """A classifier trained on synthesised questions learns their wording: a built pack's walks are as
    long as the relation chain closest to the question, and gcr keeps its trie of every path of 1..L
    hops (a trie of one wrong depth has no right path); the methods whose every step the chat model
    ranks run the zero-shot model, the others the pack's specialist."""
    from kg_agents.kg import open_kg
    from kg_agents.packs import Pack
    from kg_agents.specialise import _BuildManifest

    kb = small_kg(tmp_path / "kb.tsv")
    root = tmp_path / "pack"
    root.mkdir()
    build = _BuildManifest.open_or_create(root, open_kg(str(kb)), source=str(kb))
    for name, path in (("hop_classifier", "hop_classifier"), ("gcr_path_generator", "gcr")):
        (root / path).mkdir()
        build.add_component(name, path, record={})
    build.add_component("specialist", str(fake_adapter(root / "specialist").relative_to(root)), record={})
    pack = Pack.load(root)
    for method in ("graph_explore", "graph_agent", "knowledge_navigator"):
        assert pack.auto_hops(method) == "chain" and not pack.predicts(method)
        assert pack.specialist_for(method) is None  # the zero-shot model ranks their every step
    assert pack.auto_hops("graph_rag", "answer_hops") == "chain"
    assert pack.route("gcr")["adapter"] == "gcr_path_generator" and not pack.auto_hops("gcr")
    for method in ("gcr", "dualr", "graph_rag", "text_rag"):
        assert pack.specialist_for(method) == (root / "specialist").resolve()


def test_your_own_questions_are_answered_with_the_pack_and_with_none_in_the_same_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``questions`` the evaluate stage runs every method on them twice, with the pack and with
    ``pack=none`` (the zero-shot peer), and the manifest and the summary carry both; the synthesised
    validation questions get the pack's run only. The evaluations themselves are faked here (each
    `kg-agents eval` process writes the summary it would); the end-to-end build above runs them."""
    import subprocess

    kb = small_kg(tmp_path / "kb.tsv")
    out = tmp_path / "pack"
    specialise(str(kb), out, budget="tiny", stages="synth", quiet=True, register=False)
    own = tmp_path / "mine.jsonl"
    own.write_text((out / "questions" / "validation.jsonl").read_text().splitlines()[0] + "\n")
    argvs: list[list[str]] = []

    def fake_eval(argv: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        argvs.append(argv)
        run = Path(argv[argv.index("--out") + 1])
        run.mkdir(parents=True)
        hits = 0.25 if argv[argv.index("--set") + 1] == "pack=none" else 0.75
        (run / "summary.json").write_text(json.dumps({"n": 1, "hits@1": hits, "f1": hits}))
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(subprocess, "run", fake_eval)
    methods = ("dualr", "graph_rag")
    data = specialise(str(kb), out, budget="tiny", stages="evaluate", questions=str(own), methods=methods)
    sets = [
        (a[a.index("--questions") + 1], a[a.index("--set") + 1], a[a.index("--method") + 1]) for a in argvs
    ]
    pack_opt = f"pack={out.resolve()}"
    val = str(out / "questions" / "validation.jsonl")
    assert sorted(sets) == sorted(
        [(val, pack_opt, m) for m in methods]
        + [(str(own), pack_opt, m) for m in methods]
        + [(str(own), "pack=none", m) for m in methods]
    )
    figures = data["stages"]["evaluate"]["validation"]
    assert {m: v["hits@1"] for m, v in figures["own"].items()} == {"dualr": 0.75, "graph_rag": 0.75}
    assert {m: v["hits@1"] for m, v in figures["own_no_pack"].items()} == {"dualr": 0.25, "graph_rag": 0.25}
    assert "your questions, hits@1 with the pack / with none: dualr 0.750 / 0.250" in capsys.readouterr().err
    # a rerun with the same questions does nothing more
    argvs.clear()
    specialise(
        str(kb), out, budget="tiny", stages="evaluate", questions=str(own), methods=methods, quiet=True
    )
    assert argvs == []
    # another version's routes: the pack takes them when reopened, and its evaluation runs again
    import kg_agents.specialise as sp

    monkeypatch.setattr(sp, "ROUTES", {"graph_rag": ("one hop out, zero-shot", {"adapter": "none"})})
    specialise(
        str(kb), out, budget="tiny", stages="evaluate", questions=str(own), methods=methods, quiet=True
    )
    assert len(argvs) == 3 * len(methods)
    routes = json.loads((out / "pack.json").read_text())["routes"]
    assert routes == {"graph_rag": {"adapter": "none", "summary": "one hop out, zero-shot"}}
    # --eval-questions sizes the evaluate stage (each set, each method): another setting, run again
    from kg_agents.cli.commands import main as cli

    argvs.clear()
    args = ["specialise", str(kb), "--out", str(out), "--budget", "tiny", "--stages", "evaluate"]
    args += ["--questions", str(own), "--methods", "dualr", "--no-register"]
    assert cli([*args, "--eval-questions", "0"]) == 2 and argvs == []
    assert cli([*args, "--eval-questions", "7"]) == 0
    assert len(argvs) == 3 and all(a[a.index("--limit") + 1] == "7" for a in argvs)
