"""KnowledgeNavigator: pure helpers, control flow with scripted chat models, and the real thing."""

from __future__ import annotations

import numpy as np
import pytest
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from kg_agents.core.registry import create_graph, get_method
from kg_agents.errors import ConfigError, ModelError
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import Triple, verify_path
from kg_agents.kg.testing import CONTRACT_TRIPLES, LOOP_TRIPLES
from kg_agents.kg.text import relation_words
from kg_agents.methods.knowledge_navigator import KnowledgeNavigatorContext
from kg_agents.methods.knowledge_navigator.graph import PROMPT_NAMES, create_knowledge_navigator_graph
from kg_agents.methods.knowledge_navigator.hops import HopClassifier, mask_entities
from kg_agents.methods.knowledge_navigator.knowledge import (
    aggregate_triples,
    candidate_text,
    ground_answers,
    parse_selection,
    parse_variants,
    verbalise,
    weighted_vote,
)
from kg_agents.methods.knowledge_navigator.train import fit_softmax_head
from tests.fakes import FakeChat
from tests.kg.hop_by_hop import EngineJoinKG, HopByHopKG

Q = "who directed the films written by [Babaloo Mandel]"
VARIANTS = (
    "1. which directors made the movies written by [Babaloo Mandel]?\n"
    "2. name the directors of [Babaloo Mandel] films"
)


@pytest.fixture
def kg():
    return MemoryKG(CONTRACT_TRIPLES)


# --------------------------------------------------------------------------- pure helpers
def test_relation_words_and_candidate_text():
    assert relation_words("starred_actors") == "starred actors"
    assert relation_words("http://x.org/ns#in_language") == "in language"
    assert candidate_text("written_by", "in", "Babaloo Mandel") == "? written by Babaloo Mandel"
    assert candidate_text("written_by", "out", "Splash") == "Splash written by ?"


@pytest.mark.parametrize(
    "text,k,want",
    [
        ("Answer: 3", 1, [2]),
        ("Answer: 2, 1", 2, [1, 0]),
        ("Answer: 9", 1, []),  # out of range
        ("I choose Splash directed by ?", 1, [0]),
        ("directed by", 1, [0]),
        ("release year or written by", 2, [1, 2]),
        ("no idea", 1, []),
        ("Answer: 1.", 1, [0]),
    ],
)
def test_parse_selection(text, k, want):
    options = ["Splash directed by ?", "Splash release year ?", "? written by Splash"]
    phrases = ["directed by", "release year", "written by"]
    assert parse_selection(text, options, k, phrases) == want


def test_weighted_vote_original_counts_double():
    # original picks 0, both variants pick 1: 2 vs 2, the original breaks the tie
    scores, kept = weighted_vote([[0], [1], [1]], [2, 1, 1], 3, 1)
    assert scores == [2.0, 2.0, 0.0] and kept == [0]
    # equal weights: the variants win
    scores, kept = weighted_vote([[0], [1], [1]], [1, 1, 1], 3, 1)
    assert scores == [1.0, 2.0, 0.0] and kept == [1]
    # nobody picked anything: nothing kept
    assert weighted_vote([[], []], [2, 1], 3, 2) == ([0.0, 0.0, 0.0], [])
    with pytest.raises(ConfigError):
        weighted_vote([[0]], [1, 1], 2, 1)


def test_aggregate_and_verbalise_formats():
    ts = [
        Triple("Splash", "written_by", "Babaloo Mandel"),
        Triple("Parenthood", "written_by", "Babaloo Mandel"),
        Triple("Splash", "starred_actors", "Tom Hanks"),
        Triple("Splash", "starred_actors", "Daryl Hannah"),
        Triple("Splash", "written_by", "Babaloo Mandel"),  # duplicate
    ]
    assert aggregate_triples(ts) == [
        ("tail", "written_by", "Babaloo Mandel", ["Splash", "Parenthood"]),
        ("head", "starred_actors", "Splash", ["Tom Hanks", "Daryl Hannah"]),
    ]
    assert verbalise(ts, "joined_sentences") == [
        "Splash, Parenthood written by Babaloo Mandel.",
        "Splash starred actors Tom Hanks, Daryl Hannah.",
    ]
    assert verbalise(ts, "joined_triples") == [
        "[[Splash, Parenthood], written_by, Babaloo Mandel]",
        "[Splash, starred_actors, [Tom Hanks, Daryl Hannah]]",
    ]
    assert verbalise(ts, "single_triples")[0] == "[Splash, written_by, Babaloo Mandel]"
    assert len(verbalise(ts, "single_triples")) == 4
    assert verbalise(ts, "single_sentences")[1] == "Parenthood written by Babaloo Mandel."
    custom = verbalise(ts[:1], "single_sentences", head_template="The {relation} of {head} is: {tails}.")
    assert custom == ["The written by of Splash is: Babaloo Mandel."]
    with pytest.raises(ConfigError):
        verbalise(ts, "tables")


