"""GCR's vLLM constrained decoder: pure parts (ranking, batching, the trie beam search) without a server,
then against the real vLLM CPU server (marker ``vllm``) on MetaQA dev-train questions, next to the local
decoder.

The beam search is checked without a server by driving it with a real (tiny, seeded) transformers model and
comparing with ``LocalConstrainedDecoder``'s transformers beam search over the same trie: same paths, same
scores. Against the server, the ``beam`` route must return exactly what the local decoder returns (same model
weights in both runtimes), and the ``exact`` route the true top K: its best score is at least the local beam
search's best (beam search can prune the best path early; exact scoring cannot).
"""

from __future__ import annotations

import math

import pytest

from kg_agents.errors import ConfigError, ModelError
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import Path, verify_path
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.llm.vllm_server import free_port
from kg_agents.methods.gcr.decoding import candidates_of
from kg_agents.methods.gcr.graph import create_gcr_graph
from kg_agents.methods.gcr.resolve import resolve_decoder
from kg_agents.methods.gcr.trie import build_trie
from kg_agents.methods.gcr.vllm_decoder import (
    VLLMConstrainedDecoder,
    batched,
    beam_score,
    rank_top_k,
    trie_beam_search,
)
from tests.fakes import FakeChat
from tests.methods.gcr.helpers import smollm_tokenizer, tiny_decoder, tiny_model


# --------------------------------------------------------------------------- pure parts
def test_batched_beam_score_rank():
    assert list(batched(list(range(5)), 2)) == [[0, 1], [2, 3], [4]]
    assert list(batched([], 3)) == []
    with pytest.raises(ValueError):
        list(batched([1], 0))
    assert beam_score(-6.0, 3) == -2.0 and beam_score(-6.0, 3, 0.0) == -6.0
    assert beam_score(-8.0, 4, 2.0) == -0.5
    assert rank_top_k([-1.0, -0.5, float("-inf"), -0.5, -3.0], 3) == [1, 3, 0]
    assert rank_top_k([float("-inf")], 2) == [] and rank_top_k([], 1) == []


def test_candidates_of_adds_eos_only_at_sentence_ends():
    kg = MemoryKG(CONTRACT_TRIPLES)
    tok = smollm_tokenizer()
    trie = build_trie(kg, ["Splash"], tok, max_hops=1)
    seq = trie.sequences[0]
    eos = tok.eos_token_id
    assert candidates_of(trie, seq, eos) == [eos]
    assert eos not in candidates_of(trie, seq[:3], eos) and candidates_of(trie, seq[:3], eos)
    assert candidates_of(trie, [*seq[:2], 12345], eos) == []


def _tiny_next_logprobs(prompt_ids):
    """``next_logprobs`` of the tiny seeded Llama: full-vocabulary log-softmax, one forward per prefix."""
    import torch

    model, _ = tiny_model()

    def next_logprobs(prefixes, cands):
        out = []
        with torch.inference_mode():
            for prefix, cand in zip(prefixes, cands, strict=True):
                ids = torch.tensor([[*prompt_ids, *prefix]])
                lp = torch.log_softmax(model(input_ids=ids).logits[0, -1].float(), dim=-1)
                out.append([float(lp[t]) for t in cand])
        return out

    return next_logprobs


