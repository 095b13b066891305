"""Prompt prefix caching (:mod:`kg_agents.llm.prefix_cache`): results equal a full forward pass, the cache
is a bounded LRU, safe across threads, and each model (checkpoint, so adapter, and dtype) has its own.

Unit tests run a tiny random Llama (weights large enough that a wrong position or a stale key changes the
logits far beyond the tolerance); integration tests (marker ``integration``) the real
SmolLM2-135M-Instruct, through option ranking and generation.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from kg_agents.errors import ConfigError
from kg_agents.llm import LocalChatModel, load_local_model
from kg_agents.llm.chat import messages_to_chat
from kg_agents.llm.local_model import converted_checkpoint_dir, load_local_tokenizer
from kg_agents.llm.prefix_cache import PrefixCache, prefill, prompt_cache, shared_prefix
from kg_agents.llm.ranking import rank_options, reply_token_ids, score_local

#: |prefix-cached - full forward| allowed: float32 logits and scores; bfloat16 scores (relative and
#: absolute: bfloat16 alone, without the cache, moves a 5-token reply's score by up to about 0.25 between
#: a batch of 2 options and one of 32, or against one forward pass per option).
F32_TOL = 1e-4
# bfloat16: a reply's score sums a dozen tokens' log-probabilities, each from kernels of other shapes with
# and without the cache; on a CPU with AMX they differed by up to 2.1% of the score
BF16_REL, BF16_ABS = 0.03, 0.1

SYSTEM = (
    "You pick the relation of a knowledge graph that answers the question. Reply with the relation only.\n"
    "Example: Which relation of Titanic answers: who directed Titanic? -> directed by\n"
    "Example: Which relation of Heat answers: what genre is Heat? -> has genre\n"
)
OPTIONS = ["directed by", "has genre", "starred actors", "release year", "written by"]


def _chats() -> list[list[Any]]:
    """Prompts sharing prefixes of different lengths with the ones before them."""
    splash = HumanMessage("Which relation of Splash answers: who directed Splash?")
    return [
        [SystemMessage(SYSTEM), splash],
        [SystemMessage(SYSTEM), HumanMessage("Which relation of Big answers: who starred in Big?")],
        [
            SystemMessage(
                SYSTEM + "Example: Which relation of Up answers: when was Up released? -> release year\n"
            ),
            splash,
        ],
        [SystemMessage(SYSTEM), splash],  # the first again: all but its last token reused
        [SystemMessage("Answer briefly."), splash],  # the chat template's first tokens only
    ]


# --------------------------------------------------------------------------- unit: a tiny model
@pytest.fixture(scope="module")
def tiny() -> Any:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=49152,  # the real tokenizer's ids
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        initializer_range=0.5,
    )
    return LlamaForCausalLM(config).eval()


def _full(model: Any, ids: list[int]) -> Any:
    import torch

    with torch.inference_mode():
        return model(torch.tensor([ids])).logits[0, -1].float()


def test_shared_prefix() -> None:
    assert shared_prefix([1, 2, 3], [1, 2, 3, 4]) == 3
    assert shared_prefix([1, 2, 3], [1, 9, 3]) == 1
    assert shared_prefix([], [1]) == 0


def test_prefill_reuses_the_longest_shared_prefix(tiny: Any) -> None:
    import torch

    base = list(range(100, 140))
    prompts = [
        ([*base, 7, 8, 9], 0),  # nothing cached yet
        (base[:25] + list(range(300, 310)), 25),  # shares 25 tokens
        ([*base, 7, 8, 9], 42),  # the same prompt: all but its last token
        ([*base, 7, 8, 9, 11, 12], 43),  # longer than a cached one
        (list(range(500, 520)), 0),  # shares nothing
    ]
    cache = PrefixCache()
    reused = 0
    for ids, n in prompts:
        logits, kv = prefill(tiny, ids, cache)
        reused += n
        assert cache.reused_tokens == reused and kv.get_seq_length() == len(ids)
        torch.testing.assert_close(logits.float(), _full(tiny, ids), atol=F32_TOL, rtol=1e-5)
    assert (cache.hits, cache.misses) == (3, 2) and len(cache) == 4  # the longer one replaced nothing
    # the tolerance means something: another prompt's logits are far away
    assert (_full(tiny, prompts[0][0]) - _full(tiny, prompts[1][0])).abs().max() > 100 * F32_TOL


def test_prefill_in_bfloat16(tiny: Any) -> None:
    import copy

    import torch

    from kg_agents.llm.local_model import cast_model

    model = cast_model(copy.deepcopy(tiny), "bfloat16")
    cache = PrefixCache()
    base = list(range(100, 160))
    for ids in ([*base, 1, 2], [*base[:30], 3, 4, 5], [*base, 1, 2, 6]):
        logits, _ = prefill(model, ids, cache)
        torch.testing.assert_close(logits.float(), _full(model, ids), atol=0.1, rtol=0.02)
    assert cache.hits == 2


def test_the_cache_is_a_bounded_lru(tiny: Any) -> None:
    cache = PrefixCache(max_entries=2)
    a, b, c = [1, 2, 3, 4, 5], [1, 2, 9, 9, 9], [7, 7, 7, 7]
    for ids in (a, b):
        prefill(tiny, ids, cache)
    assert cache.lookup([*a, 6])[0] == 5  # a used last: b goes first
    prefill(tiny, c, cache)
    assert len(cache) == 2
    assert cache.lookup([1, 2, 9, 9, 9, 9])[0] == 2  # b is gone: only what a shares with it
    assert cache.lookup([7, 7, 7, 7, 1])[0] == 4
    cache.clear()
    assert len(cache) == 0 and cache.lookup(a) == (0, None)
    with pytest.raises(ConfigError, match="max_entries"):
        PrefixCache(max_entries=0)


def test_a_lookup_is_a_private_copy(tiny: Any) -> None:
    import torch

    cache = PrefixCache()
    ids = list(range(10, 30))
    _, stored = prefill(tiny, ids, cache)
    keys = stored.layers[0].keys.clone()
    n, past = cache.lookup([*ids[:12], 99, 98])
    assert n == 12 and past.get_seq_length() == 12
    with torch.inference_mode():
        tiny(torch.tensor([[99, 98, 97]]), past_key_values=past, use_cache=True)  # extends the copy
    assert past.get_seq_length() == 15 and stored.get_seq_length() == 20
    assert torch.equal(stored.layers[0].keys, keys)
    assert cache.lookup(ids)[0] == 19
    with pytest.raises(ValueError, match="stored for"):
        cache.store(ids[:5], stored)


def test_threads_share_one_cache(tiny: Any) -> None:
    import torch

    cache = PrefixCache(max_entries=3)
    base = list(range(200, 230))
    prompts = [[*base, 1000 + i, 2000 + i] for i in range(12)]
    want = [_full(tiny, ids) for ids in prompts]
    got: dict[int, Any] = {}
    failures: list[BaseException] = []

    def work(i: int) -> None:
        try:
            got[i] = prefill(tiny, prompts[i], cache)[0].float()
        except BaseException as exc:
            failures.append(exc)

    prefill(tiny, [*base, 7], cache)  # every prompt below shares its 30 tokens: each lookup hits
    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures and len(cache) == 3
    for i in range(len(prompts)):
        torch.testing.assert_close(got[i], want[i], atol=F32_TOL, rtol=1e-5)
    assert (cache.hits, cache.misses) == (len(prompts), 1) and cache.reused_tokens >= 30 * len(prompts)


def test_each_model_has_its_own_cache() -> None:
    assert prompt_cache("smollm2", "float32") is prompt_cache("smollm2", "float32")
    assert prompt_cache("smollm2", "float32") is not prompt_cache("smollm2", "bfloat16")
    assert prompt_cache("smollm2", "float32") is not prompt_cache("/adapters/merged", "float32")
    base, adapted = LocalChatModel(), LocalChatModel(model_path="/adapters/merged")
    assert base.prompt_cache() is prompt_cache("smollm2-135m-instruct", "float32")
    assert adapted.prompt_cache() is prompt_cache("/adapters/merged", "float32")
    assert LocalChatModel(dtype="bfloat16").prompt_cache() is not base.prompt_cache()
    assert LocalChatModel(prefix_cache=False).prompt_cache() is None


@pytest.mark.parametrize("batch_size", [1, 2, 32])
def test_scores_with_the_prefix_cache_equal_scores_without(tiny: Any, batch_size: int) -> None:
    tok = load_local_tokenizer()
    cache = PrefixCache()
    for msgs in _chats():
        chat = messages_to_chat(msgs)
        cached, n_in = score_local(tiny, tok, chat, OPTIONS, batch_size=batch_size, prefix_cache=cache)
        plain, n_plain = score_local(tiny, tok, chat, OPTIONS, batch_size=batch_size)
        assert cached == pytest.approx(plain, abs=F32_TOL) and n_in == n_plain
    assert cache.hits == 4 and cache.reused_tokens > 0


# --------------------------------------------------------------------------- integration: the real model
def _full_scores(model: Any, tok: Any, chat: list[dict[str, str]]) -> list[float]:
    """Each option's reply log-probability from one forward pass over prompt + reply (no cache at all)."""
    import torch

    prefix, conts = reply_token_ids(tok, chat, OPTIONS)
    out = []
    for cont in conts:
        with torch.inference_mode():
            logp = torch.log_softmax(model(torch.tensor([prefix + cont])).logits[0].float(), dim=-1)
        out.append(sum(float(logp[len(prefix) + j - 1, t]) for j, t in enumerate(cont)))
    return out


