from __future__ import annotations

import gzip

import pytest

from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.kg import MemoryKG, Path, Triple, open_kg, verify_paths
from kg_agents.kg.paths import enumerate_paths, shortest_paths
from kg_agents.kg.testing import CONTRACT_TRIPLES, KnowledgeGraphContract, write_contract_ntriples


class TestMemoryKGContract(KnowledgeGraphContract):
    @pytest.fixture
    def kg(self):
        return MemoryKG(CONTRACT_TRIPLES, name="contract")


class TestMemoryKGFromNTriplesContract(KnowledgeGraphContract):
    """The same store loaded from N-Triples: ids are IRIs, so strip the namespace via labels."""

    @pytest.fixture
    def kg(self, tmp_path_factory):
        from kg_agents.kg.testing import CONTRACT_ENTITY_NS, CONTRACT_RELATION_NS

        p = write_contract_ntriples(tmp_path_factory.mktemp("nt") / "c.nt")
        raw = MemoryKG.from_file(p)
        from urllib.parse import unquote

        def local(x: str) -> str:
            for ns in (CONTRACT_ENTITY_NS, CONTRACT_RELATION_NS):
                if x.startswith(ns):
                    return unquote(x[len(ns) :])
            return x

        assert all(raw.label(e) == local(e) for e, _ in raw.iter_labels())
        return MemoryKG([(local(t.head), local(t.relation), local(t.tail)) for t in raw.iter_triples()])


def test_metaqa_bundled_loads():
    kg = open_kg("metaqa")
    assert len(kg) == 133_582
    assert kg.num_entities == 43_234
    assert len(kg.all_relations()) == 9
    assert kg.has_triple("Splash", "written_by", "Babaloo Mandel")
    assert open_kg("metaqa") is kg  # cached


def test_duplicates_dropped():
    kg = MemoryKG([("a", "r", "b"), ("a", "r", "b"), ("a", "s", "b")])
    assert len(kg) == 2


def test_malformed_file_names_line(tmp_path):
    p = tmp_path / "kb.txt"
    p.write_text("a|r|b\nc|d\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as ei:
        MemoryKG.from_file(p, fmt="metaqa")
    assert ei.value.line == 2 and "kb.txt:2" in str(ei.value)


def test_gzip_tsv(tmp_path):
    p = tmp_path / "kb.tsv.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write("x\tr\ty\ny\tr\tz\n")
    kg = MemoryKG.from_file(p)
    assert kg.has_triple("y", "r", "z")


def test_turtle(tmp_path):
    p = tmp_path / "g.ttl"
    p.write_text(
        "@prefix ex: <http://ex.org/> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        'ex:a ex:knows ex:b ; rdfs:label "Alice" ; ex:age "30" .\n',
        encoding="utf-8",
    )
    kg = MemoryKG.from_file(p)
    assert kg.label("http://ex.org/a") == "Alice"
    assert kg.features("http://ex.org/a")["http://ex.org/age"] == "30"
    assert kg.has_triple("http://ex.org/a", "http://ex.org/knows", "http://ex.org/b")


def test_bad_turtle(tmp_path):
    p = tmp_path / "g.ttl"
    p.write_text("this is not turtle .\n", encoding="utf-8")
    with pytest.raises(DataFormatError):
        MemoryKG.from_file(p)


def test_open_kg_unknown_name():
    with pytest.raises(ConfigError, match="metaqa"):
        open_kg("nosuchkg")
    with pytest.raises(FileNotFoundError):
        open_kg("/no/such/file.nt")


def test_limit_validation():
    kg = MemoryKG(CONTRACT_TRIPLES)
    with pytest.raises(ValueError):
        kg.neighbors("Splash", limit=-1)


def test_path_text_round_trip():
    p = Path.from_triples(
        "Babaloo Mandel",
        [Triple("Splash", "written_by", "Babaloo Mandel"), Triple("Splash", "directed_by", "Ron Howard")],
    )
    text = p.to_text()
    assert text == "Babaloo Mandel -> ~written_by -> Splash -> directed_by -> Ron Howard"
    assert Path.from_text(text) == p
    assert p.start == "Babaloo Mandel" and p.end == "Ron Howard" and len(p) == 2
    with pytest.raises(ValueError):
        Path.from_text("a -> b")
    with pytest.raises(ValueError):
        Path.from_triples("x", [Triple("a", "r", "b")])


def test_verify_paths_counts_dropped():
    kg = MemoryKG(CONTRACT_TRIPLES)
    good = Path.from_text("Splash -> directed_by -> Ron Howard")
    bad = Path.from_text("Splash -> directed_by -> Penny Marshall")
    kept, dropped = verify_paths(kg, [good, bad])
    assert kept == [good] and dropped == 1


def test_enumerate_paths_limits():
    kg = MemoryKG(CONTRACT_TRIPLES)
    res = enumerate_paths(kg, ["Tom Hanks"], max_hops=2, fanout_limit=2)
    assert "Tom Hanks" in res.fanout_truncated and res.truncated
    res = enumerate_paths(kg, ["Tom Hanks"], max_hops=2, max_paths=3)
    assert len(res.paths) == 3 and res.path_limit_hit
    res = enumerate_paths(kg, ["Tom Hanks"], max_hops=1, direction="out")
    assert res.paths == []


def test_enumerate_paths_no_cycles_and_levels():
    kg = MemoryKG(CONTRACT_TRIPLES)
    res = enumerate_paths(kg, ["Splash"], max_hops=3)
    for p in res.paths:
        assert len(set(p.entities)) == len(p.entities)
    assert max(len(p) for p in res.paths) == 3
    assert [len(p) for p in res.paths] == sorted(len(p) for p in res.paths)


def test_shortest_paths_metaqa():
    kg = open_kg("metaqa")
    res = shortest_paths(kg, ["Babaloo Mandel"], ["Ron Howard"], max_hops=3)
    assert res.paths and all(len(p) == 2 for p in res.paths)
    _kept, dropped = verify_paths(kg, res.paths)
    assert dropped == 0
    assert shortest_paths(kg, ["Splash"], ["Splash"]).paths == []