@pytest.mark.parametrize(("entities", "hops", "k"), [(["Splash"], 1, 3), (["Splash", "Tom Hanks"], 2, 5)])
def test_trie_beam_search_matches_transformers_beam_search(entities, hops, k):
    """Driven by the same model, the client-side trie beam search returns what transformers' does."""
    kg = MemoryKG(CONTRACT_TRIPLES)
    local = tiny_decoder()
    tok = local.tokenizer
    trie = build_trie(kg, entities, tok, max_hops=hops)
    prompt = "# Reasoning Path:\n"
    expected = local.generate(prompt, trie, num_beams=k, answer=False)
    prompt_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    found, steps = trie_beam_search(trie, _tiny_next_logprobs(prompt_ids), k, tok.eos_token_id)
    assert 0 < steps <= trie.max_len + 1 and len(found) == k
    assert [trie.path_text_of(s) for s, _ in found] == [d.path_text for d in expected]
    assert [sc for _, sc in found] == pytest.approx([d.score for d in expected], abs=1e-4)
    # exact top-K over every sentence: its best is at least the beam search's best
    nl = _tiny_next_logprobs(prompt_ids)
    exact = []
    for seq in trie.sequences:
        full = [*seq, tok.eos_token_id]
        lps = nl([tuple(full[:i]) for i in range(len(full))], [[t] for t in full])
        exact.append(beam_score(sum(r[0] for r in lps), len(full)))
    best = rank_top_k(exact, k)
    assert exact[best[0]] >= found[0][1] - 1e-4
    for seq, score in found:  # the beam search's scores are the exact scores of its paths
        assert exact[trie.sequences.index(seq)] == pytest.approx(score, abs=1e-4)


class _TinyBackedDecoder(VLLMConstrainedDecoder):
    """The decoder's request layer answered by the tiny seeded model instead of a server (same maths)."""

    def __init__(self, tok, **kw):
        super().__init__("http://127.0.0.1:9/v1", tokenizer=tok, forced_runs=True, **kw)
        self.calls = {"runs": 0, "branches": 0}

    def continuation_logprobs(self, prompt_ids, continuations):
        self.calls["runs"] += 1
        nl = _tiny_next_logprobs(prompt_ids)
        return [
            [r[0] for r in nl([tuple(c[:i]) for i in range(len(c))], [[t] for t in c])] for c in continuations
        ]

    def next_logprobs(self, prompt_ids, prefixes, candidates):
        self.calls["branches"] += 1
        return _tiny_next_logprobs(prompt_ids)([tuple(p) for p in prefixes], [list(c) for c in candidates])


def test_forced_runs_are_scored_once_and_the_search_is_unchanged():
    kg = MemoryKG(CONTRACT_TRIPLES)
    local = tiny_decoder()
    tok = local.tokenizer
    trie = build_trie(kg, ["Splash", "Tom Hanks"], tok, max_hops=2)
    prompt = "# Reasoning Path:\n"
    expected = local.generate(prompt, trie, num_beams=4, answer=False)
    dec = _TinyBackedDecoder(tok)
    prompt_ids = tok(prompt, add_special_tokens=False)["input_ids"]
    found, steps = trie_beam_search(trie, dec.beam_logprobs(trie, prompt_ids), 4, tok.eos_token_id)
    assert [trie.path_text_of(s) for s, _ in found] == [d.path_text for d in expected]
    assert [sc for _, sc in found] == pytest.approx([d.score for d in expected], abs=1e-4)
    assert dec.calls["runs"] >= 1 and dec.calls["branches"] >= 1
    assert dec.calls["runs"] + dec.calls["branches"] <= 2 * steps


class _OfflineDecoder(_TinyBackedDecoder):
    """No server at all: the tokenizer check is skipped, the answer request is scripted."""

    def check(self):
        pass

    def _completions(self, prompt, **kwargs):
        choices = [{"index": i, "text": f"answer {i}\nmore"} for i in range(len(prompt))]
        return {"choices": choices[::-1], "usage": {"completion_tokens": 2 * len(prompt)}}


