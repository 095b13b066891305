"""Relation chains (kg_agents.core.chains): the sequences of relations walks of a given length follow."""

from __future__ import annotations

import pytest

from kg_agents.core.chains import chain_text, relation_chains, relation_path, walk_chain
from kg_agents.core.metering import MeteredKG, metered
from kg_agents.errors import ConfigError
from kg_agents.kg.base import has_chain_queries, verify_path
from kg_agents.kg.memory import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES, LOOP_TRIPLES
from tests.kg.hop_by_hop import HopByHopKG

KG = MemoryKG(CONTRACT_TRIPLES)


def test_the_chains_of_a_walk_length_both_directions():
    chains, truncated = relation_chains(KG, ["Babaloo Mandel"], 2)
    assert not truncated
    # into the writer (his films), then out of the films, every relation they have
    assert chains == [
        (("written_by", "in"), ("directed_by", "out")),
        (("written_by", "in"), ("release_year", "out")),
        (("written_by", "in"), ("starred_actors", "out")),
    ]  # (and his films' writers: only himself, a start, so no chain)
    assert chain_text(chains[0]) == "reverse of written by, then directed by"
    # a walk that ends early is no chain of that length; an unknown entity has none
    assert relation_chains(KG, ["1984"], 3)[0] != [] and relation_chains(KG, ["nobody"], 1) == ([], False)
    assert all(len(c) == 3 for c in relation_chains(KG, ["Splash", "Big"], 3)[0])


def test_a_chain_that_ends_only_where_it_started_is_left_out():
    kg = MemoryKG([("Akeelah", "directed_by", "Doug"), ("Akeelah", "has_genre", "Drama")])
    # the director's films, then their director: only the director again, never an answer
    assert relation_chains(kg, ["Doug"], 2)[0] == [(("directed_by", "in"), ("has_genre", "out"))]
    # turning back midway stays: the film's director, then his films (the film again), then their genre
    assert (("directed_by", "out"), ("directed_by", "in"), ("has_genre", "out")) in relation_chains(
        kg, ["Akeelah"], 3
    )[0]


LOOPS = MemoryKG(LOOP_TRIPLES)


def test_revisit_reads_a_chain_as_the_graph_executes_a_relation_path():
    """Without ``revisit`` a walk never passes through its start again nor ends on it; with it, a walk
    may (a self-loop stays on its entity), and the start is an end only when the chain reaches nothing
    else."""
    loop = [("recording", "out"), ("recording", "out")]
    assert tuple(loop) not in relation_chains(LOOPS, ["Robin"], 2)[0]
    assert tuple(loop) in relation_chains(LOOPS, ["Robin"], 2, revisit=True)[0]
    assert walk_chain(LOOPS, ["Robin"], ["recording", "releases"], limit=10).paths == []
    walk = walk_chain(LOOPS, ["Robin"], ["recording", "releases"], limit=10, revisit=True)
    assert [p.to_text() for p in walk.paths] == ["Robin -> recording -> Robin -> releases -> Live"]
    alone = walk_chain(LOOPS, ["Robin"], ["recording", "recording"], limit=10, revisit=True)
    assert [p.end for p in alone.paths] == ["Robin"] and all(verify_path(LOOPS, p) for p in alone.paths)
    # through the start midway: Ann's parent's children are Ann and Bea, and both have a nationality
    path = ["parents", "children", "nationality"]
    assert [p.end for p in walk_chain(LOOPS, ["Ann"], path, limit=10).paths] == ["France"]
    both = walk_chain(LOOPS, ["Ann"], path, limit=10, revisit=True)
    assert sorted(p.end for p in both.paths) == ["France", "UK"]
    # the start among other ends is left out: Ann's parent's children are Bea only
    assert [p.end for p in walk_chain(LOOPS, ["Ann"], path[:2], limit=10, revisit=True).paths] == ["Bea"]


def test_revisit_walks_hop_by_hop_on_a_store_with_chain_queries():
    """A store's chain queries never pass through the start again, so ``revisit`` walks hop by hop
    there too, and finds the same ends on either store."""
    path = ["parents", "children", "nationality"]
    for kg in (LOOPS, HopByHopKG(LOOPS)):
        assert sorted(p.end for p in walk_chain(kg, ["Ann"], path, limit=10, revisit=True).paths) == [
            "France",
            "UK",
        ]