def test_parse_variants():
    got = parse_variants(VARIANTS + "\n3. a third one here?", Q, 2)
    assert got == [
        "which directors made the movies written by [Babaloo Mandel]?",
        "name the directors of [Babaloo Mandel] films",
    ]
    assert parse_variants(Q + "\n\n- " + Q.upper(), Q, 2) == []
    # what the local model typically writes: the question again, without brackets
    assert parse_variants("Question: Who directed the films written by Babaloo Mandel?", Q, 2) == []


def test_mask_entities():
    assert mask_entities(Q) == "who directed the films written by ENTITY"
    assert mask_entities("Who wrote Big and big fish", ["Big"]) == "Who wrote ENTITY and ENTITY fish"
    assert mask_entities("who wrote Bigger", ["Big"]) == "who wrote Bigger"


def test_fit_softmax_head_separates_and_roundtrips(tmp_path):
    rng = np.random.default_rng(1)
    centers = np.eye(3, 8) * 3
    y = rng.integers(0, 3, 300)
    x = (centers[y] + rng.standard_normal((300, 8)) * 0.3).astype(np.float32)
    w, b = fit_softmax_head(x, y, 3, epochs=200, seed=0)
    assert ((x @ w + b).argmax(1) == y).mean() > 0.98
    clf = HopClassifier(w, b, [1, 2, 3], meta={"note": "test"})
    back = HopClassifier.load(clf.save(tmp_path / "hops"))
    np.testing.assert_allclose(back.weight, w)
    assert back.classes == [1, 2, 3] and back.meta["note"] == "test"
    with pytest.raises(ModelError, match="train one"):
        HopClassifier.load(tmp_path / "nothing")
    with pytest.raises(ConfigError):
        HopClassifier(w, b, [1, 2])


def test_a_save_cut_between_its_two_files_is_refused_not_loaded(tmp_path, monkeypatch):
    """A crash after the new head.npz and before the new meta.json: load refuses the mixed checkpoint."""
    from kg_agents.core import hops

    w, b = np.eye(4, 3, dtype=np.float32), np.zeros(3, np.float32)
    d = HopClassifier(w, b, [1, 2, 3], meta={"run": 1}).save(tmp_path / "hops")
    write = hops.atomic_write

    def crash_on_meta(path, data):
        if str(path).endswith("meta.json"):
            raise KeyboardInterrupt
        write(path, data)

    monkeypatch.setattr(hops, "atomic_write", crash_on_meta)
    with pytest.raises(KeyboardInterrupt):
        HopClassifier(w * 2, b, [1, 2, 3], meta={"run": 2}).save(d)
    assert sorted(p.name for p in d.iterdir()) == ["head.npz", "meta.json"]  # no temporary left
    with pytest.raises(ModelError, match="incomplete"):
        HopClassifier.load(d)


# --------------------------------------------------------------------------- control flow
def _script():
    return [
        VARIANTS,  # similar questions
        # hop 1: Babaloo Mandel has one candidate (~written_by): no call.
        # hop 2, group {Splash}: directed_by, release_year, starred_actors, written_by, in that order
        "Answer: 1",
        "Answer: 3",
        "Answer: 3",
        # hop 2, group {Parenthood}: directed_by, starred_actors, written_by
        "Answer: 1",
        "Answer: 1",
        "Answer: 2",
        "Answer: Ron Howard",  # reasoning
    ]


def test_two_hop_vote_paths_usage(kg):
    llm = FakeChat(replies=_script())
    g = create_knowledge_navigator_graph(kg, decide="generate", llm=llm)
    out = g.invoke({"question": Q, "topic_entities": ["Babaloo Mandel"]}, context={"hops": 2})
    assert out["answers"] == ["Ron Howard"]
    # Ron Howard was first reached from Splash (the first core entity of hop 2)
    assert [p.to_text() for p in out["paths"]] == [
        "Babaloo Mandel -> ~written_by -> Splash -> directed_by -> Ron Howard"
    ]
    assert out["usage"]["llm_calls"] == 8
    assert out["errors"] == []
    votes = [t for t in out["trace"] if t["node"] == "select_relations"]
    assert len(votes) == 2
    assert votes[0]["votes"][0]["asked_llm"] is False and votes[0]["votes"][0]["kept"] == ["~written_by"]
    splash = next(v for v in votes[1]["votes"] if v["entities"] == ["Splash"])
    assert splash["choices"] == [["directed_by"], ["starred_actors"], ["starred_actors"]]
    assert splash["scores"] == [2.0, 0.0, 2.0, 0.0] and splash["kept"] == ["directed_by"]
    assert "Splash, Parenthood written by Babaloo Mandel." in out["evidence"]
    assert "Splash, Parenthood directed by Ron Howard." in out["evidence"]
    assert not any("Tom Hanks" in e for e in out["evidence"])
    assert any(t.get("paths_kept") == 1 and t.get("paths_dropped") == 0 for t in out["trace"])


