"""Relation chains (kg_agents.core.chains): the sequences of relations walks of a given length follow."""

from __future__ import annotations

import pytest

from kg_agents.core.chains import chain_text, relation_chains
from kg_agents.errors import ConfigError
from kg_agents.kg.memory import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES

KG = MemoryKG(CONTRACT_TRIPLES)


def test_the_chains_of_a_walk_length_both_directions():
    chains, truncated = relation_chains(KG, ["Babaloo Mandel"], 2)
    assert not truncated
    # into the writer (his films), then out of the films, every relation they have
    assert chains == [
        (("written_by", "in"), ("directed_by", "out")),
        (("written_by", "in"), ("release_year", "out")),
        (("written_by", "in"), ("starred_actors", "out")),
        (("written_by", "in"), ("written_by", "out")),
    ]
    assert chain_text(chains[0]) == "reverse of written by, then directed by"
    # a walk that ends early is no chain of that length; an unknown entity has none
    assert relation_chains(KG, ["1984"], 3)[0] != [] and relation_chains(KG, ["nobody"], 1) == ([], False)
    assert all(len(c) == 3 for c in relation_chains(KG, ["Splash", "Big"], 3)[0])


def test_the_chains_are_bounded_and_say_so():
    every, _ = relation_chains(KG, ["Splash"], 2)
    cut, truncated = relation_chains(KG, ["Splash"], 2, max_chains=3)
    assert truncated and cut == every[:3] and len(every) > 3


@pytest.mark.parametrize("key", ["length", "sample", "fanout", "max_chains"])
@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "2"])
def test_bad_bounds_are_config_errors(key, bad):
    kwargs = {"length": 2, key: bad}
    length = kwargs.pop("length")
    with pytest.raises(ConfigError, match=f"{key} must be a positive integer"):
        relation_chains(KG, ["Splash"], length, **kwargs)
