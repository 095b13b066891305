"""The content fingerprint: the same triples give the same fingerprint whatever store holds them and
in whatever order; one changed triple changes it; large graphs have none; it is kept per KG object and
on disk."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import kg_agents.packs.fingerprint as fp
from kg_agents.core.metering import MeteredKG
from kg_agents.kg import MemoryKG, open_kg
from kg_agents.kg.export import write_ntriples
from kg_agents.kg.rdf import RdfKG
from kg_agents.kg.sparql import SparqlKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.packs import PackWarning, find_pack, fingerprint_status, kg_fingerprint, kg_summary
from tests.kg.test_sparql import MiniEndpoint


def write_tsv(path: Path, triples: list[tuple[str, str, str]]) -> Path:
    path.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in triples), encoding="utf-8")
    return path


def test_the_same_triples_have_one_fingerprint_in_every_store(tmp_path):
    triples = [tuple(t) for t in CONTRACT_TRIPLES]
    memory = MemoryKG(triples)
    want = kg_fingerprint(memory)
    assert want is not None and len(want) == 32
    tsv = write_tsv(tmp_path / "kb.tsv", list(reversed(triples)) + triples[:3])  # reordered, with repeats
    nt = write_ntriples(memory, tmp_path / "kb.nt", profile="metaqa").path
    stores = {
        "tsv": MemoryKG.from_file(tsv),
        "open_kg tsv": open_kg(str(tsv), cache=False),
        "rdf tsv": RdfKG.from_file(tsv),
        "rdf nt": open_kg(str(nt), store="rdf", profile="metaqa"),
        "metered": MeteredKG(memory),
    }
    assert {name: kg_fingerprint(kg) for name, kg in stores.items()} == dict.fromkeys(stores, want)
    summary = kg_summary(stores["rdf nt"])
    assert summary is not None and summary.triples == len(memory) == len(set(triples))
    assert summary.entities == len({e for h, _, t in triples for e in (h, t)})
    assert summary.relations == len({r for _, r, _ in triples})


def test_a_sparql_endpoint_pages_every_edge_once(tmp_path):
    memory = MemoryKG([tuple(t) for t in CONTRACT_TRIPLES])
    nt = write_ntriples(memory, tmp_path / "kb.nt", profile="metaqa").path  # labels as literals too
    ep = MiniEndpoint(nt)
    try:
        kg = SparqlKG(ep.url, profile="metaqa", cache_size=0)
        kg.edge_page_size = 4  # many pages, a subject's edges split across two of them
        assert kg.count_edges() == len(memory)
        listed = list(kg.iter_triples())
        assert len(listed) == len(set(listed)) == len(memory) and set(listed) == set(memory.iter_triples())
        pages = [r for r in ep.requests if "ORDER BY ?k" in r["params"]["query"][0]]
        assert len(pages) == len(memory) // 4 + 1
        assert kg_fingerprint(kg) == kg_fingerprint(memory)
    finally:
        ep.close()


def test_one_changed_triple_changes_the_fingerprint():
    triples = [tuple(t) for t in CONTRACT_TRIPLES]
    base = kg_fingerprint(MemoryKG(triples))
    h, r, _ = triples[0]
    changed = [(h, r, "Somebody Else"), *triples[1:]]
    assert kg_fingerprint(MemoryKG(changed)) != base
    assert kg_fingerprint(MemoryKG(triples[1:])) != base  # one fewer
    swapped = [(triples[0][2], r, h), *triples[1:]]  # the same ends, the other direction
    assert kg_fingerprint(MemoryKG(swapped)) != base
    # the name and labels are not content
    assert kg_fingerprint(MemoryKG(triples, name="metaqa", labels={h: "another label"})) == base


def test_a_graph_above_the_cap_has_no_fingerprint_and_auto_says_why():
    kg = MemoryKG([tuple(t) for t in CONTRACT_TRIPLES])
    summary, why = fingerprint_status(kg, max_triples=3)
    assert summary is None and "more than the 3 a fingerprint reads" in why


def test_a_store_that_cannot_list_its_triples_has_none(monkeypatch):
    class Opaque:
        def __init__(self, kg):
            self.kg = kg

        def __len__(self):
            return len(self.kg)

    kg = Opaque(MemoryKG([tuple(t) for t in CONTRACT_TRIPLES]))
    assert kg_fingerprint(kg) is None
    # find_pack only hashes where a pack's KG has as many edges; make the bundled pack's count match
    monkeypatch.setattr(fp, "edge_count", lambda kg: None)
    monkeypatch.setattr("kg_agents.packs.registry.edge_count", lambda kg: None)
    with pytest.warns(PackWarning, match="no iter_triples"):
        assert find_pack(kg) is None


def test_kept_per_object_and_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("KG_AGENTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(fp, "DISK_CACHE_MIN_TRIPLES", 1)
    triples = [tuple(t) for t in CONTRACT_TRIPLES]
    kg = MemoryKG(triples)
    first = fp.kg_summary(kg)
    files = list((tmp_path / "cache" / "packs" / "fingerprints").glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["fingerprint"] == first.fingerprint

    def no_hashing(triples):
        raise AssertionError("hashed again")

    hashing = fp.fingerprint_triples
    monkeypatch.setattr(fp, "fingerprint_triples", no_hashing)
    assert fp.kg_summary(kg) == first  # this object's
    assert fp.kg_summary(MemoryKG(triples)) == first  # another object, the same content: from disk
    files[0].write_text("{not json", encoding="utf-8")  # a damaged cache file is computed again
    monkeypatch.setattr(fp, "fingerprint_triples", hashing)
    assert fp.kg_summary(MemoryKG(triples)) == first
    assert json.loads(files[0].read_text())["fingerprint"] == first.fingerprint  # and written again


def test_the_bundled_pack_s_fingerprint_is_that_of_the_bundled_metaqa_graph(tmp_path):
    metaqa = open_kg("metaqa")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PackWarning)
        pack = find_pack(metaqa)
    assert pack is not None and pack.name == "metaqa" and pack.fingerprint == kg_fingerprint(metaqa)
    tsv = write_tsv(tmp_path / "metaqa.tsv", [(t.head, t.relation, t.tail) for t in metaqa.iter_triples()])
    again = find_pack(MemoryKG.from_file(tsv))
    assert again is not None and again.directory == pack.directory
    assert pack.triples == len(metaqa) and pack.manifest.kg["entities"] == kg_summary(metaqa).entities


@pytest.mark.server
@pytest.mark.integration
def test_metaqa_on_a_sparql_server_finds_the_bundled_pack(sparql_server, tmp_path, monkeypatch):
    from tests.servers import METAQA_GRAPH

    monkeypatch.setenv("KG_AGENTS_CACHE", str(tmp_path))  # hashed here, not read from an earlier run
    kg = SparqlKG(sparql_server.endpoint, profile="metaqa", graph=METAQA_GRAPH, timeout=60)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PackWarning)
        pack = find_pack(kg)
    assert pack is not None and pack.name == "metaqa"
    assert kg_summary(kg) == kg_summary(open_kg("metaqa"))
