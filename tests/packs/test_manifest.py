"""The pack manifest: written one component at a time and read back; every way it can be wrong is a
typed error naming the manifest."""

from __future__ import annotations

import json

import pytest

from kg_agents.core.models import specialist_for
from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.packs import (
    COMPONENTS,
    DUALR,
    HOP_CLASSIFIER,
    NO_ADAPTER,
    PACK_FORMAT,
    SPECIALIST,
    Pack,
    PackManifest,
    bundled_packs,
    write_manifest,
)
from kg_agents.packs.manifest import MANIFEST, PACKAGE_ROOT
from tests.packs.helpers import fake_adapter, manifest_for, train_tiny_hops

KG = MemoryKG([tuple(t) for t in CONTRACT_TRIPLES])


def test_components_are_added_one_at_a_time_and_read_back(tmp_path):
    m = manifest_for(KG, "mine")
    m.stages["synthesise"] = "done"
    write_manifest(tmp_path, m)  # begun: no component yet
    assert Pack.load(tmp_path).paths == {}
    train_tiny_hops(tmp_path / "hops")
    m.add_component(
        HOP_CLASSIFIER, "hops", record={"headline": "tiny", "n_train": 4}, validation={"acc": 1.0}
    )
    write_manifest(tmp_path, m)
    fake_adapter(tmp_path / "adapters" / "shared")
    fake_adapter(tmp_path / "adapters" / "ge")
    m.add_component(SPECIALIST, "adapters/shared")
    m.add_component(f"{SPECIALIST}.graph_explore", "adapters/ge", validation={"hits@1": {"1": 0.5}})
    m.set_route(
        "graph_explore", "the walk follows the classifier", hops="predict", adapter="specialist.graph_explore"
    )
    write_manifest(tmp_path, m)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adapters", "hops", MANIFEST]  # no temporaries

    pack = Pack.load(tmp_path)
    data = json.loads((tmp_path / MANIFEST).read_text())
    assert data["format"] == PACK_FORMAT and data["stages"] == {"synthesise": "done"}
    assert PackManifest.from_json(data).to_json() == data == m.to_json()
    assert pack.name == "mine" and pack.fingerprint == m.kg["fingerprint"] and pack.triples == len(KG)
    assert pack.component_path(HOP_CLASSIFIER) == (tmp_path / "hops").resolve()
    assert pack.component_path(DUALR) is None
    assert pack.specialist_for("graph_explore") == (tmp_path / "adapters" / "ge").resolve()
    assert pack.specialist_for("graph_agent") == (tmp_path / "adapters" / "shared").resolve()
    assert pack.specialist_for(None) == (tmp_path / "adapters" / "shared").resolve()
    assert pack.predicts("graph_explore") and not pack.predicts("graph_agent")
    assert pack.routes["graph_explore"]["summary"] == "the walk follows the classifier"
    # a record travels: the folder relative to a root it lies below, else only the name and fingerprint
    assert pack.record() == {"name": "mine", "fingerprint": pack.fingerprint}
    assert pack.record(tmp_path.parent)["directory"] == tmp_path.name


def test_a_pack_without_a_shared_specialist_gives_none_to_other_methods(tmp_path):
    m = manifest_for(KG)
    fake_adapter(tmp_path / "kn")
    m.add_component(f"{SPECIALIST}.knowledge_navigator", "kn")
    write_manifest(tmp_path, m)
    pack = Pack.load(tmp_path)
    assert pack.specialist_for("knowledge_navigator") is not None and pack.specialist_for("graph_rag") is None


def test_a_route_names_the_adapter_of_a_methods_chat_model(tmp_path):
    m = manifest_for(KG)
    for name, folder in [
        (SPECIALIST, "shared"),
        (f"{SPECIALIST}.gcr", "gcr"),
        (f"{SPECIALIST}.graph_agent", "ga"),
    ]:
        fake_adapter(tmp_path / folder)
        m.add_component(name, folder)
    m.set_route("knowledge_navigator", "the zero-shot model ranks", adapter=NO_ADAPTER)
    m.set_route("graph_agent", "the shared specialist ranks", adapter=SPECIALIST)
    m.set_route(
        "gcr", "the path generator is not a chat adapter", adapter=SPECIALIST, general_adapter=NO_ADAPTER
    )
    m.set_route("dualr", "its walk is as long as the closest chain", hops="chain")
    write_manifest(tmp_path, m)
    pack = Pack.load(tmp_path)
    assert (
        pack.specialist_for("knowledge_navigator") is None
    )  # the route says none, though a shared one is in
    assert pack.specialist_for("graph_agent") == (tmp_path / "shared").resolve()  # the route's, not its own
    assert pack.specialist_for("gcr") is None  # gcr's chat adapter is its general_adapter
    assert pack.specialist_for("dualr") == (tmp_path / "shared").resolve()  # the route names none: shared
    assert pack.specialist_for("graph_explore") == (tmp_path / "shared").resolve()  # no route
    assert specialist_for(pack, "auto", "knowledge_navigator") is None
    assert specialist_for(pack, "auto", "graph_agent") == str((tmp_path / "shared").resolve())


