from __future__ import annotations

import math

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from kg_agents.core.registry import get_method
from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import Path, verify_path
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.gcr.decoding import DecodedPath
from kg_agents.methods.gcr.graph import create_gcr_graph
from kg_agents.methods.gcr.local_decoder import KGTrieLogitsProcessor
from kg_agents.methods.gcr.nodes import format_paths, vote
from kg_agents.methods.gcr.trie import TrieCache, build_trie
from tests.fakes import FakeChat
from tests.methods.gcr.helpers import RecordingDecoder, smollm_tokenizer, tiny_decoder


@pytest.fixture(scope="module")
def kg():
    return MemoryKG(CONTRACT_TRIPLES)


@pytest.fixture(scope="module")
def decoder():
    return tiny_decoder(max_answer_tokens=4)


# --------------------------------------------------------------------------- decoder
def test_constrained_decoder_returns_only_trie_paths(kg, decoder):
    trie = build_trie(kg, ["Splash", "Tom Hanks"], decoder.tokenizer, max_hops=2)
    out = decoder.generate("# Reasoning Path:\n", trie, num_beams=6)
    assert 1 <= len(out) <= 6
    assert len({d.path_text for d in out}) == len(out)  # distinct paths
    assert [d.score for d in out] == sorted((d.score for d in out), reverse=True)
    for d in out:
        assert d.meta["in_trie"] and d.path_text in trie.texts
        assert verify_path(kg, Path.from_text(d.path_text))
        assert d.text.startswith(f"<PATH> {d.path_text} </PATH>\n# Answer:\n")
        assert "\n" not in d.continuation and math.isfinite(d.score)
    st = decoder.last_stats
    assert st["prompt_tokens"] > 0 and st["processor_calls"] == st["steps"] > 0


def test_unconstrained_decoder_paths_not_from_the_trie(kg, decoder):
    """The random tiny model writes no KG path on its own: the ablation really is unconstrained."""
    out = decoder.generate("# Reasoning Path:\n", None, num_beams=3, answer=False)
    assert all(not d.meta["in_trie"] for d in out)
    for d in out:
        try:
            ok = verify_path(kg, Path.from_text(d.path_text))
        except ValueError:
            ok = False
        assert not ok


def test_processor_never_falls_back_to_the_vocabulary(kg):
    import torch

    tok = smollm_tokenizer()
    trie = build_trie(kg, ["Splash"], tok, max_hops=1)
    proc = KGTrieLogitsProcessor(trie, tok, prompt_len=2, eos_token_id=tok.eos_token_id)
    seq = list(trie.sequences[0])

    def finite(gen):
        scores = proc(torch.tensor([[7, 7, *gen]]), torch.zeros(1, len(tok)))
        return torch.nonzero(torch.isfinite(scores[0])).flatten().tolist()

    assert set(finite(seq[:3])) == set(trie.allowed(seq[:3]))
    assert finite([*seq[:2], 12345]) == []  # off the trie: dead, no fallback
    assert finite(seq) == [tok.eos_token_id]


def test_empty_trie_decodes_nothing(decoder):
    from kg_agents.methods.gcr.trie import KGTrie

    assert decoder.generate("x", KGTrie([], [], tokenizer_sig=decoder.signature), 3) == []
    with pytest.raises(ValueError):
        decoder.generate("x", None, 0)


# --------------------------------------------------------------------------- graph
def endpoint_reply(text: str) -> str:
    """A general model that answers with the entity ending the first path its prompt shows, and a
    name no path reaches (which grounding must drop)."""
    line = next(x for x in text.splitlines() if " -> " in x)
    return f"{line.split(' -> ')[-1].strip()}\nSteven Spielberg"


def grounded(out: dict) -> bool:
    return bool(out["answers"]) and set(out["answers"]) <= {p.end for p in out["paths"]}