def test_variant_weight_changes_the_vote(kg):
    llm = FakeChat(replies=_script())
    g = create_knowledge_navigator_graph(kg, decide="generate", llm=llm)
    out = g.invoke(
        {"question": Q, "topic_entities": ["Babaloo Mandel"]},
        context={"hops": 2, "original_weight": 1.0},
    )
    assert any("starred actors Tom Hanks" in e for e in out["evidence"])
    assert not any("Splash directed by" in e for e in out["evidence"])


def test_no_variants_one_call_per_group_and_per_entity_mode(kg):
    llm = FakeChat(replies=["Answer: 1", "Answer: 1", "Answer: Ron Howard"])
    g = create_knowledge_navigator_graph(kg, decide="generate", llm=llm)
    out = g.invoke(
        {"question": Q, "topic_entities": ["Babaloo Mandel"]}, context={"hops": 2, "num_variants": 0}
    )
    assert out["usage"]["llm_calls"] == 3 and out["answers"] == ["Ron Howard"]
    # Cast Away and Forrest Gump have the same candidates: one call per entity in the paper's mode ...
    llm2 = FakeChat(replies=["Answer: 1", "Answer: 1", "Answer: x"])
    g2 = create_knowledge_navigator_graph(kg, decide="generate", llm=llm2, grouping="none")
    out2 = g2.invoke(
        {"question": "q", "topic_entities": ["Cast Away", "Forrest Gump"]},
        context={"hops": 1, "num_variants": 0},
    )
    assert out2["usage"]["llm_calls"] == 3
    llm3 = FakeChat(replies=["Answer: 1", "Answer: x"])
    out3 = create_knowledge_navigator_graph(kg, decide="generate", llm=llm3).invoke(
        {"question": "q", "topic_entities": ["Cast Away", "Forrest Gump"]},
        context={"hops": 1, "num_variants": 0},
    )
    assert out3["usage"]["llm_calls"] == 2  # identical candidate sets share one call
    assert out3["answers"] == [] and out3["paths"] == []  # an answer not in the knowledge is dropped


def test_llm_budget_stops_retrieval(kg):
    llm = FakeChat(replies=[VARIANTS, "Answer: Ron Howard"])
    g = create_knowledge_navigator_graph(kg, decide="generate", llm=llm)
    out = g.invoke(
        {"question": Q, "topic_entities": ["Babaloo Mandel"]}, context={"hops": 3, "max_llm_calls": 3}
    )
    assert out["usage"]["llm_calls"] == 2
    verb = next(t for t in out["trace"] if t["node"] == "verbalise")
    assert "max_llm_calls=3" in verb["stop_reason"]
    assert out["evidence"] == ["Splash, Parenthood written by Babaloo Mandel."]


def test_fanout_and_core_limits_traced(kg):
    llm = FakeChat(replies=["Answer: Tom Hanks"])
    g = create_knowledge_navigator_graph(kg, decide="generate", llm=llm, fanout_limit=2)
    out = g.invoke(
        {"question": "which films did [Tom Hanks] act in", "topic_entities": ["Tom Hanks"]},
        context={"hops": 1, "num_variants": 0, "max_core_entities": 1},
    )
    exp = next(t for t in out["trace"] if t["node"] == "expand")
    assert exp["fanout_truncated"] == ["Tom Hanks ~starred_actors"]
    assert exp["triples"] == 2 and exp["core_cut"] is True


@pytest.mark.parametrize(
    "context,msg",
    [({"knowledge_format": "tables"}, "knowledge_format"), ({"top_k": 0}, "top_k"), ({"hops": 0}, "hops")],
)
def test_bad_options_recorded_not_raised(kg, context, msg):
    llm = FakeChat()
    out = create_knowledge_navigator_graph(kg, decide="generate", llm=llm).invoke(
        {"question": Q, "topic_entities": ["Babaloo Mandel"]}, context=context
    )
    assert out["answers"] == [] and out["paths"] == [] and msg in out["errors"][0]["message"]
    assert out["errors"][0]["type"] == "ConfigError" and out["errors"][0]["node"] == "analyse_question"
    assert out["usage"]["llm_calls"] == 0
    # the same values as factory options are refused at creation
    with pytest.raises(ConfigError, match=msg):
        create_knowledge_navigator_graph(kg, decide="generate", llm=llm, **context)


