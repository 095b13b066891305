"""GCR's nodes called one by one, over a small ``GCRDeps`` (a scripted decoder, a fake general model)."""

from __future__ import annotations

import dataclasses

import pytest
from langgraph.runtime import Runtime

from kg_agents.core.metering import MeteredKG
from kg_agents.core.prompts import load_prompt
from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import Path
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.gcr.graph import GCRContext, create_gcr_graph
from kg_agents.methods.gcr.nodes import (
    GCRDeps,
    after_decode,
    after_link,
    after_trie,
    decode,
    end_empty,
    get_trie,
    reason,
    strip_path_lines,
    verify,
)
from kg_agents.methods.gcr.trie import TrieCache
from tests.fakes import FakeChat
from tests.methods.gcr.helpers import RecordingDecoder, smollm_tokenizer

SPLASH = {"question": "who directed Splash", "topic_entities": ["Splash"]}
DECODED = [
    {"path": "Splash -> directed_by -> Ron Howard", "hypothesis": "Ron Howard"},
    {"path": "Splash -> starred_actors -> Tom Hanks", "hypothesis": "Tom Hanks"},
]
VERIFIED = {"decoded": DECODED, "paths": [Path.from_text(d["path"]) for d in DECODED]}


@pytest.fixture
def deps():
    kg = MeteredKG(MemoryKG(CONTRACT_TRIPLES))
    return GCRDeps(
        kg=kg,
        decoder=RecordingDecoder(smollm_tokenizer()),
        cache=TrieCache(kg, smollm_tokenizer(), max_hops=2),
        general=FakeChat(rules=[("Splash", "Splash -> directed_by -> Ron Howard\nAnswer: Ron Howard")]),
        decode_template=load_prompt("gcr", "decode_zero_shot"),
        reason_template=load_prompt("gcr", "reason"),
        constrained=True,
        defaults=GCRContext(
            num_beams=4, max_hops=2, max_answers=10, decide="generate", answer_ratio=0.5, hops="none"
        ),
    )


def test_get_trie_uses_the_runs_hops_else_the_factorys(deps):
    out = get_trie(deps, SPLASH, Runtime(context=GCRContext(max_hops=1)))
    step = out["trace"][0]
    assert step["max_hops"] == 1 and step["built"] == 1 and out["trie_size"] == step["paths"] > 0
    assert get_trie(deps, SPLASH, None)["trace"][0]["max_hops"] == 2
    assert get_trie(dataclasses.replace(deps, constrained=False), SPLASH, None)["trie_size"] == -1


def test_get_trie_without_paths_is_a_no_path_record(deps):
    kg = MeteredKG(MemoryKG([*CONTRACT_TRIPLES, ("Lonely", "r", "Lonely")]))
    lonely = dataclasses.replace(deps, kg=kg, cache=TrieCache(kg, smollm_tokenizer(), max_hops=1))
    out = get_trie(lonely, {"question": "q", "topic_entities": ["Lonely"]}, None)
    assert out["trie_size"] == 0 and out["answers"] == [] and after_trie(out) == "end"
    (rec,) = out["errors"]
    assert rec["node"] == "get_trie" and rec["type"] == "NoPath" and not rec["halted"]


def test_get_trie_of_exactly_the_hop_count_without_such_a_path_is_a_no_path_record(deps):
    kg = MeteredKG(MemoryKG([*CONTRACT_TRIPLES, ("Lonely", "r", "Leaf")]))
    lonely = dataclasses.replace(deps, kg=kg, cache=TrieCache(kg, smollm_tokenizer(), max_hops=2))
    state = {"question": "q", "topic_entities": ["Lonely"]}
    assert get_trie(lonely, state, Runtime(context={"hops": 1}))["trie_size"] == 1
    out = get_trie(lonely, state, Runtime(context={"hops": 2}))  # 1..2 hops would hold the 1-hop path
    assert out["trie_size"] == 0 and out["trace"][0]["exact"] is True
    assert "no path of exactly 2 hops" in out["errors"][0]["message"]


def test_decode_takes_k_from_the_run_and_counts_the_call(deps):
    out = decode(deps, SPLASH, Runtime(context={"num_beams": 1}))
    assert deps.decoder.seen == [1] and len(deps.decoder.tries[0]) > 0
    assert out["decoded"] == [{**DECODED[0], "score": -0.1, "in_trie": True}]
    assert out["trace"][0]["num_beams"] == 1 and after_decode(out) == "verify_paths"
    assert out["usage"]["llm_calls"] == 1 and out["usage"]["input_tokens"] == 7


