"""The Freebase-shaped generator: seeded, exact in size, valid N-Triples, and shaped like Freebase (hubs,
unlabelled mediators, language-tagged labels, typed literals, ``domain.type.property`` relations),
in memory that does not grow with the size."""

from __future__ import annotations

import gzip
import json
import re
import tracemalloc
from collections import Counter
from pathlib import Path

import pytest
from rdflib import Graph, Literal, URIRef

from kg_agents.errors import ConfigError
from kg_agents.kg.profiles import FREEBASE_NS
from kg_agents.kg.synthetic import MEDIATOR_TYPES, PROBE_PATH, FreebaseLike, write_freebase_like

N = 6000
TYPE = URIRef(FREEBASE_NS + "type.object.type")
LABEL = URIRef("http://www.w3.org/2000/01/rdf-schema#label")
XSD = "http://www.w3.org/2001/XMLSchema#"


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object]:
    path = tmp_path_factory.mktemp("synthetic") / "fb.nt.gz"
    return path, write_freebase_like(path, N, seed=7)


@pytest.fixture(scope="module")
def graph(written: tuple[Path, object]) -> Graph:
    g = Graph()
    with gzip.open(written[0], "rt", encoding="utf-8") as fh:
        g.parse(data=fh.read(), format="nt")  # rdflib's own parser: the file is valid N-Triples
    return g


def test_exact_size_and_valid_ntriples(written: tuple[Path, object], graph: Graph) -> None:
    path, stats = written
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    assert len(lines) == N == stats.triples  # type: ignore[attr-defined]
    assert len(graph) == N  # no duplicate triple either
    saved = json.loads(Path(str(path) + ".json").read_text())
    assert saved["triples"] == N and saved["seed"] == 7


def test_same_seed_same_bytes_other_seed_other_graph(tmp_path: Path) -> None:
    a, b, c = tmp_path / "a.nt.gz", tmp_path / "b.nt.gz", tmp_path / "c.nt.gz"
    write_freebase_like(a, 3000, seed=3)
    write_freebase_like(b, 3000, seed=3)
    write_freebase_like(c, 3000, seed=4)
    assert a.read_bytes() == b.read_bytes()
    assert gzip.decompress(a.read_bytes()) != gzip.decompress(c.read_bytes())
    plain = tmp_path / "a.nt"
    write_freebase_like(plain, 3000, seed=3)
    assert plain.read_bytes() == gzip.decompress(a.read_bytes())


def test_hubs_are_the_most_connected_entities(written: tuple[Path, object], graph: Graph) -> None:
    _, stats = written
    degree: Counter[URIRef] = Counter()
    for s, p, o in graph:
        if p == TYPE:
            continue
        degree[s] += 1  # type: ignore[index]
        if isinstance(o, URIRef):
            degree[o] += 1
    typed = {s for s in graph.subjects(TYPE, None)}
    ranked = [e for e, _ in degree.most_common() if e in typed]
    for hub in stats.hubs:  # type: ignore[attr-defined]
        term = URIRef(FREEBASE_NS + hub["entity"])
        assert term in ranked[:12], (hub, ranked.index(term))
        assert hub["degree"] >= hub["planned"] * 0.5
    median = sorted(degree[e] for e in typed)[len(typed) // 2]
    assert degree[ranked[0]] > 50 * median  # a power law, not a uniform graph
    actor = URIRef(FREEBASE_NS + FreebaseLike(N, seed=7).hub("actor").entity)
    assert graph.value(actor, LABEL) == Literal("Hub Actor", lang="en")


def test_mediators_are_typed_and_unlabelled(graph: Graph) -> None:
    performances = set(graph.subjects(TYPE, URIRef(FREEBASE_NS + "film.performance")))
    assert len(performances) > 100
    for m in performances:
        assert graph.value(m, LABEL) is None
        assert graph.value(m, URIRef(FREEBASE_NS + "film.performance.actor")) is not None
        assert graph.value(m, URIRef(FREEBASE_NS + "film.performance.film")) is not None
        assert (None, URIRef(FREEBASE_NS + "film.film.starring"), m) in graph
    assert set(graph.subjects(TYPE, URIRef(FREEBASE_NS + MEDIATOR_TYPES[1])))
    # the long tail has its own mediated relations: an unlabelled typed node with a date
    tail_cvts = {
        s
        for s, o in graph.subject_objects(TYPE)
        if "_" in str(o).rsplit(".", 1)[-1] and graph.value(s, LABEL) is None
    }
    assert tail_cvts


def test_labels_and_literals(graph: Graph) -> None:
    labels = list(graph.objects(None, LABEL))
    langs = Counter(lab.language for lab in labels if isinstance(lab, Literal))
    assert langs["en"] > 0 and set(langs) >= {"en", "fr", "de", "es"} - {None} and None not in langs
    assert any('"' in str(lab) or "É" in str(lab) for lab in labels)  # awkward text, escaped
    datatypes = {o.datatype for o in graph.objects() if isinstance(o, Literal)}
    assert {URIRef(XSD + t) for t in ("date", "integer", "decimal")} <= datatypes
    # every entity that is no mediator and that an edge reaches has a type and an English label
    films = set(graph.subjects(TYPE, URIRef(FREEBASE_NS + "film.film")))
    for f in list(films)[:50]:
        assert any(lab.language == "en" for lab in graph.objects(f, LABEL))  # type: ignore[attr-defined]
        director = graph.value(f, URIRef(FREEBASE_NS + "film.film.directed_by"))
        assert graph.value(director, TYPE) == URIRef(FREEBASE_NS + "people.person")


def test_relations_are_named_like_freebase(graph: Graph) -> None:
    preds = {str(p) for p in graph.predicates()} - {str(LABEL)}
    assert all(p.startswith(FREEBASE_NS) for p in preds)
    names = [p[len(FREEBASE_NS) :] for p in preds]
    assert all(re.fullmatch(r"[a-z_]+\.[a-z_]+\.[a-z_0-9]+", n) for n in names), names
    assert len(names) > 40
    assert FreebaseLike(1_000_000).n_relations >= 1000  # thousands at scale
    for rel in PROBE_PATH:
        assert rel.lstrip("~") in names


def test_memory_does_not_grow_with_the_size(tmp_path: Path) -> None:
    def peak(n: int) -> int:
        gen = FreebaseLike(n, seed=1)
        tracemalloc.start()
        try:
            for _ in gen.lines():
                pass
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, large = peak(4000), peak(80_000)
    assert large < small + (1 << 20), (small, large)


def test_bad_sizes_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="at least 1000"):
        FreebaseLike(10)
    with pytest.raises(ConfigError, match="hub_cap"):
        FreebaseLike(5000, hub_cap=0)
    with pytest.raises(ConfigError, match="no hub"):
        FreebaseLike(5000).hub("nobody")