def test_empty_question_and_unknown_entity_end(kg):
    llm = FakeChat()
    g = create_knowledge_navigator_graph(kg, decide="generate", llm=llm)
    out = g.invoke({"question": "  "})
    assert out["answers"] == [] and out["errors"]
    out = g.invoke({"question": "who is [Nobody]", "topic_entities": ["Nobody Known"]})
    assert out["answers"] == [] and "unknown topic entities" in out["errors"][0]["message"]
    assert out["usage"]["llm_calls"] == 0


class LimitRecordingChat(FakeChat):
    """FakeChat that also records the ``max_tokens`` of every call."""

    limits: list = Field(default_factory=list)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.limits.append(kwargs.get("max_tokens"))
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_fewshot_prompt_used(kg):
    llm = LimitRecordingChat(replies=["Answer: Ron Howard"])
    out = create_knowledge_navigator_graph(kg, decide="generate", llm=llm).invoke(
        {"question": "who directed [Splash]", "topic_entities": ["Splash"]},
        context={
            "hops": 1,
            "num_variants": 0,
            "top_k": 5,
            "top_m": 5,
            "fewshot": True,
            "answer_max_tokens": 33,
        },
    )
    assert llm.limits == [33]
    assert out["answers"] == ["Ron Howard"]
    seen = llm.messages
    assert len(seen) == 1 and len(seen[0]) == 6  # system + 2 examples (human, ai) + the question
    assert "Splash directed by Ron Howard." in seen[0][-1].content


def test_stream_checkpointer_ainvoke_registry(kg):
    llm = FakeChat(replies=["Answer: Ron Howard"] * 4)
    g = create_knowledge_navigator_graph(kg, decide="generate", llm=llm, checkpointer=InMemorySaver())
    cfg = {"configurable": {"thread_id": "t"}}
    events = list(
        g.stream(
            {"question": "who directed [Splash]", "topic_entities": ["Splash"]},
            cfg,
            context={"hops": 1, "num_variants": 0, "top_k": 5, "top_m": 5},
        )
    )
    assert [next(iter(e)) for e in events] == [
        "link_entities",
        "analyse_question",
        "select_relations",
        "expand",
        "verbalise",
        "reason",
        "answer",
        "constrain",
    ]
    assert [p.to_text() for p in g.get_state(cfg).values["paths"]] == ["Splash -> directed_by -> Ron Howard"]
    assert get_method("knowledge_navigator").options()["grouping"].default == "candidates"
    g2 = create_graph("knowledge_navigator", kg, llm=llm)
    assert g2.name == "knowledge_navigator"


async def test_ainvoke(kg):
    llm = FakeChat(replies=["Answer: Ron Howard"])
    out = await create_knowledge_navigator_graph(kg, decide="generate", llm=llm).ainvoke(
        {"question": "who directed [Splash]", "topic_entities": ["Splash"]},
        context={"hops": 1, "num_variants": 0, "top_k": 5, "top_m": 5},
    )
    assert out["answers"] == ["Ron Howard"] and len(out["paths"]) == 1


def test_hop_grouping_one_call_over_the_union(kg):
    llm = FakeChat(replies=["Answer: 2", "Answer: 1984"])
    g = create_knowledge_navigator_graph(kg, decide="generate", llm=llm, grouping="hop")
    out = g.invoke(
        {"question": Q, "topic_entities": ["Babaloo Mandel"]}, context={"hops": 2, "num_variants": 0}
    )
    assert out["usage"]["llm_calls"] == 2
    vote = [t for t in out["trace"] if t["node"] == "select_relations"][1]["votes"][0]
    assert vote["entities"] == ["Splash", "Parenthood"]
    assert vote["candidates"] == ["directed_by", "release_year", "starred_actors", "written_by"]
    assert vote["kept"] == ["release_year"]
    assert "Splash release year 1984." in out["evidence"]
    assert [p.to_text() for p in out["paths"]] == [
        "Babaloo Mandel -> ~written_by -> Splash -> release_year -> 1984"
    ]
    with pytest.raises(ConfigError):
        create_knowledge_navigator_graph(kg, decide="generate", llm=llm, grouping="entity")


