from __future__ import annotations

import gzip

import pytest

from kg_agents.errors import ConfigError, DataFormatError, EntityNotFound, KGError
from kg_agents.kg import Triple, open_kg
from kg_agents.kg.profiles import Profile
from kg_agents.kg.rdf import RdfKG
from kg_agents.kg.testing import (
    CONTRACT_ENTITY_NS,
    CONTRACT_RELATION_NS,
    CONTRACT_TRIPLES,
    KnowledgeGraphContract,
    write_contract_ntriples,
)

CONTRACT_PROFILE = Profile.namespaced(CONTRACT_ENTITY_NS, CONTRACT_RELATION_NS, name="contract")


class TestRdfKGOxigraphContract(KnowledgeGraphContract):
    @pytest.fixture(scope="class")
    @classmethod
    def kg(cls, tmp_path_factory):
        p = write_contract_ntriples(tmp_path_factory.mktemp("rdf") / "c.nt")
        return RdfKG.from_file(p, profile=CONTRACT_PROFILE)


class TestRdfKGRdflibMemoryContract(KnowledgeGraphContract):
    """The same queries through rdflib's own SPARQL engine and store."""

    @pytest.fixture(scope="class")
    @classmethod
    def kg(cls, tmp_path_factory):
        p = write_contract_ntriples(tmp_path_factory.mktemp("rdf") / "c.nt")
        return RdfKG.from_file(p, profile=CONTRACT_PROFILE, store="default")


class TestRdfKGFromDelimitedContract(KnowledgeGraphContract):
    """A TSV file becomes IRIs under the metaqa namespaces; ids stay the plain names."""

    @pytest.fixture(scope="class")
    @classmethod
    def kg(cls, tmp_path_factory):
        p = tmp_path_factory.mktemp("rdf") / "c.tsv.gz"
        with gzip.open(p, "wt", encoding="utf-8") as fh:
            for h, r, t in CONTRACT_TRIPLES:
                fh.write(f"{h}\t{r}\t{t}\n")
        return RdfKG.from_file(p)


def test_metaqa_same_ids_as_memory():
    mem = open_kg("metaqa")
    rdf = open_kg("metaqa", store="rdf")
    assert isinstance(rdf, RdfKG)
    assert len(rdf) == len(mem) + mem.num_entities  # one rdfs:label per entity
    assert set(rdf.all_relations()) == set(mem.all_relations())
    for e in ["Tom Hanks", "Splash", "Ron Howard", "1984"]:
        for d in ("out", "in", "both"):
            assert set(rdf.neighbors(e, direction=d)) == set(mem.neighbors(e, direction=d)), (e, d)
            assert rdf.degree(e, direction=d) == mem.degree(e, direction=d)
    got = rdf.neighbors("Tom Hanks", direction="in", limit=5)
    assert len(got) == 5 and got.truncated
    assert rdf.label("Tom Hanks") == "Tom Hanks"


def test_generic_profile_keeps_iris(tmp_path):
    p = tmp_path / "g.ttl"
    p.write_text(
        "@prefix ex: <http://ex.org/> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        'ex:a ex:knows ex:b ; rdfs:label "Alice"@en ; ex:age "30" .\n',
        encoding="utf-8",
    )
    kg = RdfKG.from_file(p)
    assert kg.label("http://ex.org/a") == "Alice"
    assert kg.label("http://ex.org/b") == "http://ex.org/b"  # no label: the id
    assert kg.features("http://ex.org/a") == {"label": "Alice", "http://ex.org/age": "30"}
    assert kg.has_triple("http://ex.org/a", "http://ex.org/knows", "http://ex.org/b")
    assert kg.neighbors("not an iri") == []
    assert not kg.has_entity("not an iri")
    with pytest.raises(EntityNotFound):
        kg.label("not an iri")
    assert dict(kg.iter_labels()) == {"http://ex.org/a": "Alice"}