def test_generate_assembles_paths_and_answers_like_the_local_decoder():
    kg = MemoryKG(CONTRACT_TRIPLES)
    local = tiny_decoder()
    trie = build_trie(kg, ["Splash"], local.tokenizer, max_hops=1)
    expected = local.generate("# Reasoning Path:\n", trie, num_beams=3, answer=False)
    dec = _OfflineDecoder(local.tokenizer)
    out = dec.generate("# Reasoning Path:\n", trie, num_beams=3, route="beam")
    assert [d.path_text for d in out] == [d.path_text for d in expected]
    assert [d.continuation for d in out] == [f"answer {i}" for i in range(len(out))]
    assert out[0].text == f"<PATH> {out[0].path_text} </PATH>\n# Answer:\nanswer 0"
    assert all(d.meta["route"] == "beam" and d.meta["in_trie"] for d in out)
    assert dec.last_stats["output_tokens"] == sum(d.meta["tokens"] for d in out) + 2 * len(out)
    bare = dec.generate("# Reasoning Path:\n", trie, num_beams=2, answer=False, route="beam")
    assert [d.text for d in bare] == [f"<PATH> {d.path_text} </PATH>" for d in bare]


@pytest.mark.parametrize(("entities", "hops"), [(["Splash"], 1), (["Splash", "Tom Hanks"], 2)])
def test_trie_path_scores_are_each_paths_probability_among_the_tries_paths(entities, hops):
    """``path_scores="trie"``: with K = every path, the paths' probabilities sum to 1, and the vLLM
    decoder's exact and beam routes give the local decoder's scores."""
    kg = MemoryKG(CONTRACT_TRIPLES)
    local = tiny_decoder(path_scores="trie")
    trie = build_trie(kg, entities, local.tokenizer, max_hops=hops)
    k = len(trie)
    prompt = "# Reasoning Path:\n"
    out = local.generate(prompt, trie, num_beams=k, answer=False)
    assert len(out) == k > 2
    assert sum(math.exp(d.score) for d in out) == pytest.approx(1.0, abs=1e-3)
    model = tiny_decoder().generate(prompt, trie, num_beams=k, answer=False)
    assert sum(math.exp(d.score) for d in model) < 0.5  # full-vocabulary scores are no such thing
    want = {d.path_text: d.score for d in out}
    dec = _OfflineDecoder(local.tokenizer, path_scores="trie")
    assert dec.length_penalty == 0.0 and local.length_penalty == 0.0
    for route in ("exact", "beam"):
        got = dec.generate(prompt, trie, num_beams=k, answer=False, route=route)
        assert {d.path_text: d.score for d in got} == pytest.approx(want, abs=1e-4)
    with pytest.raises(ConfigError, match="path_scores"):
        tiny_decoder(path_scores="vocab")
    with pytest.raises(ConfigError, match="path_scores"):
        _OfflineDecoder(local.tokenizer, path_scores="vocab")


def test_trie_beam_search_ends_when_no_beam_can_go_on():
    kg = MemoryKG(CONTRACT_TRIPLES)
    tok = smollm_tokenizer()
    trie = build_trie(kg, ["Splash"], tok, max_hops=1)

    def dead(prefixes, cands):  # every continuation impossible: no path, no fallback to the vocabulary
        return [[-math.inf] * len(c) for c in cands]

    assert trie_beam_search(trie, dead, 3, tok.eos_token_id) == ([], 1)
    with pytest.raises(ValueError):
        trie_beam_search(trie, dead, 0, tok.eos_token_id)


def test_resolve_decoder_forms():
    local = tiny_decoder()
    assert resolve_decoder(local) is local
    dec = resolve_decoder("vllm:http://127.0.0.1:9/v1", route="beam", tokenizer=local.tokenizer)
    assert (
        isinstance(dec, VLLMConstrainedDecoder) and dec.route == "beam" and dec.signature == local.signature
    )
    for bad in ("vllm:", "nope", "local:x", 42):
        with pytest.raises(ConfigError, match="decoder"):
            resolve_decoder(bad)
    with pytest.raises(ConfigError):
        resolve_decoder(local, route="beam")
    with pytest.raises(ConfigError, match="route"):
        VLLMConstrainedDecoder("http://127.0.0.1:9/v1", tokenizer=local.tokenizer, route="greedy")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="http"):
        VLLMConstrainedDecoder("127.0.0.1:9/v1", tokenizer=local.tokenizer)