def test_hops_trainer_options_typed():
    from kg_agents.core.registry import get_trainer
    from kg_agents.options import keyword_options, parse_options

    spec = get_trainer("hops")
    pairs = ["hops=1,2", "limit_per_hop=none", "seed=3", "out_dir=/tmp/x"]
    opts = parse_options(pairs, keyword_options(spec.load()))
    assert opts == {"hops": (1, 2), "limit_per_hop": None, "seed": 3, "out_dir": "/tmp/x"}


def test_ground_answers():
    labels = {"Big": "Big", "Tom Hanks": "Tom Hanks", "Big Fish": "Big Fish", "Up": "Up", "1984": "1984"}
    depth = {"Big": 1, "Big Fish": 1, "Tom Hanks": 2, "Up": 2, "1984": 2}
    # a known label is kept; a sentence is replaced by the deepest entities it names
    assert ground_answers(["big"], labels, depth) == ["big"]
    assert ground_answers(["Big starred actors Tom Hanks"], labels, depth) == ["Tom Hanks"]
    # longest label first, no overlap: "Big Fish" is not also "Big"
    assert ground_answers(["Big Fish"], labels, {"Big": 2, "Big Fish": 1}) == ["Big Fish"]
    # short labels need matching case; topic entities are excluded
    assert ground_answers(["it went up in 1984"], labels, depth) == ["1984"]
    assert ground_answers(["Tom Hanks and Big"], labels, depth, exclude=["Tom Hanks"]) == ["Big"]
    assert ground_answers(["no idea"], labels, depth) == ["no idea"]


def test_grounding_switch(kg):
    script = ["Answer: Splash directed by Ron Howard"]
    ctx = {"hops": 1, "num_variants": 0, "top_k": 5, "top_m": 5}
    q = {"question": "who directed [Splash]", "topic_entities": ["Splash"]}
    out = create_knowledge_navigator_graph(kg, decide="generate", llm=FakeChat(replies=script)).invoke(
        q, context=ctx
    )
    assert out["answers"] == ["Ron Howard"]
    assert [p.to_text() for p in out["paths"]] == ["Splash -> directed_by -> Ron Howard"]
    out = create_knowledge_navigator_graph(kg, decide="generate", llm=FakeChat(replies=script)).invoke(
        q, context={**ctx, "ground_answers": False}
    )
    # without the deepest-hop replacement the sentence is no entity: dropped, and said so
    assert out["answers"] == [] and out["paths"] == []
    step = next(t for t in out["trace"] if t["node"] == "answer")
    assert step["dropped"] == ["Splash directed by Ron Howard"]


def test_ranked_route_votes_relations_and_ranks_answers(kg):
    def scores(text: str, options: list[str]) -> list[float]:
        # relations: "directed by" is the likeliest; answers: the last option is the likeliest
        if text.startswith("Which relation"):
            return [0.0 if "directed by" in o else -5.0 for o in options]
        return [float(i) for i in range(len(options))]

    llm = FakeChat(logprobs=scores)
    out = create_knowledge_navigator_graph(kg, llm=llm, num_variants=0, calibrate=False).invoke(
        {"question": "who directed [Splash]", "topic_entities": ["Splash"]}, context={"hops": 1}
    )
    sel = next(t for t in out["trace"] if t["node"] == "select_relations")
    assert sel["votes"][0]["kept"] == ["directed_by"]
    assert out["answers"] == ["Ron Howard"] and [p.to_text() for p in out["paths"]] == [
        "Splash -> directed_by -> Ron Howard"
    ]
    # one ranking for the relation, none for the single candidate answer
    assert llm.calls["logprobs"] == 1 and out["usage"]["llm_calls"] == 1


def test_calibrated_relation_choice_follows_what_the_question_raises(kg):
    seen: list[str] = []

    def scores(text: str, options: list[str]) -> list[float]:
        # "starred actors" is likeliest whatever the question; the question raises "directed by" most
        seen.append(text)
        asked = "who directed" in text
        return [
            (6.0 if asked else 8.0)
            if "starred actors" in o
            else (5.0 if asked else 1.0)
            if "directed by" in o
            else 0.0
            for o in options
        ]

    llm = FakeChat(logprobs=scores)
    q = {"question": "who directed [Splash]", "topic_entities": ["Splash"]}
    plain = create_knowledge_navigator_graph(kg, llm=llm, num_variants=0, calibrate=False).invoke(
        q, context={"hops": 1}
    )
    assert next(t for t in plain["trace"] if t["node"] == "select_relations")["votes"][0]["kept"] == [
        "starred_actors"
    ]
    seen.clear()
    out = create_knowledge_navigator_graph(kg, llm=llm, num_variants=0).invoke(q, context={"hops": 1})
    assert next(t for t in out["trace"] if t["node"] == "select_relations")["votes"][0]["kept"] == [
        "directed_by"
    ]
    assert out["answers"] == ["Ron Howard"] and out["usage"]["llm_calls"] == 2  # the ranking and its baseline
    assert "who directed" in seen[0] and "who directed" not in seen[1] and "[Splash]" in seen[1]
    # the budget counts both calls: one calibrated ranking does not fit in one call
    tight = create_knowledge_navigator_graph(kg, llm=llm, num_variants=0, max_llm_calls=1).invoke(
        q, context={"hops": 1}
    )
    assert tight["usage"]["llm_calls"] == 0
    with pytest.raises(ConfigError, match="calibrate"):
        create_knowledge_navigator_graph(kg, llm=llm, calibrate="yes")