def test_gcr_graph_answers_paths_usage(kg, decoder):
    llm = FakeChat(replies=[endpoint_reply])
    g = create_gcr_graph(kg, decide="generate", llm=llm, decoder=decoder, num_beams=4)
    out = g.invoke({"question": "who directed Splash", "topic_entities": ["Splash"]})
    first = next(x for x in llm.prompts[0].splitlines() if " -> " in x)
    assert out["answers"] == [first.split(" -> ")[-1].strip()] and grounded(out)
    reason = next(t for t in out["trace"] if t["node"] == "reason")
    assert reason["dropped"] == ["Steven Spielberg"]
    assert out["paths"] and all(verify_path(kg, p) for p in out["paths"])
    assert all(p.start == "Splash" for p in out["paths"])
    v = next(t for t in out["trace"] if t["node"] == "verify_paths")
    assert v["paths_dropped"] == 0 and v["paths_kept"] == len(out["paths"])
    assert out["usage"]["llm_calls"] == 2 and out["usage"]["input_tokens"] > 0
    trie_node = next(t for t in out["trace"] if t["node"] == "get_trie")
    # link (has_entity) + trie build (one neighbors_many per hop) + one has_triple per verified hop
    assert trie_node["built"] == 1
    assert out["usage"]["kg_calls"] >= 1 + 2 + sum(len(p) for p in out["paths"])
    assert not out.get("errors")


def test_gcr_without_general_llm_votes(kg, decoder):
    g = create_gcr_graph(kg, general_llm=None, decoder=decoder, num_beams=3)
    out = g.invoke(
        {"question": "who directed Splash", "topic_entities": ["Splash"]}, context={"num_beams": 2}
    )
    assert out["usage"]["llm_calls"] == 1
    trace = next(t for t in out["trace"] if t["node"] == "reason")
    assert trace["mode"] == "vote" and grounded(out)
    assert next(t for t in out["trace"] if t["node"] == "decode")["num_beams"] == 2


def test_gcr_unconstrained_ablation_records_unfaithful_paths(kg, decoder):
    g = create_gcr_graph(kg, general_llm=None, decoder=decoder, constrained=False, num_beams=3)
    out = g.invoke({"question": "who directed Splash", "topic_entities": ["Splash"]})
    v = [t for t in out["trace"] if t["node"] == "verify_paths"]
    if v:  # the random model may write no complete path at all
        assert v[0]["constrained"] is False and v[0]["paths_kept"] == len(out["paths"]) == 0
        assert v[0]["paths_dropped"] >= 1
    else:
        assert out["errors"]


def test_gcr_stream_checkpointer_and_batch(kg, decoder):
    llm = FakeChat(replies=[endpoint_reply])
    g = create_gcr_graph(
        kg, decide="generate", llm=llm, decoder=decoder, num_beams=2, checkpointer=InMemorySaver()
    )
    events = list(
        g.stream(
            {"question": "who directed Splash", "topic_entities": ["Splash"]},
            {"configurable": {"thread_id": "t"}},
        )
    )
    assert [next(iter(e)) for e in events] == [
        "link_entities",
        "get_trie",
        "decode",
        "verify_paths",
        "reason",
        "constrain",
    ]
    outs = create_gcr_graph(kg, decide="generate", llm=llm, decoder=decoder, num_beams=2).batch(
        [{"question": "q1", "topic_entities": ["Splash"]}, {"question": "q2", "topic_entities": ["Big"]}]
    )
    assert all(grounded(o) and len(o["answers"]) == 1 for o in outs)


class OneHop:
    """A hop classifier that predicts 1 hop for every question."""

    def __init__(self):
        self.asked = []

    def predict(self, questions, entities):
        self.asked.extend(questions)
        return [1] * len(questions)