def test_both_decoders_set_the_shared_settings_alike(monkeypatch):
    """``TrieDecoder.__init__``: the tokenizer's signature, the length penalty by the path scores, and
    a bad ``path_scores`` refused (by the local decoder before it loads a model)."""
    from kg_agents.methods.gcr import local_decoder
    from kg_agents.methods.gcr.trie import tokenizer_signature

    tok = smollm_tokenizer()  # the tiny model's
    for scores, penalty in (("model", 1.0), ("trie", 0.0)):
        local = tiny_decoder(path_scores=scores, max_answer_tokens=5)
        remote = VLLMConstrainedDecoder("http://127.0.0.1:9/v1", tokenizer=tok, path_scores=scores)
        for dec in (local, remote):
            assert dec.signature == tokenizer_signature(tok) and dec.length_penalty == penalty
            assert dec.path_scores == scores and dec.last_stats == {}
        assert local.max_answer_tokens == 5 and remote.max_answer_tokens == 24
    assert tiny_decoder(path_scores="trie", length_penalty=0.5).length_penalty == 0.5

    def no_load(**_):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(local_decoder, "load_local_model", no_load)
    with pytest.raises(ConfigError, match="path_scores"):
        local_decoder.LocalConstrainedDecoder(path_scores="nope")
    with pytest.raises(ConfigError, match="path_scores"):
        VLLMConstrainedDecoder("http://127.0.0.1:9/v1", tokenizer=tok, path_scores="nope")


def test_unreachable_server_is_a_model_error_naming_the_url_and_the_graph_records_it():
    kg = MemoryKG(CONTRACT_TRIPLES)
    tok = smollm_tokenizer()
    url = f"http://127.0.0.1:{free_port()}/v1"
    dec = VLLMConstrainedDecoder(url, tokenizer=tok)
    trie = build_trie(kg, ["Splash"], tok, max_hops=1)
    with pytest.raises(ModelError, match=url.replace(".", r"\.")):
        dec.generate("x", trie, 2)
    with pytest.raises(ConfigError, match="unconstrained"):
        dec.generate("x", None, 2)
    other = build_trie(kg, ["Splash"], tok, max_hops=1)
    other.tokenizer_sig = "something-else"
    with pytest.raises(ModelError, match="different tokenizer"):
        dec.generate("x", other, 2)
    g = create_gcr_graph(kg, llm=FakeChat(default="unused"), decoder=f"vllm:{url}", num_beams=2)
    out = g.invoke({"question": "who directed Splash", "topic_entities": ["Splash"]})
    assert out["answers"] == [] and out["paths"] == []
    assert any(e["node"] == "decode" and url in e["message"] for e in out["errors"])


# --------------------------------------------------------------------------- real vLLM server
def _question(hops: int, qid: str):
    from kg_agents.eval.datasets import load_metaqa

    return next(q for q in load_metaqa(hops, "train", seed=0, limit=20) if q.id == qid)


@pytest.fixture(scope="module")
def metaqa():
    from kg_agents.kg import open_kg

    return open_kg("metaqa")


@pytest.fixture(scope="module")
def local_decoder():
    from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder

    return LocalConstrainedDecoder()


@pytest.fixture(scope="module")
def vdec(vllm_server, local_decoder):
    dec = VLLMConstrainedDecoder(vllm_server.base_url, tokenizer=local_decoder.tokenizer)
    yield dec
    dec.close()


def _messages(q):
    from kg_agents.core.prompts import load_prompt

    return load_prompt("gcr", "decode_zero_shot").format_messages(
        question=q.question, entities="\n".join(q.topic_entities)
    )


def _check_paths(out, trie, kg, q, k, answer=True):
    assert 1 <= len(out) <= k and len({d.path_text for d in out}) == len(out)
    assert [d.score for d in out] == sorted((d.score for d in out), reverse=True)
    for d in out:
        assert d.meta["in_trie"] and d.path_text in trie.texts
        p = Path.from_text(d.path_text)
        assert verify_path(kg, p) and p.start in q.topic_entities
        if answer:
            assert d.text.startswith(f"<PATH> {d.path_text} </PATH>\n# Answer:\n")
            assert "\n" not in d.continuation
        else:
            assert d.text == f"<PATH> {d.path_text} </PATH>" and d.continuation == ""