def test_bad_files(tmp_path):
    p = tmp_path / "g.nt"
    p.write_text("<http://a> <http://b> .\n", encoding="utf-8")
    with pytest.raises(DataFormatError):
        RdfKG.from_file(p)
    q = tmp_path / "kb.txt"
    q.write_text("a|r|b\nc|d\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as ei:
        RdfKG.from_file(q, fmt="metaqa")
    assert ei.value.line == 2
    with pytest.raises(ConfigError):
        RdfKG.from_file(q, fmt="metaqa", profile="generic")
    with pytest.raises(FileNotFoundError):
        RdfKG.from_file(tmp_path / "nope.nt")


def test_refuses_updates():
    from rdflib import Graph

    kg = RdfKG(Graph(store="Oxigraph"))
    with pytest.raises(KGError, match="read-only"):
        kg._select('INSERT DATA { <http://a> <http://b> "c" }')
    with pytest.raises(KGError, match="read-only"):
        kg._ask("PREFIX x: <http://x/> DELETE WHERE { ?s ?p ?o }")


def test_fingerprint_changes_with_content(tmp_path):
    a = tmp_path / "a.tsv"
    a.write_text("x\tr\ty\n", encoding="utf-8")
    b = tmp_path / "b.tsv"
    b.write_text("x\tr\ty\ny\tr\tz\n", encoding="utf-8")
    assert RdfKG.from_file(a).fingerprint() != RdfKG.from_file(b).fingerprint()


class TestExportedNTriplesContract(KnowledgeGraphContract):
    """write_ntriples(MemoryKG) read back by RdfKG with the same profile gives the same KG."""

    @pytest.fixture(scope="class")
    @classmethod
    def kg(cls, tmp_path_factory):
        from kg_agents.kg import MemoryKG
        from kg_agents.kg.export import write_ntriples

        mem = MemoryKG(CONTRACT_TRIPLES)
        out = tmp_path_factory.mktemp("export") / "c.nt.gz"
        stats = write_ntriples(mem, out, profile="freebase")
        assert (stats.triples, stats.labels) == (len(mem), mem.num_entities)
        return RdfKG.from_file(out, profile="freebase")


def test_export_triples_with_labels(tmp_path):
    from kg_agents.kg.export import write_ntriples

    stats = write_ntriples(
        [("a b", "r", "c"), ("c", "r", "a b")], tmp_path / "x.nt", labels={"a b": "Alpha", "lonely": "L"}
    )
    assert (stats.triples, stats.labels) == (2, 3)
    kg = RdfKG.from_file(stats.path, profile="metaqa")
    assert kg.label("a b") == "Alpha" and kg.label("c") == "c" and kg.label("lonely") == "L"
    assert kg.neighbors("lonely") == [] and kg.has_entity("lonely")
    from kg_agents.errors import InvalidTermError

    with pytest.raises(InvalidTermError):
        write_ntriples([("not an iri", "r", "c")], tmp_path / "y.nt", profile="generic")


def test_foreign_iris_keep_full_ids(tmp_path):
    p = tmp_path / "g.nt"
    ns = "http://kg-agents.org/metaqa/entity/"
    p.write_text(
        f"<{ns}Big> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <http://schema.org/Movie> .\n"
        f'<{ns}Big> <http://schema.org/duration> "PT104M" .\n',
        encoding="utf-8",
    )
    kg = RdfKG.from_file(p, profile="metaqa")
    rdf_type = "http://www.w3.org/1999/02/22-rdf-syntax-ns#type"
    assert kg.neighbors("Big") == [Triple("Big", rdf_type, "http://schema.org/Movie")]
    assert kg.has_triple("Big", rdf_type, "http://schema.org/Movie")
    assert kg.neighbors("http://schema.org/Movie", direction="in")[0].head == "Big"
    assert kg.features("Big") == {"label": "Big", "http://schema.org/duration": "PT104M"}


def test_iter_labels_pages(tmp_path):
    p = write_contract_ntriples(tmp_path / "c.nt")
    kg = RdfKG.from_file(p, profile=CONTRACT_PROFILE)
    kg.label_page_size = 3
    got = list(kg.iter_labels())
    ents = {h for h, _, _ in CONTRACT_TRIPLES} | {t for _, _, t in CONTRACT_TRIPLES}
    assert len(got) == len(ents) and dict(got) == {e: e for e in ents}


def test_label_language_preference(tmp_path):
    p = tmp_path / "w.ttl"
    p.write_text(
        "@prefix wd: <http://www.wikidata.org/entity/> .\n"
        "@prefix wdt: <http://www.wikidata.org/prop/direct/> .\n"
        "@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .\n"
        'wd:Q42 wdt:P31 wd:Q5 ; rdfs:label "Douglas Adams"@de, "Douglas Adams (en)"@en, "DA" .\n',
        encoding="utf-8",
    )
    kg = RdfKG.from_file(p, profile="wikidata")
    assert kg.label("Q42") == "Douglas Adams (en)"
    assert kg.neighbors("Q42") == [Triple("Q42", "P31", "Q5")]
    assert dict(kg.iter_labels()) == {"Q42": "Douglas Adams (en)"}