@pytest.mark.integration
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_real_scores_with_the_prefix_cache_equal_a_full_forward_pass(dtype: str) -> None:
    model, tok = load_local_model(dtype=dtype)
    tol = {"abs": F32_TOL} if dtype == "float32" else {"rel": BF16_REL, "abs": BF16_ABS}
    cache = PrefixCache()
    for i, msgs in enumerate(_chats()):
        chat = messages_to_chat(msgs)
        full = _full_scores(model, tok, chat)
        batch_size = 2 if i % 2 else 32  # batched options, and one batch
        cached, _ = score_local(model, tok, chat, OPTIONS, batch_size=batch_size, prefix_cache=cache)
        assert cached == pytest.approx(full, **tol), (dtype, i)
    assert cache.hits == 4 and cache.reused_tokens > 100


@pytest.mark.integration
def test_adapters_do_not_share_entries() -> None:
    """Two checkpoints (here the same weights under two names, as a merged adapter is its own folder):
    ranking the same prompt with the second reuses nothing of the first's."""
    msgs = _chats()[0]
    base = LocalChatModel()
    other = LocalChatModel(model_path=str(converted_checkpoint_dir()))
    base_cache, other_cache = base.prompt_cache(), other.prompt_cache()
    assert base_cache is not None and other_cache is not None and base_cache is not other_cache
    first = rank_options(base, msgs, OPTIONS)
    hits = other_cache.hits
    second = rank_options(other, msgs, OPTIONS)
    assert other_cache.hits == hits  # nothing of the base model's entry
    assert second.scores == pytest.approx(first.scores, abs=F32_TOL)
    again = rank_options(other, msgs, OPTIONS)
    assert other_cache.hits == hits + 1 and again.scores == pytest.approx(second.scores, abs=F32_TOL)


@pytest.mark.integration
def test_generation_with_the_prefix_cache_matches_generation_without() -> None:
    """Unbatched greedy generation (``batch_size=1``) reuses the prompts' shared prefix and the earlier
    replies, and writes what it writes without the cache."""
    on = LocalChatModel(batch_size=1, max_tokens=16)
    off = LocalChatModel(batch_size=1, max_tokens=16, prefix_cache=False)
    cache = on.prompt_cache()
    assert cache is not None
    cache.clear()
    hits = cache.hits
    for msgs in _chats()[:3]:
        assert on.invoke(msgs).content == off.invoke(msgs).content
    assert cache.hits >= hits + 2