class _BatchedRelations(MemoryKG):
    """A store with its own ``relations_many`` (as a SPARQL store has), recording each call."""

    def __init__(self) -> None:
        super().__init__(CONTRACT_TRIPLES)
        self.calls: list[tuple[str, ...]] = []

    def relations(self, entity, direction="out"):
        self.calls.append(("relations", entity))
        return super().relations(entity, direction)

    def relations_many(self, entities, direction="out"):
        self.calls.append(("relations_many", *entities))
        return {e: MemoryKG.relations(self, e, direction) for e in entities}


def test_the_relations_of_a_level_are_asked_in_one_call_a_direction():
    """Where the store reads many entities' relations at once, a chain's relations are one call per
    direction (not one per entity), and the chains are those of the one-at-a-time store."""
    kg = _BatchedRelations()
    chains, truncated = relation_chains(MeteredKG(kg), ["Splash", "Big"], 2)
    assert (chains, truncated) == relation_chains(KG, ["Splash", "Big"], 2)
    assert not any(c[0] == "relations" for c in kg.calls)
    assert kg.calls[:2] == [("relations_many", "Splash", "Big")] * 2  # the first level, out then in


def test_the_chains_are_bounded_and_say_so():
    every, _ = relation_chains(KG, ["Babaloo Mandel"], 2)
    cut, truncated = relation_chains(KG, ["Babaloo Mandel"], 2, max_chains=2)
    assert truncated and cut == every[:2] and len(every) > 2


@pytest.mark.parametrize("key", ["length", "sample", "fanout", "max_chains"])
@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2"])
def test_bad_bounds_are_config_errors(key, bad):
    kwargs = {"length": 2, key: bad}
    length = kwargs.pop("length")
    with pytest.raises(ConfigError, match=f"{key} must be a positive integer"):
        relation_chains(KG, ["Splash"], length, **kwargs)


def test_walk_chain_gives_each_end_one_walk_and_traces_the_cut():
    path = relation_path((("starred_actors", "in"), ("directed_by", "out")))
    assert path == ["~starred_actors", "directed_by"]
    walk = walk_chain(KG, ["Tom Hanks", "Steve Martin"], path, limit=10)
    assert walk.ends == 4 and walk.truncated == []
    assert sorted(p.end for p in walk.paths) == [
        "Penny Marshall",
        "Robert Zemeckis",
        "Ron Howard",
        "Ron Howard",
    ]
    assert all(verify_path(KG, p) and [h.relation_text for h in p.hops] == path for p in walk.paths)
    cut = walk_chain(KG, ["Tom Hanks"], path, limit=2)
    assert (
        cut.ends == 2 and len(cut.paths) == 2 and cut.truncated == ["Tom Hanks ~starred_actors/directed_by"]
    )


def test_metered_kg_counts_chain_queries_and_has_them_only_when_the_store_does():
    mkg = MeteredKG(KG)
    assert has_chain_queries(mkg) and not has_chain_queries(MeteredKG(HopByHopKG(KG)))

    @metered
    def node() -> dict:
        walk_chain(mkg, ["Tom Hanks"], ["~starred_actors", "directed_by"], limit=5)
        return {}

    assert node()["usage"]["kg_calls"] == 2  # the ends, then their walks


def test_a_hub_with_many_relations_costs_about_max_chains_reads():
    hub = MemoryKG([(f"x{i}", f"rel_{i:03d}", "Hub") for i in range(300)] + [("x0", "next", "y")])
    reads: list[str] = []

    class Counting:
        def relations(self, e: str, d: str = "out") -> list[str]:
            return hub.relations(e, d)  # type: ignore[arg-type]

        def neighbors_many(self, ents: list[str], rel: str, d: str, limit: int) -> dict:
            reads.append(rel)
            return hub.neighbors_many(ents, rel, d, limit)  # type: ignore[arg-type]

    chains, truncated = relation_chains(Counting(), ["Hub"], 1, max_chains=20)
    assert truncated and len(chains) == 20 and len(reads) == 21  # the 21st tells the cut, no more are read
    assert chains == [((f"rel_{i:03d}", "in"),) for i in range(20)]  # the first 20, as before the cut
    assert relation_chains(hub, ["Hub"], 1, max_chains=300) == (
        [((f"rel_{i:03d}", "in"),) for i in range(300)],
        False,
    )