def test_gcr_trie_depth_follows_the_question_s_hop_count(kg, decoder):
    # hops: the trie per question holds the paths of exactly that many hops, instead of 1..max_hops
    def depth(out):
        return next(t for t in out["trace"] if t["node"] == "get_trie")["max_hops"]

    q = {"question": "who directed Splash", "topic_entities": ["Splash"]}
    g = create_gcr_graph(kg, general_llm=None, decoder=decoder, num_beams=3, max_hops=2)
    out = g.invoke(q)  # "none", the default: every path of 1..max_hops hops
    assert depth(out) == 2 and {len(p) for p in out["paths"]} == {1, 2}
    out = g.invoke(q, context={"hops": 1})
    assert depth(out) == 1 and out["paths"] and all(len(p) == 1 for p in out["paths"])
    out = g.invoke(q, context={"hops": 2})  # no decoded path ends before 2 hops
    assert next(t for t in out["trace"] if t["node"] == "get_trie")["exact"] is True
    assert out["paths"] and all(len(p) == 2 and verify_path(kg, p) for p in out["paths"])
    clf = OneHop()
    g = create_gcr_graph(kg, general_llm=None, decoder=decoder, num_beams=3, max_hops=2, hop_classifier=clf)
    assert depth(g.invoke(q, context={"hops": "predict"})) == 1 and clf.asked == ["who directed Splash"]
    assert depth(g.invoke(q, context={"hops": "auto"})) == 1  # a classifier given: predicted anywhere
    plain = create_gcr_graph(kg, general_llm=None, decoder=decoder, num_beams=3, max_hops=2, hops="auto")
    assert depth(plain.invoke(q)) == 2  # not the MetaQA graph and no classifier: max_hops
    with pytest.raises(ConfigError, match="hops must be"):
        create_gcr_graph(kg, general_llm=None, decoder=decoder, hops="two")
    with pytest.raises(ConfigError, match="hops must be"):
        g.invoke(q, context={"hops": 0})


async def test_gcr_ainvoke_and_shared_cache(kg, decoder):
    cache = TrieCache(kg, decoder.tokenizer, max_hops=1)
    g = create_gcr_graph(kg, general_llm=None, decoder=decoder, trie_cache=cache, num_beams=2)
    await g.ainvoke({"question": "q", "topic_entities": ["Big"]})
    out = await g.ainvoke({"question": "q", "topic_entities": ["Big"]})
    assert cache.info()["misses"] == 1 and cache.info()["hits"] >= 2
    trie_trace = next(t for t in out["trace"] if t["node"] == "get_trie")
    assert trie_trace["built"] == 0 and trie_trace["memory_hits"] == 1


def test_gcr_bad_input_ends_with_errors(kg, decoder):
    llm = FakeChat()  # never called: each input ends before reasoning
    g = create_gcr_graph(kg, decide="generate", llm=llm, decoder=decoder, num_beams=2)
    out = g.invoke({"question": "  "})
    assert out["answers"] == [] and out["errors"] and out["usage"]["llm_calls"] == 0
    out = g.invoke({"question": "who?", "topic_entities": ["Nobody At All"]})
    assert out["answers"] == [] and any("unknown" in e["message"] for e in out["errors"])
    isolated = MemoryKG([*CONTRACT_TRIPLES, ("Lonely", "r", "Lonely")])
    g2 = create_gcr_graph(isolated, llm=llm, decoder=decoder, num_beams=2, max_hops=1)
    out = g2.invoke({"question": "q", "topic_entities": ["Lonely"]})
    assert out["answers"] == [] and any(e["node"] == "get_trie" for e in out["errors"])
    with pytest.raises(ConfigError):
        create_gcr_graph(kg, decide="generate", llm=llm, decoder=decoder, prompt_style="nope")


def test_vote_and_format_paths():
    decoded = [
        {"path": "a -> r -> b", "hypothesis": "B"},
        {"path": "a -> r -> c", "hypothesis": "c"},
        {"path": "a -> s -> c", "hypothesis": "C"},
    ]
    assert vote(decoded) == ["c", "B"]
    assert format_paths(decoded).splitlines()[:3] == ["<kg>", "a -> r -> b", "# Answer: B"]


def test_registered():
    assert get_method("gcr").load() is create_gcr_graph


def test_few_shot_examples_are_metaqa_paths():
    from kg_agents.core.prompts import METHODS_DIR
    from kg_agents.kg import open_kg
    from kg_agents.methods.gcr.trie import parse_path_text

    text = (METHODS_DIR / "gcr" / "prompts" / "decode_few_shot.txt").read_text()
    paths = [parse_path_text(line) for line in text.splitlines() if line.startswith("<PATH>")]
    metaqa = open_kg("metaqa")
    assert len(paths) == 3 and all(verify_path(metaqa, p) for p in paths)