def test_the_bundled_pack_points_into_the_package():
    (pack,) = bundled_packs()
    assert set(pack.paths) == set(COMPONENTS)
    assert all(p.is_relative_to(PACKAGE_ROOT) and p.exists() for p in pack.paths.values())
    assert pack.component_path(DUALR) == PACKAGE_ROOT / "methods" / "dualr" / "checkpoints" / "metaqa.pt"
    comps = pack.manifest.components
    assert all(c["record"]["headline"] and c["validation"] for c in comps.values())
    assert {m for m in pack.routes if pack.predicts(m)} == {"graph_agent", "graph_explore", "gcr"}
    assert pack.predicts("graph_rag", "answer_hops") and pack.predicts("text_rag", "answer_hops")
    assert "llm_only" not in pack.routes


def test_a_folder_without_a_manifest_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"not a KG pack .*kg-agents specialise"):
        Pack.load(tmp_path)


def _write(tmp_path, data):
    (tmp_path / MANIFEST).write_text(
        json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8"
    )


def _valid(**changes):
    data = manifest_for(KG).to_json()
    data.update(changes)
    return data


@pytest.mark.parametrize(
    "data,match",
    [
        ('{"format": "kg-agents-pack/1",\n  "name": ', "not valid JSON"),
        ([1, 2], "a JSON object"),
        (_valid(format="kg-agents-pack/0"), "format must be"),
        (_valid(name=""), "name must be"),
        (_valid(kg={"triples": 3}), "fingerprint"),
        (_valid(kg={"fingerprint": "ab", "triples": -1, "entities": 1, "relations": 1}), "kg.triples"),
        (_valid(components={"tokenizer": {"path": "x"}}), "unknown component 'tokenizer'"),
        (_valid(components={DUALR: {"record": {}}}), 'needs a "path"'),
        (_valid(components={DUALR: {"path": "x", "record": []}}), "record must be"),
        (_valid(routes={"gcr": {"hops": "predict"}}), "summary"),
        (_valid(routes={"gcr": {"hops": ["a"], "summary": "s"}}), "short value"),
        (_valid(routes={"gcr": {"hops": "predict", "summary": "s"}}), "needs a hop_classifier"),
        (_valid(routes={"gcr": {"adapter": "gcr_path_generator", "summary": "s"}}), "does not have"),
    ],
)
def test_a_bad_manifest_is_a_data_format_error_naming_it(tmp_path, data, match):
    _write(tmp_path, data)
    with pytest.raises(DataFormatError, match=match) as ei:
        Pack.load(tmp_path)
    assert str(tmp_path / MANIFEST) in str(ei.value)
    if isinstance(data, str):
        assert ei.value.line == 2


@pytest.mark.parametrize(
    "path,match",
    [
        ("missing", "nothing at 'missing'"),
        ("../outside", "leads outside the pack's folder"),
        ("sub/../../outside", "leads outside the pack's folder"),
        ("package:../../etc", "leads outside the kg_agents package"),
        ("package:methods/nowhere.pt", "nothing at"),
    ],
)
def test_a_component_path_that_is_missing_or_escapes_is_refused(tmp_path, path, match):
    pack_dir = tmp_path / "pack"
    (tmp_path / "outside").mkdir()
    pack_dir.mkdir()
    _write(pack_dir, _valid(components={DUALR: {"path": path}}))
    with pytest.raises(DataFormatError, match=match):
        Pack.load(pack_dir)
    m = manifest_for(KG)
    m.components[DUALR] = {"path": path, "record": {}, "validation": {}}
    with pytest.raises(DataFormatError, match=match):
        write_manifest(tmp_path / "other", m)  # nothing half-written either
    assert not (tmp_path / "other" / MANIFEST).exists()


def test_absolute_paths_and_unknown_names_are_refused_when_added(tmp_path):
    m = manifest_for(KG)
    with pytest.raises(ConfigError, match="relative"):
        m.add_component(DUALR, str(tmp_path / "x.pt"))
    with pytest.raises(ConfigError, match="unknown pack component"):
        m.add_component("specialist.graph_rag", "x")
    with pytest.raises(DataFormatError, match="must be relative"):
        _write(tmp_path, _valid(components={DUALR: {"path": str(tmp_path)}}))
        Pack.load(tmp_path)
    with pytest.raises(ConfigError, match="unknown pack component"):
        bundled_packs()[0].component_path("tokenizer")
