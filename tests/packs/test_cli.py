"""``kg-agents pack show|list|register|unregister``, and the pack an evaluation records in run.json."""

from __future__ import annotations

import json

from kg_agents.cli import commands as cli
from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.packs import Pack, bundled_packs
from tests.fakes import FakeChat
from tests.packs.helpers import hop_pack

KG = MemoryKG([tuple(t) for t in CONTRACT_TRIPLES])


def test_show_prints_the_kg_components_figures_and_routes(tmp_path, capsys):
    folder = hop_pack(tmp_path / "p", KG)
    assert cli.main(["pack", "show", str(folder)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == f"pack tiny  ({folder.resolve()})"
    assert f"{len(KG)} triples" in lines[1] and lines[1].endswith("; a test")
    assert "  hop_classifier: hops" in lines and "    trained: 4 questions" in lines
    assert "    validation: accuracy 1.000" in lines
    assert "  graph_explore: hops=predict" in lines and "    the walk's length is predicted" in lines


def test_show_prints_a_built_pack_s_stages_and_its_evaluation_a_set_a_line(tmp_path, capsys):
    from kg_agents.packs import PackManifest, write_manifest

    folder = hop_pack(tmp_path / "p", KG)
    m = PackManifest.read(folder)
    run = {"n": 10, "hits@1": 0.5, "f1": 0.25, "avg_seconds": 3.0}
    m.stages.update(
        synth={"seconds": 1.7, "settings_key": "a"},
        evaluate={
            "validation": {
                "own": {"dualr": run},
                "own_no_pack": {"dualr": {**run, "hits@1": 0.4, "f1": None}},
            },
            "seconds": 191.0,
        },
        legacy="done",
    )
    write_manifest(folder, m)
    assert cli.main(["pack", "show", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "stages: synth 2 s, evaluate 191 s, legacy done" in lines
    i = lines.index("evaluation (exact Hits@1 / F1, questions):")
    assert lines[i + 1 :] == [
        "  your questions, with the pack: dualr 0.500 / 0.250 (10)",
        "  your questions, with no pack: dualr 0.400 / - (10)",
    ]
    assert not any("settings_key" in line for line in lines)


def test_show_auto_finds_the_bundled_pack_on_metaqa(capsys):
    assert cli.main(["pack", "show", "auto"]) == 0
    out = capsys.readouterr().out
    (pack,) = bundled_packs()
    assert out.startswith("pack metaqa  (") and pack.fingerprint in out and "133,582 triples" in out
    assert "  specialist.graph_explore: package:specialist/checkpoints/metaqa-ge" in out
    assert "validation: split " in out and "hits@1 1=0.955 2=0.940 3=0.900" in out
    assert "  graph_explore: adapter=specialist.graph_explore, hops=predict" in out
    assert "  gcr: adapter=gcr_path_generator, general_adapter=specialist.gcr, hops=predict" in out


def test_register_list_unregister(tmp_path, capsys):
    kb = tmp_path / "kb.tsv"
    kb.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in CONTRACT_TRIPLES), encoding="utf-8")
    assert cli.main(["pack", "show", "auto", "--kg", str(kb)]) == 2
    assert "no pack is registered for the KG" in capsys.readouterr().err
    folder = hop_pack(tmp_path / "p", KG)
    assert cli.main(["pack", "register", str(folder)]) == 0
    assert "registered pack tiny" in capsys.readouterr().out
    assert cli.main(["pack", "show", "auto", "--kg", str(kb)]) == 0
    assert capsys.readouterr().out.startswith("pack tiny")
    assert cli.main(["pack", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert listed[0].startswith("metaqa ") and listed[0].split()[-2] == "bundled"
    assert listed[1].startswith("tiny ") and listed[1].endswith(str(folder.resolve()))
    assert cli.main(["pack", "unregister", str(folder)]) == 0
    assert cli.main(["pack", "unregister", str(folder)]) == 2
    assert "is not registered" in capsys.readouterr().err
    assert cli.main(["pack", "show", str(tmp_path)]) == 2  # not a pack


def test_eval_records_the_pack_in_run_json(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(
        "kg_agents.cli.setup.resolve_model",
        lambda spec, **kw: FakeChat(rules={"[Splash]": "Answer: Ron Howard"}),
    )
    kb = tmp_path / "kb.tsv"
    kb.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in CONTRACT_TRIPLES), encoding="utf-8")
    qs = tmp_path / "qs.txt"
    qs.write_text("who directed [Splash]\tRon Howard\n", encoding="utf-8")
    folder = hop_pack(tmp_path / "p", KG, routes={})
    args = ["eval", "--method", "graph_rag", "--kg", str(kb), "--questions", str(qs), "--no-progress"]
    assert cli.main([*args, "--out", str(tmp_path / "none")]) == 0
    assert json.loads((tmp_path / "none" / "run.json").read_text())["pack"] is None
    run = [*args, "--out", str(tmp_path / "run"), "--set", f"pack={folder}"]
    monkeypatch.chdir(tmp_path)  # the pack's folder is recorded relative to the working directory
    assert cli.main(run) == 0
    recorded = json.loads((tmp_path / "run" / "run.json").read_text())["pack"]
    assert recorded == {"name": "tiny", "fingerprint": Pack.load(folder).fingerprint, "directory": "p"}
    # pack="auto" found none for the first run; once one is registered, that run is not resumed with it
    cli.main(["pack", "register", str(folder)])
    capsys.readouterr()
    assert cli.main([*args, "--out", str(tmp_path / "none")]) == 2
    assert "differs in {'pack'" in capsys.readouterr().err
