"""The depth of the relation chain closest to the question (``hops="chain"``): read from the graph's
chains, not from a classifier of the question's wording. The hashing encoder stands in for the sentence
model (texts that share spelling are close), so no model is loaded."""

from __future__ import annotations

import numpy as np
import pytest

import kg_agents.core.hops as hops_module
from kg_agents.core.hops import chain_hops, check_hops, pack_hops, question_hops
from kg_agents.errors import ConfigError
from kg_agents.kg.encoder import HashingEncoder
from kg_agents.kg.memory import MemoryKG

KG = MemoryKG(
    [
        ("Big", "directed_by", "Penny Marshall"),
        ("Penny Marshall", "born_in", "1943"),
        ("Big", "release_year", "1988"),
        ("Splash", "directed_by", "Ron Howard"),
        ("Ron Howard", "born_in", "1954"),
        ("Lonely", "unrelated_to", "Nothing"),
    ]
)


@pytest.mark.parametrize(
    ("question", "hops"),
    [
        ("in which year was the director of [Big] born", 2),
        ("when was the director of [Big] born", 2),
        ("what is the release year of [Big]", 1),
        ("who directed [Big]", 1),
    ],
)
def test_the_closest_chain_gives_the_depth(question, hops):
    assert chain_hops(KG, question, ["Big"], encoder=HashingEncoder()) == hops


class Flat:
    """Every text the same vector: every chain ties with every other."""

    def __call__(self, texts):
        return np.ones((len(texts), 4), dtype=np.float32)


def test_a_tie_goes_to_the_shorter_chain():
    assert chain_hops(KG, "in which year was the director of [Big] born", ["Big"], encoder=Flat()) == 1


def test_max_hops_bounds_the_chains_read():
    question = "in which year was the director of [Big] born"
    assert chain_hops(KG, question, ["Big"], max_hops=1, encoder=HashingEncoder()) == 1


def test_no_chain_no_depth():
    assert chain_hops(KG, "what is [Nothing]", ["Nothing"], encoder=HashingEncoder()) == 1
    assert chain_hops(KG, "what is [Ghost]", ["Ghost"], encoder=HashingEncoder()) is None  # not in the graph


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_bad_max_hops_is_refused(bad):
    with pytest.raises(ConfigError, match="max_hops"):
        chain_hops(KG, "who directed [Big]", ["Big"], max_hops=bad)


def test_each_chain_text_is_encoded_once():
    enc = HashingEncoder()
    question = "when was the director of [Big] born"
    chain_hops(KG, question, ["Big"], encoder=enc)
    first = enc.texts_encoded
    assert first > 1
    chain_hops(KG, question, ["Big"], encoder=enc)
    assert enc.texts_encoded == first + 1  # only the question again


def test_chain_is_a_hops_setting_and_auto_follows_it(monkeypatch):
    monkeypatch.setattr(hops_module, "default_encoder", HashingEncoder)
    question = "in which year was the director of [Big] born"
    assert check_hops("chain") == "chain"
    assert question_hops("chain", KG, question, ["Big"]) == 2
    assert question_hops("auto", KG, question, ["Big"], auto="chain") == 2
    assert question_hops("auto", KG, question, ["Big"], auto=False) is None
    assert question_hops("chain", KG, question, []) is None  # no topic entity, no depth


def test_a_pack_route_of_chain_needs_no_classifier(tmp_path):
    from kg_agents.packs import Pack, write_manifest
    from tests.packs.helpers import manifest_for

    m = manifest_for(KG)
    m.set_route("graph_explore", "the walk is as long as the closest relation chain", hops="chain")
    write_manifest(tmp_path, m)
    pack = Pack.load(tmp_path)
    assert pack.auto_hops("graph_explore") == "chain" and not pack.predicts("graph_explore")
    assert pack.auto_hops("graph_agent") is False
    assert pack_hops(pack, "graph_explore") == (None, "chain")
