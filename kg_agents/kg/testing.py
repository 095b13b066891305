"""A conformance suite for ``KnowledgeGraph`` stores, in the manner of ``langchain-tests``.

Subclass :class:`KnowledgeGraphContract` in a pytest module and provide a ``kg`` fixture that
returns your store loaded with :data:`CONTRACT_TRIPLES` (entity ids as written there)::

    class TestMyStore(KnowledgeGraphContract):
        @pytest.fixture(scope="class")
        def kg(self):
            return MyStore.from_triples(CONTRACT_TRIPLES)

Every test then runs against your store. ``write_contract_ntriples`` writes the same data as
N-Triples (entities under :data:`CONTRACT_ENTITY_NS`, relations under :data:`CONTRACT_RELATION_NS`)
for stores that load files or live behind a SPARQL endpoint.
"""

from __future__ import annotations

from pathlib import Path as FsPath
from typing import Any
from urllib.parse import quote

import pytest

from kg_agents.kg.base import (
    KnowledgeGraph,
    Path,
    Triple,
    TripleList,
    has_chain_queries,
    has_triples,
    labels_of,
    relations_of,
    verify_path,
    verify_paths,
)
from kg_agents.kg.paths import enumerate_paths, follow_chain, shortest_paths

__all__ = [
    "CONTRACT_ENTITY_NS",
    "CONTRACT_RELATION_NS",
    "CONTRACT_TRIPLES",
    "LOOP_TRIPLES",
    "KnowledgeGraphContract",
    "write_contract_ntriples",
]

CONTRACT_ENTITY_NS = "http://kg-agents.test/entity/"
CONTRACT_RELATION_NS = "http://kg-agents.test/relation/"

#: A small movie graph with awkward names (spaces, quotes, unicode, punctuation).
CONTRACT_TRIPLES: list[tuple[str, str, str]] = [
    ("Splash", "written_by", "Babaloo Mandel"),
    ("Splash", "directed_by", "Ron Howard"),
    ("Splash", "starred_actors", "Tom Hanks"),
    ("Splash", "release_year", "1984"),
    ("Parenthood", "written_by", "Babaloo Mandel"),
    ("Parenthood", "directed_by", "Ron Howard"),
    ("Parenthood", "starred_actors", "Steve Martin"),
    ("Big", "starred_actors", "Tom Hanks"),
    ("Big", "directed_by", "Penny Marshall"),
    ("Big", "release_year", "1988"),
    ("Amélie", "directed_by", "Jean-Pierre Jeunet"),
    ("Amélie", "in_language", "French"),
    ('The "Quoted" Film', "directed_by", "O'Brien & Sons"),
    ('The "Quoted" Film', "has_tags", "a <weird> tag"),
    ("Cast Away", "starred_actors", "Tom Hanks"),
    ("Cast Away", "directed_by", "Robert Zemeckis"),
    ("Forrest Gump", "starred_actors", "Tom Hanks"),
    ("Forrest Gump", "directed_by", "Robert Zemeckis"),
]

#: A graph whose walks meet themselves (the ``revisit`` reading of :mod:`kg_agents.core.chains`): a
#: self-loop (a release track and its recording, both named "Robin"), and a child whose parent's
#: children include the child again.
_LOOPS = (
    "Robin recording Robin; Robin releases Live; Ann parents Helena; Helena children Ann; "
    "Helena children Bea; Ann nationality UK; Bea nationality France"
)
LOOP_TRIPLES: list[tuple[str, str, str]] = [(h, r, t) for h, r, t in (x.split() for x in _LOOPS.split(";"))]


def write_contract_ntriples(path: str | FsPath, *, with_labels: bool = True) -> FsPath:
    """Write :data:`CONTRACT_TRIPLES` as N-Triples with ``rdfs:label`` for every entity."""
    from kg_agents.kg.terms import iri, literal

    p = FsPath(path)
    lines = []
    ents: dict[str, None] = {}
    for h, r, t in CONTRACT_TRIPLES:
        lines.append(
            f"{iri(CONTRACT_ENTITY_NS + quote(h, safe=''))} {iri(CONTRACT_RELATION_NS + quote(r, safe=''))} "
            f"{iri(CONTRACT_ENTITY_NS + quote(t, safe=''))} ."
        )
        ents[h] = ents[t] = None
    if with_labels:
        for e in ents:
            lines.append(
                f"{iri(CONTRACT_ENTITY_NS + quote(e, safe=''))} "
                f"<http://www.w3.org/2000/01/rdf-schema#label> {literal(e)} ."
            )
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return p


