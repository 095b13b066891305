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
from kg_agents.methods.baselines.retrieval import (
    FRONTIER_CHUNK,
    TripleEmbeddings,
    TripleTextIndex,
    neighbourhood,
)
from tests.fakes import FakeChat, FakeHops

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


# ---------------------------------------------------------------------- the answers' distance (answer_hops)
SHARED = {"question": "which films share the director of [Splash]"}
#: Ron Howard (1 hop from Splash) is the likeliest reply; Parenthood (2 hops) the next.
SHARED_SCORES = {"Ron Howard": -1.0, "Parenthood": -2.0, "Big": -3.0}


def shared_scores(text: str, options: list[str]) -> list[float]:
    return [SHARED_SCORES.get(o.removeprefix("Answer: "), -9.0) for o in options]


def _step(out, node):
    return next(s for s in out["trace"] if s.get("node") == node)


@pytest.mark.parametrize("factory", ["graph_rag", "text_rag"])
def test_rag_answers_lie_at_the_given_distance(factory):
    # the 1-hop director scores best, but with answers two hops away only the 2-hop entities are offered:
    # Parenthood (through Ron Howard or Babaloo Mandel), Big, Cast Away and Forrest Gump (through Tom Hanks)
    kg = MemoryKG(CONTRACT_TRIPLES)

    def build(**kw):
        llm = FakeChat(logprobs=shared_scores, tools=False)
        if factory == "graph_rag":
            return create_graph_rag_graph(kg, llm=llm, answer_ratio=1.0, **kw)
        return create_text_rag_graph(
            kg, llm=llm, encoder=HashingEncoder(), answer_ratio=1.0, candidate_text="label", **kw
        )

    g = build(answer_hops=2)
    out = g.invoke({**SHARED, "topic_entities": ["Splash"]})
    assert out["answers"] == ["Parenthood"]
    assert all(len(p.triples) == 2 and p.start == "Splash" and p.end == "Parenthood" for p in out["paths"])
    answer = _step(out, "answer")
    assert answer["answer_hops"] == 2 and answer["kept_at_distance"] is True
    assert answer["candidates"] == 4 and "Ron Howard" not in [o for o, _ in answer["top"]]
    assert _step(out, "retrieve")["answer_hops"] == 2
    # off: the 1-hop director wins, as before
    off = build(answer_hops="none")
    assert off.invoke({**SHARED, "topic_entities": ["Splash"]})["answers"] == ["Ron Howard"]
    # the run's context sets it, and a given classifier predicts it off the MetaQA graph under "auto"
    g1 = build(answer_hops=2)
    ctx = g1.invoke({**SHARED, "topic_entities": ["Splash"]}, context={"answer_hops": 1})
    assert ctx["answers"] == ["Ron Howard"]
    hops = FakeHops(2)
    auto = build(hop_classifier=hops)
    assert auto.invoke({**SHARED, "topic_entities": ["Splash"]})["answers"] == ["Parenthood"]
    assert hops.seen == [(SHARED["question"], ["Splash"])]
    # without a classifier "auto" is off on a graph that is not MetaQA's
    plain = build()
    out = plain.invoke({**SHARED, "topic_entities": ["Splash"]})
    assert out["answers"] == ["Ron Howard"] and _step(out, "retrieve")["answer_hops"] is None


@pytest.mark.parametrize("factory", [create_graph_rag_graph, create_text_rag_graph])
def test_rag_answer_hops_is_ignored_on_the_papers_route_and_checked(factory):
    hops = FakeHops(2)
    llm = FakeChat(default="Answer: Ron Howard", tools=False)
    extra = {"encoder": HashingEncoder()} if factory is create_text_rag_graph else {}
    g = factory(MemoryKG(CONTRACT_TRIPLES), llm=llm, decide="generate", hop_classifier=hops, **extra)
    assert g.invoke({**SHARED, "topic_entities": ["Splash"]})["answers"] == ["Ron Howard"] and hops.seen == []
    for bad in (0, "two", True, 1.5):
        with pytest.raises(ConfigError, match="answer_hops must be one of auto, predict, chain, none"):
            factory(MemoryKG(CONTRACT_TRIPLES), llm=llm, answer_hops=bad)


def test_graph_rag_reads_the_neighbourhood_out_to_the_answers_distance():
    deps = GraphRAGDeps(
        kg=MeteredKG(MemoryKG(CONTRACT_TRIPLES)),
        model=FakeChat(),
        template=load_prompt("baselines", "rag"),
        fanout_limit=200,
        defaults=GraphRAGContext(max_triples=3, max_answers=10, decide="rank", answer_hops=2),
        max_neighbourhood=8,
    )
    out = graph_rag_retrieve(deps, {**SHARED, "topic_entities": ["Splash"]}, None)
    assert len(out["neighbourhood"]) == 8 and len(out["triples"]) == 3  # the prompt shows the first 3
    step = out["trace"][0]
    assert step["neighbourhood_truncated"] is True and step["context_truncated"] is True
    assert out["answer_hops"] == 2 and out["triples"] == out["neighbourhood"][:3]
    for bad in ({"max_neighbourhood": 0}, {"hop_fanout": 0}, {"max_hops": 0}):
        with pytest.raises(ConfigError, match="max_hops, hop_fanout and max_neighbourhood"):
            create_graph_rag_graph(MemoryKG(CONTRACT_TRIPLES), llm=FakeChat(), **bad)


