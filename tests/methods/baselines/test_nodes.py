"""The baselines' nodes called one by one, over small dependencies objects (FakeChat, a hashing encoder)."""

from __future__ import annotations

import pytest
from langgraph.runtime import Runtime

from kg_agents.core.metering import MeteredKG
from kg_agents.core.prompts import load_prompt
from kg_agents.errors import ConfigError, EndpointError
from kg_agents.files import safe_name
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import Triple
from kg_agents.kg.encoder import HashingEncoder
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.baselines.graph import (
    GraphRAGContext,
    LLMOnlyContext,
    TextRAGContext,
    create_graph_rag_graph,
    create_llm_only_graph,
    create_text_rag_graph,
)
from kg_agents.methods.baselines.nodes import (
    GraphRAGDeps,
    LLMOnlyDeps,
    TextRAGDeps,
    graph_rag_answer,
    graph_rag_retrieve,
    llm_only_answer,
    text_rag_after_link,
    text_rag_answer,
    text_rag_retrieve,
)
from kg_agents.methods.baselines.retrieval import TripleEmbeddings, TripleTextIndex
from tests.fakes import FakeChat

SPLASH = {"question": "who directed Splash", "topic_entities": ["Splash"]}
DIRECTED = Triple("Splash", "directed_by", "Ron Howard")
DIRECTED_TEXT = "Splash directed by Ron Howard"


class DownKG(MemoryKG):
    def neighbors_many(self, *args, **kwargs):
        raise EndpointError("http://kg.invalid/sparql", "connection refused")


def rag_deps(kg=None, reply="Answer: Ron Howard"):
    return GraphRAGDeps(
        kg=MeteredKG(kg or MemoryKG(CONTRACT_TRIPLES)),
        model=FakeChat(default=reply),
        template=load_prompt("baselines", "rag"),
        fanout_limit=200,
        defaults=GraphRAGContext(max_triples=60, max_answers=10),
    )


def text_deps(scope="neighborhood", reply="Answer: Ron Howard", index_dir=None):
    return TextRAGDeps(
        kg=MeteredKG(MemoryKG(CONTRACT_TRIPLES)),
        model=FakeChat(default=reply),
        template=load_prompt("baselines", "rag"),
        embeddings=TripleEmbeddings(HashingEncoder(), index_dir=index_dir),
        scope=scope,
        hops=2,
        fanout_limit=30,
        max_candidates=300,
        defaults=TextRAGContext(top_k=20, max_answers=10),
    )


def test_llm_only_answer_takes_max_answers_from_the_run():
    deps = LLMOnlyDeps(
        FakeChat(default="Answer: Ron Howard | Penny Marshall"),
        load_prompt("baselines", "llm_only"),
        LLMOnlyContext(max_answers=10),
    )
    assert llm_only_answer(deps, SPLASH, None)["answers"] == ["Ron Howard", "Penny Marshall"]
    out = llm_only_answer(deps, SPLASH, Runtime(context=LLMOnlyContext(max_answers=1)))
    assert out["answers"] == ["Ron Howard"] and out["usage"]["llm_calls"] == 1
    empty = llm_only_answer(deps, {"question": " "}, None)
    assert empty["errors"][0]["type"] == "EmptyQuestion" and deps.model.calls["default"] == 2


def test_graph_rag_retrieve_cuts_at_the_runs_max_triples():
    deps = rag_deps()
    out = graph_rag_retrieve(deps, SPLASH, Runtime(context={"max_triples": 2}))
    assert len(out["triples"]) == 2 and out["trace"][0]["context_truncated"] is True
    full = graph_rag_retrieve(deps, SPLASH, None)
    assert len(full["triples"]) > 2 and full["trace"][0]["context_truncated"] is False


def test_graph_rag_retrieve_on_a_failing_kg_halts_with_a_record():
    out = graph_rag_retrieve(rag_deps(DownKG(CONTRACT_TRIPLES)), SPLASH, None)
    (rec,) = out["errors"]
    assert rec["type"] == "EndpointError" and rec["halted"] and rec["endpoint"] == "http://kg.invalid/sparql"
    assert out["answers"] == [] and out["usage"]["kg_calls"] >= 0


def test_graph_rag_answer_verifies_the_paths_to_the_answer():
    deps = rag_deps(reply="Answer: Splash was directed by Ron Howard")
    out = graph_rag_answer(deps, {**SPLASH, "triples": [DIRECTED]}, None)
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]
    assert DIRECTED_TEXT in deps.model.prompts[0]
    no = graph_rag_answer(rag_deps(reply=""), {**SPLASH, "triples": []}, None)
    assert no["errors"][0]["type"] == "NoCandidate" and no["answers"] == []


