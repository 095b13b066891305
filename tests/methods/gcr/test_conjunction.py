"""GCR with several topic entities: a KG-Trie and K decoded paths from each, the answers where the walks
along the decoded relation paths meet (each with a verified path from each topic entity), none when they
do not; a scripted decoder that follows each trie, and the scripted chat model."""

from __future__ import annotations

import pytest

from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import verify_path
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.gcr.decoding import DecodedPath
from kg_agents.methods.gcr.graph import create_gcr_graph
from tests.fakes import FakeChat
from tests.methods.constrained import IN_1988, assert_narrowed
from tests.methods.gcr.helpers import smollm_tokenizer

KG = MemoryKG(CONTRACT_TRIPLES)
BOTH = {
    "question": "which films starring [Tom Hanks] did [Robert Zemeckis] direct",
    "topic_entities": ["Tom Hanks", "Robert Zemeckis"],
}
MET = ["Cast Away", "Forrest Gump"]


class TrieDecoder:
    """Decodes the trie's own paths, those whose text holds a ``prefer`` word first (then in the trie's
    order), and records the entities each call's prompt names."""

    def __init__(self, prefer=()):
        self.tokenizer = smollm_tokenizer()
        self.prefer = list(prefer)
        self.prompts: list[str] = []
        self.last_stats = {"prompt_tokens": 3, "output_tokens": 2, "seconds": 0.0}

    def generate(self, messages, trie, num_beams):
        self.prompts.append(str(messages[-1].content))

        def key(i_text):
            i, text = i_text
            hit = [n for n, w in enumerate(self.prefer) if w in text]
            return (hit[0] if hit else len(self.prefer), i)

        texts = [t for _, t in sorted(enumerate(trie.texts), key=key)][:num_beams]
        return [
            DecodedPath("", t, -0.1 * n, t.rsplit(" -> ", 1)[-1], {"in_trie": True})
            for n, t in enumerate(texts)
        ]


def _in_order(text: str, options: list[str]) -> list[float]:
    return [float(-i) for i in range(len(options))]


def _graph(decoder, **options):
    return create_gcr_graph(
        KG, general_llm=FakeChat(logprobs=_in_order), decoder=decoder, pack="none", hops=1, **options
    )


def test_paths_decoded_from_each_topic_meet_on_the_answers():
    # one beam each: Tom Hanks's decoded path ends at Big, not an answer, but its relation path reaches
    # the films both topics share
    dec = TrieDecoder(prefer=["Big", "Forrest Gump"])
    out = _graph(dec).invoke(BOTH, context={"num_beams": 1})
    assert out["errors"] == []
    assert sorted(out["answers"]) == MET
    assert sorted(p.to_text() for p in out["paths"]) == sorted(
        f"{t} -> {r} -> {a}"
        for a in MET
        for t, r in (("Tom Hanks", "~starred_actors"), ("Robert Zemeckis", "~directed_by"))
    )
    assert all(verify_path(KG, p) for p in out["paths"])
    # one trie and one decoder call per topic entity, the prompt naming that topic only
    trie = next(t for t in out["trace"] if t["node"] == "get_trie")
    assert trie["paths_per_topic"] == {"Tom Hanks": 4, "Robert Zemeckis": 2}
    assert len(dec.prompts) == 2 and "Robert Zemeckis" not in dec.prompts[0].split("Question")[0]
    assert out["usage"]["llm_calls"] == 3  # two decodings and the general model's ranking
    reason = next(t for t in out["trace"] if t["node"] == "reason")
    assert reason["met"] is True and reason["walks_from"] == {
        "Tom Hanks": [["~starred_actors"]],
        "Robert Zemeckis": [["~directed_by"]],
    }
    assert out["answers"] == [o for o, _ in reason["top"]]  # the whole set, best first


def test_a_two_hop_depth_still_meets_on_the_nearest_answers():
    # the question's depth says 2: each topic's trie also holds its 1-hop paths (a conjunction's chains
    # may differ in length), and the walks meet nearest first: the films, not what the films share
    dec = TrieDecoder(prefer=["release_year", "Penny Marshall"])
    g = create_gcr_graph(KG, general_llm=FakeChat(logprobs=_in_order), decoder=dec, pack="none", hops=2)
    out = g.invoke(BOTH, context={"num_beams": 10})
    assert sorted(out["answers"]) == MET and out["errors"] == []
    trie = next(t for t in out["trace"] if t["node"] == "get_trie")
    assert trie["exact"] is True and trie["paths_per_topic"]["Robert Zemeckis"] > 2
    reason = next(t for t in out["trace"] if t["node"] == "reason")
    assert reason["walks"] == {"Tom Hanks": [["~starred_actors"]], "Robert Zemeckis": [["~directed_by"]]}


def test_the_vote_orders_the_answers_without_a_general_model():
    dec = TrieDecoder(prefer=["Forrest Gump"])
    g = create_gcr_graph(KG, general_llm=None, decoder=dec, pack="none", hops=1)
    out = g.invoke(BOTH, context={"num_beams": 1})
    assert out["answers"] == ["Forrest Gump", "Cast Away"] and len(out["paths"]) == 4


def test_decoded_paths_that_do_not_meet_give_no_answer():
    q = {"question": "which films of [Tom Hanks] are in [French]", "topic_entities": ["Tom Hanks", "French"]}
    out = _graph(TrieDecoder()).invoke(q)
    assert out["answers"] == [] and out["paths"] == []
    assert [e["type"] for e in out["errors"]] == ["NoMeeting"]
    reason = next(t for t in out["trace"] if t["node"] == "reason")
    assert reason["met"] is False and reason["tries"] == 1


def test_conjunction_off_decodes_once_from_all_topics():
    dec = TrieDecoder()
    out = _graph(dec, conjunction=False).invoke(BOTH, context={"num_beams": 3})
    assert len(dec.prompts) == 1 and out["answers"]
    assert not any(t.get("conjunction") for t in out["trace"] if t["node"] == "reason")


@pytest.mark.integration
def test_local_model_decodes_from_each_topic_of_a_conjunction_on_a_small_kg():
    """The embedded model decodes K paths from each topic's trie: whatever it decodes, the answers are
    where the walks meet (none when they do not), each with a verified path from each topic entity."""
    g = create_gcr_graph(KG, general_llm=None, adapter="none", pack="none", hops=1, num_beams=3)
    out = g.invoke(BOTH)
    reason = next(t for t in out["trace"] if t["node"] == "reason")
    assert all(verify_path(KG, p) for p in out["paths"])
    if reason["met"]:
        assert out["errors"] == [] and out["answers"]
        for a in out["answers"]:
            assert sorted(p.start for p in out["paths"] if p.end == a) == ["Robert Zemeckis", "Tom Hanks"]
    else:
        assert out["answers"] == [] and [e["type"] for e in out["errors"]] == ["NoMeeting"]


def test_a_constraint_questions_decoded_answers_are_narrowed():
    g = create_gcr_graph(
        KG,
        general_llm=FakeChat(logprobs=lambda t, o: [0.0] * len(o)),
        decoder=TrieDecoder(),
        pack="none",
        hops=1,
    )
    assert_narrowed(g.invoke(IN_1988), g.invoke(IN_1988, context={"constraint": False}), KG)
    with pytest.raises(ConfigError, match="constraint"):
        _graph(TrieDecoder(), constraint=None)