def test_decode_failure_is_recorded(deps):
    class Broken(RecordingDecoder):
        def generate(self, messages, trie, num_beams):
            raise ValueError("num_beams must be >= 1")

    out = decode(dataclasses.replace(deps, decoder=Broken(smollm_tokenizer())), SPLASH, None)
    assert out["decoded"] == [] and after_decode(out) == "end_empty"
    assert out["errors"][0]["type"] == "ValueError" and out["errors"][0]["node"] == "decode"


def test_verify_counts_unparsable_and_foreign_paths(deps):
    decoded = [*DECODED, {"path": "not a path"}, {"path": "Splash -> directed_by -> Tom Hanks"}]
    out = verify(deps, {"decoded": decoded})
    step = out["trace"][0]
    assert step["paths_kept"] == 2 and step["paths_unparsable"] == 1 and step["paths_dropped"] == 2
    assert out["evidence"] == [d["path"] for d in DECODED]


def test_reason_with_the_general_model_drops_path_lines(deps):
    out = reason(deps, {**SPLASH, **VERIFIED}, None)
    assert out["answers"] == ["Ron Howard"] and out["trace"][0]["mode"] == "general_llm"
    assert deps.general.calls["Splash"] == 1 and "# Answer: Tom Hanks" in deps.general.prompts[0]


def test_reason_vote_and_max_answers_of_the_run(deps):
    voting = dataclasses.replace(deps, general=None)
    out = reason(voting, {**SPLASH, **VERIFIED}, Runtime(context=GCRContext(max_answers=1)))
    assert out["answers"] == ["Ron Howard"] and out["trace"][0]["mode"] == "vote"
    empty = reason(voting, {**SPLASH, "decoded": [{"path": "a -> r -> b", "hypothesis": ""}]}, None)
    assert empty["answers"] == [] and empty["errors"][0]["type"] == "NoPath"
    # a hypothesis no verified path ends at is dropped; the vote falls back to the paths' endpoints
    stray = [{"path": DECODED[1]["path"], "hypothesis": "Steven Spielberg"}]
    out = reason(voting, {**SPLASH, "decoded": stray, "paths": VERIFIED["paths"][1:]}, None)
    assert out["answers"] == ["Tom Hanks"] and out["trace"][0]["dropped"] == ["Steven Spielberg"]


def test_reason_ranks_the_candidates_by_logprobs(deps):
    general = FakeChat(logprobs={"Tom Hanks": -0.1, "Ron Howard": -3.0})
    out = reason(
        dataclasses.replace(deps, general=general),
        {**SPLASH, **VERIFIED},
        Runtime(context={"decide": "rank"}),
    )
    step = out["trace"][0]
    assert out["answers"] == ["Tom Hanks"] and step["route"] == "logprobs" and general.calls["logprobs"] == 1
    assert out["usage"]["llm_calls"] == 1


def test_end_empty_records_once():
    out = end_empty({"errors": []})
    assert out["answers"] == [] and out["errors"][0]["type"] == "NoPath"
    decode_failed = {"errors": [{"node": "decode", "type": "ModelError"}], "answers": []}
    assert "errors" not in end_empty(decode_failed)


def test_routers_and_strip_path_lines():
    assert after_link({"topic_entities": ["Splash"]}) == "get_trie" and after_link({}) == "end"
    assert after_trie({"trie_size": -1}) == "decode"
    assert strip_path_lines("<PATH> a -> r -> b </PATH>\nAnswer: b") == "Answer: b"


def test_prompts_mapping_overrides_by_name(deps):
    general = FakeChat(default="Answer: Ron Howard")
    g = create_gcr_graph(
        MemoryKG(CONTRACT_TRIPLES),
        llm=general,
        decoder=RecordingDecoder(smollm_tokenizer()),
        prompts={"reason": "MINE {question}\n{paths}", "decode_few_shot": "unused {question} {entities}"},
    )
    out = g.invoke(SPLASH)
    assert out["answers"] == ["Ron Howard"] and general.prompts[0].startswith("MINE who directed Splash")
    # the prompt keyword alone works; the same prompt given both ways is an error
    g = create_gcr_graph(
        MemoryKG(CONTRACT_TRIPLES),
        llm=general,
        decoder=RecordingDecoder(smollm_tokenizer()),
        reason_prompt="KEYWORD {question}\n{paths}",
    )
    g.invoke(SPLASH)
    assert general.prompts[-1].startswith("KEYWORD")
    with pytest.raises(ConfigError, match="'reason' given twice"):
        create_gcr_graph(
            MemoryKG(CONTRACT_TRIPLES),
            llm=general,
            decoder=deps.decoder,
            prompts={"reason": "MINE {question}\n{paths}"},
            reason_prompt="KEYWORD {question}\n{paths}",
        )
    with pytest.raises(ConfigError, match="decode_few_shot, decode_zero_shot, reason"):
        create_gcr_graph(MemoryKG(CONTRACT_TRIPLES), decoder=deps.decoder, prompts={"decode": "x"})