def test_text_rag_nodes_with_a_hashing_encoder():
    deps = text_deps()
    out = text_rag_retrieve(deps, SPLASH, Runtime(context=TextRAGContext(top_k=3)))
    step = out["trace"][0]
    assert step["retrieved"] == len(out["triples"]) == 3 and step["candidates"] > 3
    answered = text_rag_answer(deps, {**SPLASH, "triples": [DIRECTED]}, None)
    assert answered["answers"] == ["Ron Howard"]
    assert [p.to_text() for p in answered["paths"]] == ["Splash -> directed_by -> Ron Howard"]


def test_text_rag_after_link_routes_by_scope():
    no_entity = {"question": "who directed it", "topic_entities": []}
    assert text_rag_after_link(text_deps(), no_entity) == "end"
    assert text_rag_after_link(text_deps(scope="kg"), no_entity) == "retrieve"
    assert text_rag_after_link(text_deps(scope="kg"), {"question": " "}) == "end"


def test_whole_kg_index_in_the_cache_root(tmp_path, monkeypatch):
    monkeypatch.setenv("KG_AGENTS_CACHE", str(tmp_path))
    kg, enc = MemoryKG(CONTRACT_TRIPLES), HashingEncoder()
    folder = TripleTextIndex.default_directory(kg, enc)
    assert folder.parent == tmp_path / "text_index"
    assert folder.name == f"{safe_name(str(kg.name))}-{kg.fingerprint()}-{safe_name(enc.name)}"
    deps = text_deps(scope="kg")
    out = text_rag_retrieve(deps, {"question": "who directed Big"}, Runtime(context={"top_k": 2}))
    assert len(out["triples"]) == 2 and out["trace"][0]["scope"] == "kg"
    assert sorted(p.name for p in folder.iterdir()) == ["triples.faiss", "triples.tsv"]  # no temp files


def test_prompts_mapping_by_name():
    llm = FakeChat(default="Answer: Ron Howard")
    create_llm_only_graph(None, llm=llm, prompts={"llm_only": "MINE {question}"}).invoke(SPLASH)
    assert llm.prompts[-1] == "MINE who directed Splash"
    create_llm_only_graph(None, llm=llm, prompt="KW {question}").invoke(SPLASH)
    assert llm.prompts[-1] == "KW who directed Splash"
    with pytest.raises(ConfigError, match="given twice"):
        create_llm_only_graph(None, llm=llm, prompts={"llm_only": "MINE {question}"}, prompt="KW {question}")
    kg = MemoryKG(CONTRACT_TRIPLES)
    create_graph_rag_graph(kg, llm=llm, prompts={"rag": "R {question} {knowledge}"}).invoke(SPLASH)
    assert llm.prompts[-1].startswith("R who directed Splash ") and DIRECTED_TEXT in llm.prompts[-1]
    with pytest.raises(ConfigError, match="valid: llm_only"):
        create_llm_only_graph(None, llm=llm, prompts={"rag": "x"})
    with pytest.raises(ConfigError, match="valid: rag"):
        create_text_rag_graph(kg, llm=llm, prompts={"llm_only": "x"})


def test_rag_calibrate_ranks_by_how_much_the_question_raises_each_candidate():
    # Tom Hanks is the likelier reply to the question, but likelier still without it: calibrated, the
    # question raises Ron Howard most
    def scores(text: str, options: list[str]) -> list[float]:
        asked = "who directed" in text
        table = {"Ron Howard": (-2.0, -4.0), "Tom Hanks": (-1.0, -0.5)}
        names = [o.removeprefix("Answer: ") for o in options]
        return [table[n][0 if asked else 1] if n in table else -9.0 for n in names]

    triples = [DIRECTED, Triple("Splash", "starred_actors", "Tom Hanks")]
    state = {**SPLASH, "triples": triples}
    for calibrate, want in ((False, ["Tom Hanks"]), (True, ["Ron Howard"])):
        llm = FakeChat(logprobs=scores, tools=False)
        deps = GraphRAGDeps(
            kg=MeteredKG(MemoryKG(CONTRACT_TRIPLES)),
            model=llm,
            template=load_prompt("baselines", "rag"),
            fanout_limit=200,
            defaults=GraphRAGContext(max_triples=60, max_answers=10, decide="rank", answer_ratio=1.0),
            calibrate=calibrate,
        )
        out = graph_rag_answer(deps, state, None)
        assert out["answers"] == want
        assert llm.calls["logprobs"] == (2 if calibrate else 1)
        if calibrate:  # the baseline prompt has the topic entity in place of the question
            assert "who directed" not in llm.prompts[1] and "[Splash]" in llm.prompts[1]
            assert out["trace"][0]["calibrated"] is True


@pytest.mark.parametrize("factory", [create_graph_rag_graph, create_text_rag_graph])
def test_rag_calibrate_must_be_a_bool(factory):
    with pytest.raises(ConfigError, match="calibrate must be True or False"):
        factory(MemoryKG(CONTRACT_TRIPLES), llm=FakeChat(), calibrate="yes")