# --------------------------------------------------------------------------- integration
@pytest.mark.integration
def test_gcr_integration_metaqa_local_model():
    """Real SmolLM2 (decoder and general model) over MetaQA: every decoded path is in the KG."""
    from kg_agents.kg import open_kg
    from kg_agents.llm import resolve_chat_model

    metaqa = open_kg("metaqa")
    g = create_gcr_graph(metaqa, llm=resolve_chat_model("local", max_tokens=24), num_beams=3)
    out = g.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert not out.get("errors"), out.get("errors")
    dec = next(t for t in out["trace"] if t["node"] == "decode")
    v = next(t for t in out["trace"] if t["node"] == "verify_paths")
    assert dec["decoded"] >= 1 and v["paths_dropped"] == 0 and v["paths_kept"] == dec["decoded"]
    assert all(verify_path(metaqa, p) and p.start == "Splash" for p in out["paths"])
    assert out["usage"]["llm_calls"] == 2 and out["usage"]["input_tokens"] > 0
    assert isinstance(out["answers"], list)


@pytest.mark.integration
def test_gcr_integration_unconstrained_ablation_runs():
    from kg_agents.kg import open_kg

    metaqa = open_kg("metaqa")
    g = create_gcr_graph(metaqa, general_llm=None, constrained=False, num_beams=2)
    out = g.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert all(verify_path(metaqa, p) for p in out["paths"])
    assert out["usage"]["llm_calls"] == 1


def test_training_examples_are_shortest_kg_paths_to_answers():
    from kg_agents.eval.datasets import load_metaqa
    from kg_agents.kg import open_kg
    from kg_agents.methods.gcr.train import gcr_training_examples
    from kg_agents.methods.gcr.trie import parse_path_text

    metaqa = open_kg("metaqa")
    qs = load_metaqa(2, "train", seed=0, limit=5)
    ex = gcr_training_examples(metaqa, qs, max_hops=2, max_paths_per_question=3)
    assert ex and len(ex) <= 15
    by_id = {q.id: q for q in qs}
    for e in ex:
        q = by_id[e["id"]]
        p = parse_path_text(e["target"].split("\n")[0])
        assert verify_path(metaqa, p) and p.start in q.topic_entities and p.end in q.answers
        assert len(p) == 2 and e["target"].endswith(f"# Answer:\n{p.end}")
        assert q.question in str(e["messages"][-1].content)


def test_training_examples_can_follow_each_question_s_hop_count():
    # gold_paths="hops": a 2-hop question is taught a 2-hop path along the chain that best explains its
    # answers, not the 1-hop shortcut to one of them (its shortest path)
    from kg_agents.methods.gcr.train import gcr_training_examples
    from kg_agents.methods.gcr.trie import parse_path_text

    kg = MemoryKG(
        [("X", "written_by", "W"), ("F", "written_by", "W"), ("G", "written_by", "W"), ("X", "sequel", "F")]
    )

    class Q:
        id, question, hops = "q", "which films share a writer with [X]", 2
        topic_entities, answers = ["X"], ["F", "G"]

    shortest = gcr_training_examples(kg, [Q()], max_hops=2, max_paths_per_question=3)
    assert [parse_path_text(e["target"].split("\n")[0]).to_text() for e in shortest] == ["X -> sequel -> F"]
    chained = gcr_training_examples(kg, [Q()], max_hops=2, max_paths_per_question=3, gold_paths="hops")
    assert [parse_path_text(e["target"].split("\n")[0]).to_text() for e in chained] == [
        "X -> written_by -> W -> ~written_by -> F",
        "X -> written_by -> W -> ~written_by -> G",
    ]
    assert all(verify_path(kg, parse_path_text(e["target"].split("\n")[0])) for e in chained)
    # a hop count beyond max_hops falls back to the shortest paths; a bad gold_paths is a ConfigError
    assert gcr_training_examples(kg, [Q()], max_hops=1, gold_paths="hops")[0]["path"] == "X -> sequel -> F"
    with pytest.raises(ConfigError, match="gold_paths"):
        gcr_training_examples(kg, [Q()], gold_paths="longest")


def test_decoder_single_beam(kg, decoder):
    trie = build_trie(kg, ["Big"], decoder.tokenizer, max_hops=1)
    out = decoder.generate("# Reasoning Path:\n", trie, num_beams=1)
    assert len(out) == 1 and out[0].path_text in trie.texts and math.isfinite(out[0].score)