def test_ranked_route_chooses_the_relation_chain_once_and_follows_it(kg):
    seen: list[str] = []

    def scores(text: str, options: list[str]) -> list[float]:
        seen.append(text)
        if "Relation chain:" in text:  # the chain the question names is the likeliest
            return [0.0 if o == "reverse of starred actors, then release year" else -5.0 for o in options]
        return [float(-i) for i in range(len(options))]  # answers: in the order offered

    llm = FakeChat(logprobs=scores)
    q = {"question": "when were the films starring [Tom Hanks] released", "topic_entities": ["Tom Hanks"]}
    # a store without chain queries: the chain is followed hop by hop
    out = create_knowledge_navigator_graph(HopByHopKG(kg), llm=llm, num_variants=0, calibrate=False).invoke(
        q, context={"hops": 2}
    )
    chain = next(t for t in out["trace"] if t["node"] == "select_chains")
    assert chain["kept"] == [["~starred_actors", "release_year"]] and chain["asked_llm"] is True
    assert chain["example"] is False  # a 2-hop chain: the 2-hop example would be copied
    hops = [t for t in out["trace"] if t["node"] == "select_relations"]
    assert [h["chain_relations"] for h in hops] == [["~starred_actors"], ["release_year"]]
    # the films without a release year are off the chain: the second hop starts from Splash and Big only
    expands = [t for t in out["trace"] if t["node"] == "expand"]
    assert expands[0]["off_chain"] == 2 and sorted(hops[1]["core"]) == ["Big", "Splash"]
    # the chain's whole answer set, best first, each with its path
    assert out["answers"] == ["1984", "1988"] and [p.to_text() for p in out["paths"]] == [
        "Tom Hanks -> ~starred_actors -> Splash -> release_year -> 1984",
        "Tom Hanks -> ~starred_actors -> Big -> release_year -> 1988",
    ]
    # one chain ranking and one answer ranking, no per-hop relation choice
    assert out["usage"]["llm_calls"] == 2 and "Relation chain:" in seen[0]
    # a 3-hop chain is ranked with the worked example, unless plan_example is off
    out3 = create_knowledge_navigator_graph(kg, llm=llm, num_variants=0, calibrate=False).invoke(
        q, context={"hops": 3}
    )
    assert next(t for t in out3["trace"] if t["node"] == "select_chains")["example"] is True
    plain = create_knowledge_navigator_graph(
        kg, llm=llm, num_variants=0, calibrate=False, plan_example=False
    ).invoke(q, context={"hops": 3})
    assert next(t for t in plain["trace"] if t["node"] == "select_chains")["example"] is False
    # the store walks the kept chain whole: one expand, the same answer and path
    whole = create_knowledge_navigator_graph(
        EngineJoinKG(kg), llm=llm, num_variants=0, calibrate=False
    ).invoke(q, context={"hops": 2})
    expands = [t for t in whole["trace"] if t["node"] == "expand"]
    assert len(expands) == 1 and expands[0]["whole_chains"] and expands[0]["hop"] == 2
    assert whole["answers"] == ["1984", "1988"] and [p.to_text() for p in whole["paths"]] == [
        "Tom Hanks -> ~starred_actors -> Splash -> release_year -> 1984",
        "Tom Hanks -> ~starred_actors -> Big -> release_year -> 1988",
    ]
    assert whole["usage"]["llm_calls"] == 2
    # relation_chain=False: the paper's choice per hop, one ranking per hop
    per_hop = create_knowledge_navigator_graph(
        kg, llm=llm, num_variants=0, calibrate=False, relation_chain=False
    ).invoke(q, context={"hops": 2})
    assert not [t for t in per_hop["trace"] if t["node"] == "select_chains"]
    assert all("votes" in t for t in per_hop["trace"] if t["node"] == "select_relations")
    with pytest.raises(ConfigError, match="relation_chain"):
        create_knowledge_navigator_graph(kg, llm=llm, relation_chain="yes")


