"""The registry: register, find by the KG's content, resolve a method's ``pack`` option, unregister;
a registered pack comes before a bundled one for the same KG, and every test has its own registry."""

from __future__ import annotations

import json
import os

import pytest

from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.kg import MemoryKG, open_kg
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.packs import (
    HOP_CLASSIFIER,
    Pack,
    bundled_packs,
    find_pack,
    pack_record,
    register_pack,
    registered_packs,
    registry_path,
    resolve_pack,
    unregister_pack,
    write_manifest,
)
from kg_agents.packs.registry import PACKS_ENV
from tests.packs.helpers import hop_pack, manifest_for, train_tiny_hops

KG = MemoryKG([tuple(t) for t in CONTRACT_TRIPLES])


def test_every_test_has_a_registry_of_its_own(tmp_path):
    assert registry_path().parent == type(tmp_path)(os.environ[PACKS_ENV])
    assert registry_path().parent.name.startswith("packs") and registered_packs() == []


def test_register_find_resolve_unregister(tmp_path):
    assert find_pack(KG) is None and resolve_pack(KG, "auto") is None
    pack = register_pack(hop_pack(tmp_path / "p", KG))
    assert [p.directory for p in registered_packs()] == [pack.directory]
    assert (
        find_pack(MemoryKG(list(reversed([tuple(t) for t in CONTRACT_TRIPLES])))).directory == pack.directory
    )
    assert resolve_pack(KG, "auto").directory == pack.directory
    assert find_pack(MemoryKG([("a", "r", "b")])) is None  # another KG
    saved = json.loads(registry_path().read_text())
    assert saved["packs"][0]["fingerprint"] == pack.fingerprint and saved["packs"][0]["triples"] == len(KG)
    assert unregister_pack(tmp_path / "p") is True and unregister_pack(tmp_path / "p") is False
    assert find_pack(KG) is None


def test_a_newer_pack_for_the_same_kg_replaces_the_older(tmp_path):
    first = register_pack(hop_pack(tmp_path / "a", KG))
    second = register_pack(hop_pack(tmp_path / "b", KG))
    assert [p.directory for p in registered_packs()] == [second.directory] != [first.directory]
    register_pack(tmp_path / "b")  # registering again keeps one entry
    assert len(registered_packs()) == 1 and find_pack(KG).directory == second.directory


def test_resolve_forms(tmp_path):
    folder = hop_pack(tmp_path / "p", KG)
    by_dir = resolve_pack(KG, str(folder))
    assert isinstance(by_dir, Pack) and resolve_pack(KG, folder).directory == by_dir.directory
    assert resolve_pack(KG, by_dir) is by_dir and resolve_pack(KG, "none") is None
    assert resolve_pack(KG, None) is None
    other = MemoryKG([("a", "r", "b")])
    assert resolve_pack(other, str(folder)).directory == by_dir.directory  # a named pack is used as it is
    for bad in ("", 3, ["auto"]):
        with pytest.raises(ConfigError, match="pack must be"):
            resolve_pack(KG, bad)
    with pytest.raises(ConfigError, match="not a KG pack"):
        resolve_pack(KG, str(tmp_path / "nowhere"))
    assert pack_record(by_dir) == by_dir.record() and pack_record(None) is None


def test_a_registered_pack_comes_before_the_bundled_one(tmp_path):
    metaqa = open_kg("metaqa")
    (bundled,) = bundled_packs()
    assert find_pack(metaqa).directory == bundled.directory
    m = manifest_for(KG, "my-metaqa")
    m.kg = dict(bundled.manifest.kg)  # built for MetaQA: its fingerprint
    train_tiny_hops(tmp_path / "mine" / "hops")
    m.add_component(HOP_CLASSIFIER, "hops")
    write_manifest(tmp_path / "mine", m)
    register_pack(tmp_path / "mine")
    assert find_pack(metaqa).name == "my-metaqa"


def test_a_broken_registered_pack_is_an_error_only_for_its_kg(tmp_path):
    register_pack(hop_pack(tmp_path / "p", KG))
    (tmp_path / "p" / "pack.json").write_text("{", encoding="utf-8")
    assert find_pack(MemoryKG([("a", "r", "b")])) is None  # not this KG's: never read
    with pytest.raises(DataFormatError, match="the pack registered for this KG"):
        find_pack(KG)
    with pytest.raises(DataFormatError, match="pack unregister"):
        registered_packs()
    unregister_pack(tmp_path / "p")
    assert find_pack(KG) is None


def test_a_damaged_registry_names_itself():
    registry_path().parent.mkdir(parents=True, exist_ok=True)
    registry_path().write_text('{"packs": 3}', encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"registry\.json"):
        find_pack(KG)


def test_a_bundled_packs_record_names_it_inside_the_package_and_loads_back():
    (bundled,) = bundled_packs()
    record = pack_record(bundled, root="/")
    assert record == {
        "name": "metaqa",
        "fingerprint": bundled.fingerprint,
        "directory": "package:packs/bundled/metaqa",
    }
    assert resolve_pack(None, record["directory"]).directory == bundled.directory
    with pytest.raises(ConfigError, match="not a KG pack"):
        resolve_pack(None, "package:packs/nowhere")