def test_general_llm_spec_strings_resolve(kg, decoder, monkeypatch):
    """``general_llm="local"`` (as ``--set general_llm=local`` gives) resolves like ``llm``, not used raw."""
    import kg_agents.core.models as models

    fake = FakeChat(replies=[endpoint_reply])
    seen = []
    monkeypatch.setattr(models, "resolve_chat_model", lambda spec, **kw: seen.append(spec) or fake)
    g = create_gcr_graph(kg, general_llm="local", decoder=decoder, num_beams=2, decide="generate")
    out = g.invoke({"question": "who directed Splash", "topic_entities": ["Splash"]})
    assert seen == ["local"] and grounded(out)
    assert next(t for t in out["trace"] if t["node"] == "reason")["mode"] == "general_llm"


@pytest.mark.parametrize("context", [{"max_answers": 1}, "dataclass"])
def test_run_context_keeps_the_factorys_num_beams(kg, context):
    """A per-run context that sets only max_answers leaves K as the factory set it (was reset to 10)."""
    from kg_agents.methods.gcr.graph import GCRContext

    dec = RecordingDecoder(smollm_tokenizer())
    g = create_gcr_graph(kg, general_llm=None, decoder=dec, num_beams=3)
    ctx = GCRContext(max_answers=1) if context == "dataclass" else context
    out = g.invoke({"question": "who directed Splash", "topic_entities": ["Splash"]}, context=ctx)
    assert dec.seen == [3]
    assert len(out["answers"]) <= 1 and out["answers"] == ["Ron Howard"]
    assert next(t for t in out["trace"] if t["node"] == "decode")["num_beams"] == 3


def test_path_scores_option_reaches_the_decoders_the_graph_builds(kg):
    from kg_agents.methods.gcr.graph import _decoder

    with pytest.raises(ConfigError, match="path_scores"):
        create_gcr_graph(kg, decoder=tiny_decoder(), general_llm=None, path_scores="vocab")
    built = _decoder("vllm:http://127.0.0.1:9/v1", None, path_scores="trie")
    assert built.path_scores == "trie" and built.length_penalty == 0.0
    assert _decoder("vllm:http://127.0.0.1:9/v1", None).path_scores == "model"
    mine = tiny_decoder()  # an instance keeps its own
    assert _decoder(mine, None, path_scores="trie") is mine and mine.path_scores == "model"


def test_the_vote_weighs_each_path_by_its_probability():
    decoded = [
        {"path": "a -> r -> b", "hypothesis": "b", "score": math.log(0.8)},
        {"path": "a -> s -> c", "hypothesis": "c", "score": math.log(0.1)},
        {"path": "a -> t -> c", "hypothesis": "c", "score": math.log(0.1)},
    ]
    assert vote(decoded) == ["b", "c"]  # a count would put c (two paths) first
    assert vote([{k: v for k, v in d.items() if k != "score"} for d in decoded]) == ["c", "b"]
    assert vote([{**decoded[0], "score": float("-inf")}, decoded[1]]) == ["c"]


def test_calibrate_ranks_by_how_much_the_question_raises_each_candidate(kg):
    """The reasoner's prior (a name it finds likely whatever the question) wins the plain ranking; with
    ``calibrate`` the baseline prompt (the question's words taken out) cancels it."""
    prior = {"Ron Howard": -0.5, "Tom Hanks": -0.2}
    prompts = []

    def logprobs(text: str, options: list[str]) -> list[float]:
        prompts.append(text)
        asked = "who directed" in text  # the baseline keeps only the bracketed topic entity
        # an option is the path to a candidate (candidate_text="path")
        return [
            sum(v for k, v in prior.items() if k in o) + (0.2 if asked and "Ron Howard" in o else 0.0)
            for o in options
        ]

    def run(calibrate: bool) -> dict:
        dec = RecordingDecoder(smollm_tokenizer())
        g = create_gcr_graph(
            kg, llm=FakeChat(logprobs=logprobs), decoder=dec, num_beams=6, calibrate=calibrate
        )
        return g.invoke(
            {"question": "who directed Splash", "topic_entities": ["Splash"]}, context={"max_answers": 1}
        )

    plain = run(False)
    assert plain["answers"] == ["Tom Hanks"] and len(prompts) == 1
    prompts.clear()
    out = run(True)
    assert out["answers"] == ["Ron Howard"] and grounded(out)
    assert len(prompts) == 2 and "who directed" not in prompts[1] and "[Splash]" in prompts[1]
    assert prompts[0].split("# Question")[0] == prompts[1].split("# Question")[0]  # the same paths
    reason = next(t for t in out["trace"] if t["node"] == "reason")
    assert reason["calibrated"] is True
    assert out["usage"]["llm_calls"] == plain["usage"]["llm_calls"] + 1
    with pytest.raises(ConfigError, match="calibrate"):
        create_gcr_graph(kg, decoder=RecordingDecoder(smollm_tokenizer()), calibrate="yes")