def test_revisit_walks_the_chain_through_the_topic_and_may_end_on_it():
    """``revisit``: the kept chain is read as the graph executes it, through a self-loop and back
    through the topic entity, and a chain that reaches only the topic entity answers it, with its
    verified walk; without it those walks end with no answer."""
    loops = MemoryKG(LOOP_TRIPLES)
    wanted = {"recording", "recording, then recording", "parents, then children, then nationality"}

    def scores(text: str, options: list[str]) -> list[float]:
        if "Relation chain:" in text:
            return [0.0 if o in wanted else -5.0 for o in options]
        return [float(-i) for i in range(len(options))]

    llm = FakeChat(logprobs=scores)
    cases = [
        ("what is the recording of [Robin] 's recording", "Robin", 2, ["Robin"]),
        ("what is the recording of [Robin]", "Robin", 1, ["Robin"]),  # a 1-hop chain is ranked too
        ("what is the nationality of [Ann] 's parent 's child", "Ann", 3, ["UK", "France"]),
    ]
    for question, topic, hops, want in cases:
        q = {"question": question, "topic_entities": [topic]}
        ctx = {"hops": hops}
        plain = create_knowledge_navigator_graph(loops, llm=llm, num_variants=0, calibrate=False)
        assert set(plain.invoke(q, context=ctx)["answers"]) < set(want)
        out = create_knowledge_navigator_graph(
            loops, llm=llm, num_variants=0, calibrate=False, revisit=True
        ).invoke(q, context=ctx)
        assert sorted(out["answers"]) == sorted(want) and not out["errors"]
        assert out["paths"] and all(verify_path(loops, p) for p in out["paths"])
        assert sorted(p.end for p in out["paths"]) == sorted(want)
        assert next(t for t in out["trace"] if t["node"] == "expand")["whole_chains"] is True
    # a per-run option too
    out = create_knowledge_navigator_graph(loops, llm=llm, num_variants=0, calibrate=False).invoke(
        {"question": cases[0][0], "topic_entities": ["Robin"]}, context={"hops": 2, "revisit": True}
    )
    assert out["answers"] == ["Robin"] and [p.to_text() for p in out["paths"]] == [
        "Robin -> recording -> Robin -> recording -> Robin"
    ]
    with pytest.raises(ConfigError, match="revisit must be True or False"):
        create_knowledge_navigator_graph(loops, llm=llm, revisit="yes")


def test_the_chain_vote_the_budget_and_a_graph_without_chains(kg):
    def scores(text: str, options: list[str]) -> list[float]:
        if "Relation chain:" in text:  # the original question and one variant disagree
            want = "directed by" if "directed" in text else "release year"
            return [0.0 if o.endswith(want) else -5.0 for o in options]
        return [0.0] * len(options)

    llm = FakeChat(
        logprobs=scores, rules=[("ask exactly the same thing", "1. the release years of [Tom Hanks] films")]
    )
    q = {"question": "who directed the films starring [Tom Hanks]", "topic_entities": ["Tom Hanks"]}
    out = create_knowledge_navigator_graph(kg, llm=llm, num_variants=1, calibrate=False).invoke(
        q, context={"hops": 2}
    )
    chain = next(t for t in out["trace"] if t["node"] == "select_chains")
    # the original question's vote weighs 2, the variant's 1
    assert chain["kept"] == [["~starred_actors", "directed_by"]] and len(chain["rankings"]) == 2
    two = create_knowledge_navigator_graph(
        HopByHopKG(kg), llm=llm, num_variants=1, calibrate=False, top_m=2
    ).invoke(q, context={"hops": 2})
    kept = next(t for t in two["trace"] if t["node"] == "select_chains")["kept"]
    assert kept == [["~starred_actors", "directed_by"], ["~starred_actors", "release_year"]]
    assert [t["chain_relations"] for t in two["trace"] if t["node"] == "select_relations"][1] == [
        "directed_by",
        "release_year",
    ]
    # walked whole by the store, both kept chains reach their ends: the directors and the years
    whole = create_knowledge_navigator_graph(
        EngineJoinKG(kg), llm=llm, num_variants=1, calibrate=False, top_m=2
    ).invoke(q, context={"hops": 2})
    assert [t["whole_chains"] for t in whole["trace"] if t["node"] == "expand"] == [True]
    ends = {"Ron Howard", "Penny Marshall", "Robert Zemeckis", "1984", "1988"}
    assert ends <= {x for line in whole["evidence"] for x in ends if x in line}
    # the budget: the chain ranking of two voters does not fit in one call
    tight = create_knowledge_navigator_graph(
        kg, llm=llm, num_variants=1, calibrate=False, max_llm_calls=2
    ).invoke(q, context={"hops": 2})
    assert (
        tight["answers"] == []
        and "relation chains" in next(t for t in tight["trace"] if t["node"] == "verbalise")["stop_reason"]
    )
    # no 2-hop chain from a dead end: the hops choose their relations one by one
    lone = MemoryKG([("Splash", "directed_by", "Ron Howard")])
    out = create_knowledge_navigator_graph(lone, llm=llm, num_variants=0, calibrate=False).invoke(
        {"question": "who directed [Splash]", "topic_entities": ["Splash"]}, context={"hops": 2}
    )
    assert next(t for t in out["trace"] if t["node"] == "select_chains")["chains"] == 0
    assert out["answers"] == ["Ron Howard"]