def test_answer_hops_from_the_command_line():
    from kg_agents.options import keyword_options, parse_options

    for factory in (create_graph_rag_graph, create_text_rag_graph):
        valid = keyword_options(factory)
        assert parse_options(["answer_hops=2"], valid) == {"answer_hops": 2}
        assert parse_options(["answer_hops=none"], valid) == {"answer_hops": "none"}


@pytest.mark.parametrize("factory", [create_graph_rag_graph, create_text_rag_graph])
def test_rag_answer_distance_beyond_the_farthest_read_is_traced_and_not_followed(factory):
    # graph_rag reads at most max_hops (2), text_rag its radius hops (2): a 3-hop prediction is noted and
    # the run is the one without a distance (Ron Howard, 1 hop away, scores best)
    text = factory is create_text_rag_graph
    extra = {"encoder": HashingEncoder(), "candidate_text": "label"} if text else {}
    llm = FakeChat(logprobs=shared_scores, tools=False)
    g = factory(MemoryKG(CONTRACT_TRIPLES), llm=llm, answer_hops=3, answer_ratio=1.0, **extra)
    out = g.invoke({**SHARED, "topic_entities": ["Splash"]})
    assert out["answers"] == ["Ron Howard"]
    step = _step(out, "retrieve")
    assert step["answer_hops"] is None and step["predicted_hops"] == 3 and step["beyond"] == 2
    assert "answer_hops" not in _step(out, "answer")
    if not text:  # a wider reach follows it
        wide = create_graph_rag_graph(MemoryKG(CONTRACT_TRIPLES), llm=llm, answer_hops=3, max_hops=3)
        assert _step(wide.invoke({**SHARED, "topic_entities": ["Splash"]}), "retrieve")["answer_hops"] == 3


def test_text_rag_reads_candidates_as_labels_where_they_lie_at_one_distance():
    # candidate_text="auto" (the default): with the answers' distance given, every candidate is 2 hops away
    # and is ranked as its label; without it, 1- and 2-hop candidates mix and each is ranked as its path
    def build(**kw):
        llm = FakeChat(logprobs=shared_scores, tools=False)
        return create_text_rag_graph(MemoryKG(CONTRACT_TRIPLES), llm=llm, encoder=HashingEncoder(), **kw)

    at_two = _step(build(answer_hops=2).invoke({**SHARED, "topic_entities": ["Splash"]}), "answer")
    assert at_two["candidate_text"] == "label" and at_two["top"][0][0] == "Parenthood"
    mixed = _step(build(answer_hops="none").invoke({**SHARED, "topic_entities": ["Splash"]}), "answer")
    assert mixed["candidate_text"] == "path"
    with pytest.raises(ConfigError, match="candidate_text must be one of 'label', 'path'"):
        create_graph_rag_graph(MemoryKG(CONTRACT_TRIPLES), llm=FakeChat(), candidate_text="auto")


def test_neighbourhood_reads_a_wide_frontier_until_the_budget_is_full():
    # a hub with 200 neighbours, each with 3 of its own: the budget fills within the first chunk of the
    # second hop, so the other 136 neighbours are never read, and the triples are those of a whole read
    triples = [Triple("Hub", "has", f"n{i:03d}") for i in range(200)]
    triples += [Triple(f"n{i:03d}", "has", f"m{i:03d}-{j}") for i in range(200) for j in range(3)]
    kg = MemoryKG(triples)
    asked: list[list[str]] = []
    read = kg.neighbors_many

    class Spy:
        def neighbors_many(self, entities, *args, **kwargs):
            asked.append(list(entities))
            return read(entities, *args, **kwargs)

    got, cut = neighbourhood(Spy(), ["Hub"], 2, 500, 300)
    assert cut is True and len(got) == 300
    assert [len(a) for a in asked] == [1, FRONTIER_CHUNK]
    whole: list[Triple] = list(kg.neighbors("Hub", direction="both", limit=500))
    for n in [t.other("Hub") for t in whole]:
        whole += [t for t in kg.neighbors(n, direction="both", limit=500) if t not in whole]
    assert got == whole[:300]
    # a frontier the budget does not cut is read whole, chunk by chunk
    asked.clear()
    got, cut = neighbourhood(Spy(), ["Hub"], 2, 500, 10_000)
    assert cut is False and len(got) == 800
    assert [len(a) for a in asked] == [1, 64, 64, 64, 8]