@pytest.mark.vllm
def test_vllm_decoder_1hop_exact_and_beam_against_local(metaqa, local_decoder, vdec):
    q = _question(1, "metaqa-1hop-6936")  # who wrote [Paperhouse]
    trie = build_trie(metaqa, q.topic_entities, vdec.tokenizer, max_hops=1)
    msgs = _messages(q)
    local = local_decoder.generate(msgs, trie, 3)
    beam = vdec.generate(msgs, trie, 3, route="beam")
    _check_paths(beam, trie, metaqa, q, 3)
    assert vdec.last_stats["route"] == "beam" and vdec.last_stats["steps"] > 0
    assert [d.path_text for d in beam] == [d.path_text for d in local]
    assert [d.score for d in beam] == pytest.approx([d.score for d in local], abs=2e-3)
    assert [d.continuation for d in beam] == [d.continuation for d in local]
    exact = vdec.generate(msgs, trie, 3, answer=False)  # auto: a 6-path trie is scored exactly
    _check_paths(exact, trie, metaqa, q, 3, answer=False)
    st = vdec.last_stats
    assert st["route"] == "exact" and st["scored_paths"] == len(trie) and st["prompt_tokens"] > 50
    assert exact[0].score >= local[0].score - 2e-3
    # the exact score of the local decoder's best path is the local beam score
    seq = trie.sequences[trie.texts.index(local[0].path_text)]
    (s,) = vdec.score_sentences(
        vdec.tokenizer(vdec.render(msgs), add_special_tokens=False)["input_ids"], [seq]
    )
    assert beam_score(s, len(seq) + 1) == pytest.approx(local[0].score, abs=2e-3)


@pytest.mark.vllm
def test_vllm_decoder_2hop_beam_equals_local(metaqa, local_decoder, vdec):
    q = _question(2, "metaqa-2hop-6953")  # the films written by [Stephen Hillenburg] were in which genres
    trie = build_trie(metaqa, q.topic_entities, vdec.tokenizer, max_hops=2)
    msgs = _messages(q)
    local = local_decoder.generate(msgs, trie, 3, answer=False)
    beam = vdec.generate(msgs, trie, 3, route="beam", answer=False)
    assert [d.path_text for d in beam] == [d.path_text for d in local]
    assert [d.score for d in beam] == pytest.approx([d.score for d in local], abs=2e-3)
    assert any(len(Path.from_text(d.path_text)) == 2 for d in beam)
    for d in beam:
        assert d.continuation == "" and verify_path(metaqa, Path.from_text(d.path_text))


@pytest.mark.vllm
def test_gcr_graph_end_to_end_on_vllm(metaqa, vllm_server, vdec):
    from kg_agents.llm import resolve_chat_model

    q = _question(2, "metaqa-2hop-6953")
    general = resolve_chat_model(
        "openai:smollm2", base_url=vllm_server.base_url, temperature=0, max_tokens=24
    )
    g = create_gcr_graph(metaqa, llm=general, decoder=vdec, num_beams=3)
    out = g.invoke({"question": q.question, "topic_entities": q.topic_entities})
    assert not out.get("errors"), out.get("errors")
    dec = next(t for t in out["trace"] if t["node"] == "decode")
    v = next(t for t in out["trace"] if t["node"] == "verify_paths")
    assert 1 <= dec["decoded"] <= 3 and v["paths_dropped"] == 0 and v["paths_kept"] == dec["decoded"]
    assert all(verify_path(metaqa, p) and p.start == "Stephen Hillenburg" for p in out["paths"])
    assert out["usage"]["llm_calls"] == 2 and out["usage"]["input_tokens"] > 100
    assert isinstance(out["answers"], list) and out["answers"]