class KnowledgeGraphContract:
    """The behaviour every ``KnowledgeGraph`` store must show. Subclasses provide ``kg``."""

    @pytest.fixture
    def kg(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError("provide a `kg` fixture loaded with CONTRACT_TRIPLES")

    def test_is_protocol(self, kg: KnowledgeGraph) -> None:
        assert isinstance(kg, KnowledgeGraph)

    def test_has_entity(self, kg: KnowledgeGraph) -> None:
        assert kg.has_entity("Splash")
        assert kg.has_entity("Amélie")
        assert kg.has_entity('The "Quoted" Film')
        assert not kg.has_entity("No Such Movie")

    def test_label(self, kg: KnowledgeGraph) -> None:
        assert kg.label("Tom Hanks") == "Tom Hanks"
        assert kg.label("O'Brien & Sons") == "O'Brien & Sons"

    def test_label_unknown_raises(self, kg: KnowledgeGraph) -> None:
        from kg_agents.errors import EntityNotFound

        with pytest.raises(EntityNotFound):
            kg.label("No Such Movie")

    def test_features_has_label(self, kg: KnowledgeGraph) -> None:
        f = kg.features("Splash")
        assert isinstance(f, dict)
        assert f.get("label") == "Splash"

    def test_neighbors_out(self, kg: KnowledgeGraph) -> None:
        got = kg.neighbors("Splash")
        assert isinstance(got, TripleList)
        assert set(got) == {Triple(h, r, t) for h, r, t in CONTRACT_TRIPLES if h == "Splash"}
        assert not got.truncated

    def test_neighbors_in(self, kg: KnowledgeGraph) -> None:
        got = kg.neighbors("Tom Hanks", direction="in")
        assert set(got) == {
            Triple(m, "starred_actors", "Tom Hanks") for m in ("Splash", "Big", "Cast Away", "Forrest Gump")
        }

    def test_neighbors_both(self, kg: KnowledgeGraph) -> None:
        got = set(kg.neighbors("Big", direction="both"))
        want = {Triple(h, r, t) for h, r, t in CONTRACT_TRIPLES if "Big" in (h, t)}
        assert got == want

    def test_neighbors_relation_filter(self, kg: KnowledgeGraph) -> None:
        got = kg.neighbors("Ron Howard", relation="directed_by", direction="in")
        assert {t.head for t in got} == {"Splash", "Parenthood"}
        assert kg.neighbors("Ron Howard", relation="written_by", direction="in") == []
        assert kg.neighbors("Ron Howard", relation="no_such_relation", direction="in") == []

    def test_neighbors_limit_reports_truncation(self, kg: KnowledgeGraph) -> None:
        got = kg.neighbors("Tom Hanks", direction="in", limit=2)
        assert len(got) == 2
        assert got.truncated
        full = kg.neighbors("Tom Hanks", direction="in", limit=10)
        assert len(full) == 4 and not full.truncated

    def test_neighbors_unknown_entity_is_empty(self, kg: KnowledgeGraph) -> None:
        assert kg.neighbors("No Such Movie") == []
        assert kg.degree("No Such Movie") == 0
        assert kg.relations("No Such Movie") == []

    def test_neighbors_many(self, kg: KnowledgeGraph) -> None:
        got = kg.neighbors_many(["Splash", "Big", "No Such Movie"], relation="directed_by")
        assert set(got) == {"Splash", "Big", "No Such Movie"}
        assert [t.tail for t in got["Splash"]] == ["Ron Howard"]
        assert [t.tail for t in got["Big"]] == ["Penny Marshall"]
        assert got["No Such Movie"] == []

    def test_neighbors_many_limit_is_per_entity(self, kg: KnowledgeGraph) -> None:
        got = kg.neighbors_many(["Tom Hanks", "Robert Zemeckis"], direction="in", limit=1)
        assert len(got["Tom Hanks"]) == 1 and got["Tom Hanks"].truncated
        assert len(got["Robert Zemeckis"]) == 1 and got["Robert Zemeckis"].truncated

    def test_relations(self, kg: KnowledgeGraph) -> None:
        assert set(kg.relations("Splash")) == {"written_by", "directed_by", "starred_actors", "release_year"}
        assert set(kg.relations("Tom Hanks", direction="in")) == {"starred_actors"}
        assert set(kg.relations("Tom Hanks", direction="out")) == set()
        assert set(kg.relations("Amélie", direction="both")) == {"directed_by", "in_language"}

    def test_degree(self, kg: KnowledgeGraph) -> None:
        assert kg.degree("Splash") == 4
        assert kg.degree("Tom Hanks", direction="in") == 4
        assert kg.degree("Tom Hanks", relation="starred_actors", direction="in") == 4
        assert kg.degree("Tom Hanks", relation="directed_by", direction="in") == 0
        assert kg.degree("Big", direction="both") == 3

    def test_has_triple(self, kg: KnowledgeGraph) -> None:
        for h, r, t in CONTRACT_TRIPLES:
            assert kg.has_triple(h, r, t), (h, r, t)
        assert not kg.has_triple("Tom Hanks", "starred_actors", "Splash")
        assert not kg.has_triple("Splash", "written_by", "Ron Howard")
        assert not kg.has_triple("No Such", "written_by", "Babaloo Mandel")

    def test_has_triples_says_what_has_triple_says(self, kg: KnowledgeGraph) -> None:
        """The batched check (the store's own ``has_triples`` where it has one) agrees with ``has_triple``
        on stored, unstored, unknown and awkwardly named triples, repeated ones included, in order."""
        asked = [Triple(h, r, t) for h, r, t in CONTRACT_TRIPLES]
        asked += [
            Triple("Tom Hanks", "starred_actors", "Splash"),
            Triple("Splash", "written_by", "Ron Howard"),
            Triple("No Such", "written_by", "Babaloo Mandel"),
            Triple("Splash", "no_such_relation", "Ron Howard"),
            Triple('The "Quoted" Film', "has_tags", "a <weird> tag"),
            Triple("Splash", "directed_by", "Ron Howard"),
        ]
        want = [kg.has_triple(t.head, t.relation, t.tail) for t in asked]
        assert want.count(False) == 4
        assert has_triples(kg, asked) == want
        assert has_triples(kg, []) == []

    def test_labels_of_says_what_label_says(self, kg: KnowledgeGraph) -> None:
        """The batched labels (the store's own ``labels_many`` where it has one), in order, repeats kept;
        an unknown entity raises as ``label`` does."""
        from kg_agents.errors import EntityNotFound

        ents = ["Splash", "Tom Hanks", 'The "Quoted" Film', "Splash", "Ron Howard"]
        assert labels_of(kg, ents) == [kg.label(e) for e in ents]
        assert labels_of(kg, []) == []
        with pytest.raises(EntityNotFound):
            labels_of(kg, ["Splash", "No Such Entity Anywhere"])

    def test_relations_of_says_what_relations_says(self, kg: KnowledgeGraph) -> None:
        """The batched relations (the store's own ``relations_many`` where it has one): each distinct
        entity's relations in every direction, none for an unknown entity, and ``relations`` after it
        says the same."""
        ents = ["Splash", "Tom Hanks", "Amélie", "Splash", "No Such Entity Anywhere", 'The "Quoted" Film']
        for direction in ("out", "in", "both"):
            got = relations_of(kg, ents, direction)
            assert list(got) == list(dict.fromkeys(ents))
            for e, rels in got.items():
                assert len(rels) == len(set(rels)) and set(rels) == set(kg.relations(e, direction)), e
        assert relations_of(kg, [], "out") == {}

    def test_labels_and_relations_after_neighbour_lists(self, kg: KnowledgeGraph) -> None:
        """Labels and relations of the entities met in neighbour lists (what a SPARQL store reads ahead,
        its ``readahead``) are each entity's own, in every direction."""
        from kg_agents.kg.memory import MemoryKG

        truth = MemoryKG(CONTRACT_TRIPLES)
        clear = getattr(kg, "clear_cache", None)
        if callable(clear):
            clear()
        lists = kg.neighbors_many(["Tom Hanks", "Ron Howard", "Amélie"], direction="both")
        met = list(dict.fromkeys(t.other(e) for e, tl in lists.items() for t in tl))
        assert len(met) == 7
        for direction in ("in", "out", "both"):
            got = [set(kg.relations(e, direction)) for e in met]
            assert got == [set(truth.relations(e, direction)) for e in met], direction
        assert [kg.label(e) for e in met] == [kg.label(e) for e in reversed(met)][::-1]
        assert all(kg.label(e) in (e, truth.label(e)) for e in met)

    def test_verify_paths_splits_kept_and_dropped(self, kg: KnowledgeGraph) -> None:
        good = Path.from_text("Tom Hanks -> ~starred_actors -> Big -> directed_by -> Penny Marshall")
        bad = Path.from_text("Tom Hanks -> ~starred_actors -> Big -> directed_by -> Ron Howard")
        one = Path.from_text("Splash -> directed_by -> Ron Howard")
        assert verify_paths(kg, [good, bad, one, good]) == ([good, one, good], 1)

    def test_awkward_names_round_trip(self, kg: KnowledgeGraph) -> None:
        got = kg.neighbors('The "Quoted" Film')
        assert {t.tail for t in got} == {"O'Brien & Sons", "a <weird> tag"}
        assert kg.has_triple('The "Quoted" Film', "has_tags", "a <weird> tag")

    def test_invalid_direction(self, kg: KnowledgeGraph) -> None:
        with pytest.raises(ValueError):
            kg.neighbors("Splash", direction="sideways")  # type: ignore[arg-type]

    def test_all_relations(self, kg: KnowledgeGraph) -> None:
        assert set(kg.all_relations()) == {r for _, r, _ in CONTRACT_TRIPLES}

    def test_iter_labels(self, kg: KnowledgeGraph) -> None:
        labels = dict(kg.iter_labels())
        assert labels["Amélie"] == "Amélie"
        ents = {h for h, _, _ in CONTRACT_TRIPLES} | {t for _, _, t in CONTRACT_TRIPLES}
        assert ents <= set(labels)

    def test_fingerprint_is_stable(self, kg: KnowledgeGraph) -> None:
        assert kg.fingerprint() == kg.fingerprint()
        assert isinstance(kg.fingerprint(), str) and kg.fingerprint()

    def test_enumerate_paths(self, kg: KnowledgeGraph) -> None:
        res = enumerate_paths(kg, ["Babaloo Mandel"], max_hops=2)
        texts = {p.to_text() for p in res.paths}
        assert "Babaloo Mandel -> ~written_by -> Splash" in texts
        assert "Babaloo Mandel -> ~written_by -> Splash -> directed_by -> Ron Howard" in texts
        assert all(verify_path(kg, p) for p in res.paths)

    def test_shortest_paths(self, kg: KnowledgeGraph) -> None:
        res = shortest_paths(kg, ["Babaloo Mandel"], ["Ron Howard"], max_hops=3)
        assert {p.to_text() for p in res.paths} == {
            "Babaloo Mandel -> ~written_by -> Splash -> directed_by -> Ron Howard",
            "Babaloo Mandel -> ~written_by -> Parenthood -> directed_by -> Ron Howard",
        }

    def test_verify_path(self, kg: KnowledgeGraph) -> None:
        good = Path.from_text("Tom Hanks -> ~starred_actors -> Big -> directed_by -> Penny Marshall")
        bad = Path.from_text("Tom Hanks -> ~starred_actors -> Big -> directed_by -> Ron Howard")
        assert verify_path(kg, good)
        assert not verify_path(kg, bad)

    # ------------------------------------------------------------------ ChainQueries (optional)
    def _chains(self, kg: Any) -> Any:
        if not has_chain_queries(kg):
            pytest.skip("the store has no chain_ends / chain_witnesses (an optional capability)")
        return kg

    def test_chain_ends(self, kg: KnowledgeGraph) -> None:
        c = self._chains(kg)
        ends, cut = c.chain_ends("Tom Hanks", ["~starred_actors", "directed_by"])
        assert set(ends) == {"Ron Howard", "Penny Marshall", "Robert Zemeckis"} and len(ends) == 3
        assert cut is False
        assert c.chain_ends("Splash", ["directed_by"], limit=5) == (["Ron Howard"], False)
        assert set(c.chain_ends("Babaloo Mandel", ["~written_by", "starred_actors"])[0]) == {
            "Tom Hanks",
            "Steve Martin",
        }
        assert c.chain_ends('The "Quoted" Film', ["has_tags"]) == (["a <weird> tag"], False)

    def test_chain_ends_limit_reports_truncation(self, kg: KnowledgeGraph) -> None:
        c = self._chains(kg)
        full = set(c.chain_ends("Tom Hanks", ["~starred_actors", "directed_by"])[0])
        ends, cut = c.chain_ends("Tom Hanks", ["~starred_actors", "directed_by"], limit=2)
        assert len(ends) == 2 and cut is True and set(ends) <= full
        assert c.chain_ends("Tom Hanks", ["~starred_actors", "directed_by"], limit=3)[1] is False
        assert c.chain_ends("Tom Hanks", ["~starred_actors"], limit=0) == ([], True)

    def test_chain_ends_never_return_to_the_topic(self, kg: KnowledgeGraph) -> None:
        c = self._chains(kg)
        assert c.chain_ends("Ron Howard", ["~directed_by", "directed_by"]) == ([], False)
        # the actors of the other films of Splash's director: no walk passes through Splash again
        ends = set(c.chain_ends("Splash", ["directed_by", "~directed_by", "starred_actors"])[0])
        assert ends == {"Steve Martin"}
        for start, path in (
            ("Tom Hanks", ["~starred_actors", "directed_by", "~directed_by"]),
            ("Babaloo Mandel", ["~written_by", "directed_by", "~directed_by", "starred_actors"]),
        ):
            chain = [(r.lstrip("~"), "in" if r.startswith("~") else "out") for r in path]
            assert set(c.chain_ends(start, path)[0]) == follow_chain(kg, {start}, chain, 100)

    def test_chain_ends_unknown_terms_reach_nothing(self, kg: KnowledgeGraph) -> None:
        c = self._chains(kg)
        assert c.chain_ends("No Such Movie", ["directed_by"]) == ([], False)
        assert c.chain_ends("Splash", ["no_such_relation"]) == ([], False)
        assert c.chain_ends("Splash", ["directed_by> } ; DROP ALL #", "~x"]) == ([], False)
        assert c.chain_witnesses("Splash", ["directed_by"], ["No Such Movie"]) == {}

    def test_chain_ends_bad_arguments(self, kg: KnowledgeGraph) -> None:
        c = self._chains(kg)
        for bad in ([], "directed_by", ["~"], [3]):
            with pytest.raises(ValueError):
                c.chain_ends("Splash", bad)
        with pytest.raises(ValueError):
            c.chain_ends("Splash", ["directed_by"], limit=-1)

    def test_chain_witnesses_are_walks_of_the_path(self, kg: KnowledgeGraph) -> None:
        c = self._chains(kg)
        path = ["~starred_actors", "directed_by"]
        ends = c.chain_ends("Tom Hanks", path)[0]
        got = c.chain_witnesses("Tom Hanks", path, [*ends, "Steve Martin", "No Such Movie"])
        assert set(got) == set(ends)  # Steve Martin is no director: no walk reaches him
        for end, p in got.items():
            assert p.start == "Tom Hanks" and p.end == end and verify_path(kg, p)
            assert [h.relation_text for h in p.hops] == path
        one = c.chain_witnesses("Splash", ["directed_by"], ["Ron Howard", "Tom Hanks"])
        assert {e: p.to_text() for e, p in one.items()} == {
            "Ron Howard": "Splash -> directed_by -> Ron Howard"
        }