@pytest.mark.parametrize("candidate_text", ["path", "label"])
def test_the_general_model_ranks_each_candidate_as_its_path_or_its_name(kg, candidate_text):
    seen: list[list[str]] = []

    def logprobs(text: str, options: list[str]) -> list[float]:
        seen.append(options)
        return [-1.0 if "Tom Hanks" in o else -2.0 for o in options]

    g = create_gcr_graph(
        kg,
        llm=FakeChat(logprobs=logprobs),
        decoder=RecordingDecoder(smollm_tokenizer()),
        candidate_text=candidate_text,
        answer_ratio=1.0,
    )
    out = g.invoke({"question": "who starred in Splash", "topic_entities": ["Splash"]})
    assert out["answers"] == ["Tom Hanks"] and grounded(out)  # a label, whatever was ranked
    expected = {
        "path": ["Splash -> directed_by -> Ron Howard", "Splash -> starred_actors -> Tom Hanks"],
        "label": ["Ron Howard", "Tom Hanks"],
    }[candidate_text]
    assert seen == [expected]
    with pytest.raises(ConfigError, match="candidate_text"):
        create_gcr_graph(kg, decoder=RecordingDecoder(smollm_tokenizer()), candidate_text="names")


def test_the_general_adapter_is_for_the_embedded_model_only(kg):
    with pytest.raises(ConfigError, match="embedded model"):
        create_gcr_graph(
            kg, llm=FakeChat(), decoder=RecordingDecoder(smollm_tokenizer()), general_adapter="specialist"
        )
    with pytest.raises(ConfigError, match="adapter"):
        create_gcr_graph(kg, decoder=RecordingDecoder(smollm_tokenizer()), general_adapter="")


def test_the_whole_set_of_the_best_answers_chain_follows_the_decoded_answers(kg):
    # K = 1 decoded path ends on one film; the set the question asks for is every film of its chain
    one = [DecodedPath("", "Tom Hanks -> ~starred_actors -> Big", -0.1, "Big", {"in_trie": True})]
    g = create_gcr_graph(kg, general_llm=None, decoder=RecordingDecoder(smollm_tokenizer(), one))
    question = {"question": "which films did Tom Hanks star in", "topic_entities": ["Tom Hanks"]}
    out = g.invoke(question)
    assert out["answers"][0] == "Big" and sorted(out["answers"]) == [
        "Big",
        "Cast Away",
        "Forrest Gump",
        "Splash",
    ]
    assert grounded(out) and all(verify_path(kg, p) for p in out["paths"])
    reason = next(t for t in out["trace"] if t["node"] == "reason")
    assert reason["whole_set"]["chain"] == ["~starred_actors"] and reason["whole_set"]["added"] == 3
    assert g.invoke(question, context={"whole_set": False})["answers"] == ["Big"]
    cut = g.invoke(question, context={"max_answers": 2})["answers"]
    assert cut[0] == "Big" and len(cut) == 2
    off = create_gcr_graph(
        kg, general_llm=None, decoder=RecordingDecoder(smollm_tokenizer(), one), whole_set=False
    )
    assert off.invoke(question)["answers"] == ["Big"]
    with pytest.raises(ConfigError, match="whole_set"):
        create_gcr_graph(kg, decoder=RecordingDecoder(smollm_tokenizer()), whole_set="yes")