# --------------------------------------------------------------------------- options and prompts
def test_run_context_keeps_the_factory_options_it_does_not_set(kg):
    """A per-run context that sets some fields leaves the factory's other options in force."""
    llm = LimitRecordingChat(replies=["Answer: Ron Howard"])
    g = create_knowledge_navigator_graph(
        kg, decide="generate", llm=llm, fewshot=True, answer_max_tokens=33, num_variants=0
    )
    q = {"question": "who directed [Splash]", "topic_entities": ["Splash"]}
    out = g.invoke(q, context={"hops": 1, "top_k": 5, "top_m": 5})
    assert out["answers"] == ["Ron Howard"] and out["usage"]["llm_calls"] == 1  # still no variants
    assert llm.limits == [33] and len(llm.messages[0]) == 6  # still few-shot, still 33 tokens
    # a field the run sets wins over the factory's; a dataclass context works the same
    g.invoke(q, context=KnowledgeNavigatorContext(hops=1, top_k=5, top_m=5, answer_max_tokens=7))
    assert llm.limits == [33, 7]


def test_factory_hops_and_variants(kg):
    llm = FakeChat(replies=["Answer: 1", "Answer: 1", "Answer: Ron Howard"])
    g = create_knowledge_navigator_graph(kg, decide="generate", llm=llm, hops=2, num_variants=0)
    out = g.invoke({"question": Q, "topic_entities": ["Babaloo Mandel"]})
    analysis = next(t for t in out["trace"] if t["node"] == "analyse_question")
    assert analysis["hops_source"] == "context" and analysis["hops"] == 2
    assert out["answers"] == ["Ron Howard"] and out["usage"]["llm_calls"] == 3


def test_prompts_override_by_name(kg):
    llm = FakeChat(rules=[("PICK", "Answer: 1"), ("KNOW", "Answer: Ron Howard")])
    g = create_knowledge_navigator_graph(
        kg,
        decide="generate",
        llm=llm,
        prompts={
            "select_relations": "PICK for {question} {entity} {k}:\n{options}",
            "reason": "KNOW {knowledge} Q {question}",
        },
    )
    out = g.invoke(
        {"question": "who directed [Splash]", "topic_entities": ["Splash"]},
        context={"hops": 1, "num_variants": 0},
    )
    assert out["answers"] == ["Ron Howard"] and llm.calls["PICK"] == 1 and llm.calls["KNOW"] == 1
    assert llm.prompts[1] == "KNOW <kg>\nSplash directed by Ron Howard.\n</kg> Q who directed [Splash]"
    assert PROMPT_NAMES == (
        "reason",
        "reason_fewshot",
        "select_chain_rank",
        "select_relations",
        "select_relations_rank",
        "similar_questions",
    )
    with pytest.raises(ConfigError, match="valid: reason, reason_fewshot, select_chain_rank"):
        create_knowledge_navigator_graph(kg, decide="generate", llm=llm, prompts={"answer": "x"})
    with pytest.raises(ConfigError, match="twice"):
        create_knowledge_navigator_graph(
            kg, decide="generate", llm=llm, select_prompt="a", prompts={"select_relations": "b"}
        )


def test_reason_prompt_keyword_covers_fewshot_too(kg):
    llm = FakeChat(rules=[("MINE", "Answer: Ron Howard")])
    g = create_knowledge_navigator_graph(
        kg, decide="generate", llm=llm, reason_prompt="MINE {knowledge} {question}"
    )
    ctx = {"hops": 1, "num_variants": 0, "top_k": 5, "top_m": 5}
    q = {"question": "who directed [Splash]", "topic_entities": ["Splash"]}
    g.invoke(q, context=ctx)
    g.invoke(q, context={**ctx, "fewshot": True})
    assert llm.calls["MINE"] == 2
