"""LocalChatModel, resolve_chat_model and UsageCallback.

Unit tests (no model weights): the ``langchain-tests`` standard ``ChatModelUnitTests`` suite, message
rendering, stop-string helpers, spec resolution, usage counting with scripted fake models.
Integration tests (marker ``integration``): the real SmolLM2-135M-Instruct: invoke, stream, batch, abatch,
stop, usage, callbacks.
"""

from __future__ import annotations

import threading
from typing import Any
from uuid import uuid4

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, LLMResult
from langchain_tests.integration_tests import ChatModelIntegrationTests
from langchain_tests.unit_tests import ChatModelUnitTests

from kg_agents.errors import ConfigError, ModelError
from kg_agents.llm import LocalChatModel, UsageCallback, resolve_chat_model
from kg_agents.llm.chat import _held_back, _stop_index, messages_to_chat
from tests.fakes import FakeChat


class TestLocalChatModelStandard(ChatModelUnitTests):
    """The standard LangChain unit suite, tool calling and structured output included."""

    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return LocalChatModel

    @property
    def chat_model_params(self) -> dict:
        return {"model": "smollm2-135m-instruct", "temperature": 0}

    @property
    def has_tool_calling(self) -> bool:
        return True

    @property
    def has_structured_output(self) -> bool:
        return True


# --------------------------------------------------------------------------- unit: rendering, stops


def test_messages_to_chat_renders_every_kind() -> None:
    msgs = [
        SystemMessage("sys"),
        HumanMessage("q"),
        AIMessage("", tool_calls=[{"name": "neighbors", "args": {"e": "Splash"}, "id": "c1"}]),
        ToolMessage("Ron Howard", tool_call_id="c1", name="neighbors"),
        AIMessage([{"type": "text", "text": "Ron "}, {"type": "text", "text": "Howard"}]),
    ]
    assert messages_to_chat(msgs) == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": 'Tool call: neighbors({"e": "Splash"})'},
        {"role": "user", "content": "Tool result (neighbors): Ron Howard"},
        {"role": "assistant", "content": "Ron Howard"},
    ]


def test_messages_to_chat_rejects_images() -> None:
    msg = HumanMessage([{"type": "image", "url": "http://x/y.png"}])
    with pytest.raises(ModelError, match="text only"):
        messages_to_chat([msg])


def test_stop_helpers() -> None:
    assert _stop_index("a b END c STOP", ["STOP", "END"]) == 4
    assert _stop_index("abc", ["x", ""]) == -1
    # "EN" at the end may start "END": two chars held back; nothing when no prefix matches
    assert _held_back("abc EN", ["END"]) == 2
    assert _held_back("abc E", ["END", "Q"]) == 1
    assert _held_back("abc", ["END"]) == 0


def test_bad_options_are_config_errors() -> None:
    with pytest.raises(ValueError, match="temperature"):
        LocalChatModel(temperature=-1)
    with pytest.raises(ValueError, match="max_tokens"):
        LocalChatModel(max_new_tokens=0)
    assert LocalChatModel(max_new_tokens=7).max_tokens == 7


def test_dtype_is_validated_and_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from kg_agents.llm import local_model

    with pytest.raises(ValueError, match="dtype"):
        LocalChatModel(dtype="float16")
    assert LocalChatModel(dtype="int8").dtype == "int8"
    monkeypatch.delenv(local_model.DTYPE_ENV, raising=False)
    assert local_model.DEFAULT_DTYPE == "auto"  # unset: bfloat16 where the CPU has it, else float32
    monkeypatch.setattr(local_model, "cpu_has_bf16", lambda: True)
    assert local_model.resolve_dtype() == "bfloat16"
    monkeypatch.setattr(local_model, "cpu_has_bf16", lambda: False)
    assert local_model.resolve_dtype() == "float32"
    monkeypatch.setenv(local_model.DTYPE_ENV, "bfloat16")
    assert local_model.resolve_dtype() == "bfloat16" and local_model.resolve_dtype("float32") == "float32"
    monkeypatch.setenv(local_model.DTYPE_ENV, "half")
    with pytest.raises(ConfigError, match="KG_AGENTS_DTYPE"):
        local_model.resolve_dtype()
    monkeypatch.setattr(local_model, "cpu_has_bf16", lambda: True)
    assert local_model.resolve_dtype("auto") == "bfloat16"
    monkeypatch.setattr(local_model, "cpu_has_bf16", lambda: False)
    assert local_model.resolve_dtype("auto") == "float32"


def test_construction_does_not_load_weights() -> None:
    models = [LocalChatModel(max_tokens=4) for _ in range(10)]
    assert all(m._hf is None for m in models)


# --------------------------------------------------------------------------- unit: resolve_chat_model


def test_resolve_passes_instances_and_caches_local() -> None:
    fake = FakeChat()
    assert resolve_chat_model(fake) is fake
    a, b = resolve_chat_model("local"), resolve_chat_model(None)
    assert isinstance(a, LocalChatModel) and a is b
    c = resolve_chat_model("local", max_tokens=8)
    assert c is not a and c.max_tokens == 8 and c is resolve_chat_model("local", max_tokens=8)


def test_resolve_rejects_unknown_specs() -> None:
    for bad in ["gpt4", "openai:", "hf:foo", "local:"]:
        with pytest.raises(ConfigError, match="valid forms"):
            resolve_chat_model(bad)
    with pytest.raises(ConfigError, match="no model directory"):
        resolve_chat_model("local:/nonexistent/dir")
    with pytest.raises(ConfigError, match="instance"):
        resolve_chat_model(FakeChat(), max_tokens=3)
    with pytest.raises(ConfigError, match="temperature"):
        resolve_chat_model("local", temperature=-2)


def test_resolve_openai_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    from langchain_openai import ChatOpenAI

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = resolve_chat_model("openai:smollm2", temperature=0)
    assert isinstance(llm, ChatOpenAI)
    assert llm.model_name == "smollm2" and llm.openai_api_base == "http://127.0.0.1:9/v1"
    assert llm.openai_api_key.get_secret_value() == "EMPTY"


def test_unreachable_server_is_a_model_error_naming_the_url() -> None:
    url = "http://127.0.0.1:9/v1"  # port 9 (discard): nothing listens there
    llm = resolve_chat_model("openai:smollm2", base_url=url, max_retries=0, timeout=5)
    with pytest.raises(ModelError, match=r"127\.0\.0\.1:9"):
        llm.invoke("hi")
    with pytest.raises(ModelError, match=r"127\.0\.0\.1:9"):
        list(llm.stream("hi"))
    with pytest.raises(ModelError, match=r"127\.0\.0\.1:9"):
        resolve_chat_model("openai:smollm2", base_url=url, check=True)


async def test_unreachable_server_async() -> None:
    llm = resolve_chat_model("openai:smollm2", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=5)
    with pytest.raises(ModelError, match=r"127\.0\.0\.1:9"):
        await llm.ainvoke("hi")


# --------------------------------------------------------------------------- unit: UsageCallback


def _usage_msg(text: str, n_in: int, n_out: int) -> AIMessage:
    return AIMessage(
        text, usage_metadata={"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}
    )


def test_usage_callback_counts_calls_and_tokens() -> None:
    fake = FakeChat(replies=["a b", "c d e"])  # usage: words in and out
    cb = UsageCallback()
    fake.invoke("one two three four five six seven eight nine ten", config={"callbacks": [cb]})
    fake.invoke("one two three four five", config={"callbacks": [cb]})
    assert cb.as_dict() == {
        "llm_calls": 2,
        "input_tokens": 15,
        "output_tokens": 5,
        "total_tokens": 20,
        "errors": 0,
    }
    cb.reset()
    assert cb.as_dict()["llm_calls"] == 0 and cb.total_tokens == 0


def test_usage_callback_reads_llm_output_token_usage() -> None:
    cb = UsageCallback()
    rid = uuid4()
    cb.on_chat_model_start({"name": "x"}, [[HumanMessage("q")]], run_id=rid, metadata={"ls_model_name": "m"})
    cb.on_llm_end(
        LLMResult(
            generations=[[ChatGeneration(message=AIMessage("a"))]],
            llm_output={"token_usage": {"prompt_tokens": 7, "completion_tokens": 4}},
        ),
        run_id=rid,
    )
    assert (cb.llm_calls, cb.input_tokens, cb.output_tokens) == (1, 7, 4)
    assert cb.per_model == {"m": {"llm_calls": 1, "input_tokens": 7, "output_tokens": 4}}


def test_usage_callback_is_thread_safe() -> None:
    cb = UsageCallback()
    result = LLMResult(generations=[[ChatGeneration(message=_usage_msg("a", 3, 1))]])

    def hammer() -> None:
        for _ in range(500):
            rid = uuid4()
            cb.on_chat_model_start({}, [[]], run_id=rid)
            cb.on_llm_end(result, run_id=rid)

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (cb.llm_calls, cb.input_tokens, cb.output_tokens) == (4000, 12000, 4000)


def test_usage_callback_counts_errors() -> None:
    cb = UsageCallback()
    llm = resolve_chat_model("openai:smollm2", base_url="http://127.0.0.1:9/v1", max_retries=0, timeout=5)
    with pytest.raises(ModelError):
        llm.invoke("hi", config={"callbacks": [cb]})
    assert cb.llm_calls == 1 and cb.errors == 1 and cb.total_tokens == 0


def test_load_local_tokenizer_reads_no_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    from transformers import AutoModelForCausalLM

    from kg_agents.llm import local_model

    def no_weights(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("weights loaded for a tokenizer")

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", no_weights)
    monkeypatch.setattr(local_model, "_LOADED", {})
    tok = local_model.load_local_tokenizer()
    assert tok.pad_token_id is not None and tok("Splash")["input_ids"]
    loaded = object()
    local_model._LOADED[local_model.DEFAULT_LOCAL_MODEL] = (object(), loaded)
    assert local_model.load_local_tokenizer() is loaded  # a loaded model's own tokenizer
    with pytest.raises(ModelError, match="no model directory"):
        local_model.load_local_tokenizer("/nonexistent/model")


# --------------------------------------------------------------------------- integration: the real model

COUNT = "Count from 1 to 10, separated by commas."


@pytest.fixture(scope="module")
def llm() -> LocalChatModel:
    model = resolve_chat_model("local", max_tokens=24)
    assert isinstance(model, LocalChatModel)
    return model


def _check_usage(msg: AIMessage) -> None:
    u = msg.usage_metadata
    assert u is not None and u["input_tokens"] > 5 and u["output_tokens"] > 0
    assert u["total_tokens"] == u["input_tokens"] + u["output_tokens"]
    assert msg.response_metadata["model_name"] == "smollm2-135m-instruct"


@pytest.mark.integration
def test_invoke_real_model(llm: LocalChatModel) -> None:
    msg = llm.invoke(
        [SystemMessage("Answer in one short sentence."), HumanMessage("What is the capital of France?")]
    )
    assert isinstance(msg, AIMessage) and "Paris" in msg.content
    _check_usage(msg)
    assert msg.usage_metadata["output_tokens"] <= 24


@pytest.mark.integration
def test_greedy_is_deterministic_and_max_tokens_bounds_output(llm: LocalChatModel) -> None:
    a = llm.invoke(COUNT, max_tokens=6)
    b = llm.invoke(COUNT, max_tokens=6)
    assert a.content == b.content and a.usage_metadata == b.usage_metadata
    assert a.usage_metadata["output_tokens"] == 6 and a.response_metadata["finish_reason"] == "length"


@pytest.mark.integration
def test_stop_cuts_and_halts_early(llm: LocalChatModel) -> None:
    full = llm.invoke(COUNT)
    assert "3" in full.content  # the stop string occurs in the unconstrained output
    cut = llm.invoke(COUNT, stop=["3"])
    assert "3" not in cut.content and full.content.startswith(cut.content) and cut.content
    assert cut.response_metadata["finish_reason"] == "stop"
    assert cut.usage_metadata["output_tokens"] < full.usage_metadata["output_tokens"]
    streamed = list(llm.stream(COUNT, stop=["3"]))
    assert "".join(c.content for c in streamed) == cut.content
    assert streamed[-1].usage_metadata == cut.usage_metadata


@pytest.mark.integration
def test_stream_yields_tokens_with_usage_on_last(llm: LocalChatModel) -> None:
    whole = llm.invoke(COUNT)
    chunks = list(llm.stream(COUNT))
    assert len(chunks) > 3  # token by token, not one blob
    assert all(c.usage_metadata is None for c in chunks[:-1])
    assert chunks[-1].chunk_position == "last" and chunks[-1].usage_metadata == whole.usage_metadata
    assert "".join(c.content for c in chunks) == whole.content
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    _check_usage(total)


@pytest.mark.integration
def test_streaming_flag_and_callbacks_count_usage(llm: LocalChatModel) -> None:
    cb = UsageCallback()
    tokens: list[str] = []

    from langchain_core.callbacks import BaseCallbackHandler

    class Tokens(BaseCallbackHandler):
        def on_llm_new_token(self, token: str, **kwargs: object) -> None:
            tokens.append(token)

    streaming = LocalChatModel(max_tokens=12, streaming=True)
    msg = streaming.invoke(COUNT, config={"callbacks": [cb, Tokens()]})
    assert "".join(tokens) == msg.content and len(tokens) > 1
    assert cb.llm_calls == 1 and cb.input_tokens == msg.usage_metadata["input_tokens"]
    assert cb.output_tokens == msg.usage_metadata["output_tokens"]


@pytest.mark.integration
def test_batch_matches_sequential(llm: LocalChatModel) -> None:
    prompts = ["Say hello.", COUNT, "Name a color."]
    seq = [llm.invoke(p, max_tokens=8) for p in prompts]
    par = llm.batch(prompts, max_tokens=8, config={"max_concurrency": 3})
    assert [m.content for m in par] == [m.content for m in seq]
    assert [m.usage_metadata for m in par] == [m.usage_metadata for m in seq]


@pytest.mark.integration
async def test_abatch_and_astream(llm: LocalChatModel) -> None:
    cb = UsageCallback()
    seq = [llm.invoke(p, max_tokens=6) for p in ["Say hello.", "Name a color."]]
    par = await llm.abatch(["Say hello.", "Name a color."], max_tokens=6, config={"callbacks": [cb]})
    assert [m.content for m in par] == [m.content for m in seq]
    assert cb.llm_calls == 2 and cb.output_tokens == sum(m.usage_metadata["output_tokens"] for m in par)
    chunks = [c async for c in llm.astream("Say hello.", max_tokens=6)]
    assert "".join(c.content for c in chunks) == seq[0].content
    assert chunks[-1].usage_metadata == seq[0].usage_metadata


@pytest.mark.integration
def test_bad_per_call_values_are_config_errors(llm: LocalChatModel) -> None:
    with pytest.raises(ConfigError, match="max_tokens >= 1"):
        llm.invoke("hi", max_tokens=0)
    with pytest.raises(ConfigError, match="temperature >= 0"):
        llm.invoke("hi", temperature=-0.5)


def test_vllm_server_without_venv_is_a_model_error(tmp_path) -> None:
    from kg_agents.llm.vllm_server import VLLMServer

    with pytest.raises(ModelError, match="setup_vllm"):
        VLLMServer(python=tmp_path / "no-venv" / "bin" / "python", work_dir=tmp_path).start()


def test_public_exports_are_pinned() -> None:
    import kg_agents.llm as llm_pkg

    assert llm_pkg.__all__ == sorted(llm_pkg.__all__)
    assert set(llm_pkg.__all__) == {
        "LocalChatModel",
        "UsageCallback",
        "load_local_model",
        "resolve_chat_model",
    }


def test_generation_lock_is_shared_per_checkpoint() -> None:
    from kg_agents.llm.chat import generation_lock

    assert generation_lock() is generation_lock(None)
    assert generation_lock("/some/dir") is generation_lock("/some/dir") is not generation_lock()


@pytest.mark.integration
class TestLocalChatModelIntegration(ChatModelIntegrationTests):
    """LangChain's standard integration suite on the real model, tool calling, tool choice, structured output
    and JSON mode switched on (multimodal inputs, model override and VCR tests do not apply).
    ``max_tokens`` leaves room for a JSON tool call or joke and keeps the text tests cheap."""

    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return LocalChatModel

    @property
    def chat_model_params(self) -> dict:
        return {"model": "smollm2-135m-instruct", "temperature": 0, "max_tokens": 128}

    @property
    def has_tool_calling(self) -> bool:
        return True

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def has_structured_output(self) -> bool:
        return True

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def returns_usage_metadata(self) -> bool:
        return True


def test_bad_call_options_fail_before_loading() -> None:
    llm = LocalChatModel(max_tokens=4)
    with pytest.raises(ConfigError, match="unsupported call options"):
        llm.invoke("hi", frequency_penalty=1.0)
    with pytest.raises(ConfigError, match="cannot bind"):
        llm.invoke("hi", tools=[{"type": "function"}])
    with pytest.raises(ConfigError, match="not a bound tool"):
        llm.bind_tools([{"name": "add", "description": "Add.", "parameters": {}}], tool_choice="multiply")
    with pytest.raises(ConfigError, match="serves 'smollm2-135m-instruct' only"):
        llm.invoke("hi", model="gpt-4")
    assert llm._hf is None


def test_batch_size_is_validated() -> None:
    from kg_agents.llm.batching import GenerationBatcher

    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        LocalChatModel(batch_size=0)
    with pytest.raises(ValueError, match="max_tokens must be >= 1, got 0"):
        LocalChatModel(max_tokens=0)
    with pytest.raises(ValueError, match="max_batch must be >= 1"):
        GenerationBatcher(None, None, threading.Lock(), max_batch=0)


def test_batcher_rejects_an_empty_prompt() -> None:
    from kg_agents.llm.batching import BatchRequest, GenerationBatcher

    with pytest.raises(ModelError, match="empty prompt"):
        GenerationBatcher(None, None, threading.Lock()).submit(BatchRequest(prompt_ids=[], max_new_tokens=4))


@pytest.mark.integration
async def test_concurrent_calls_are_batched_and_match_single_calls() -> None:
    """Dynamic batching: concurrent greedy calls share one generate call and give the single-call results,
    each with its own stop strings, token limit and usage."""
    single = LocalChatModel(max_tokens=24, batch_size=1)
    batched = LocalChatModel(max_tokens=24, batch_size=8, batch_window=0.05)
    calls = [
        (COUNT, {"stop": ["4"]}),
        ("Say hello.", {"max_tokens": 5}),
        ("What is the capital of France? Answer in one word.", {}),
        (COUNT, {"max_tokens": 9}),
        ("Name three colors.", {"stop": ["\n", ","]}),
    ]
    expected = [single.invoke(p, **kw) for p, kw in calls]
    assert all(m.response_metadata["batch_size"] == 1 for m in expected)
    import asyncio

    got = await asyncio.gather(*(batched.ainvoke(p, **kw) for p, kw in calls))
    assert [m.content for m in got] == [m.content for m in expected]
    assert [m.usage_metadata for m in got] == [m.usage_metadata for m in expected]
    assert [m.response_metadata["finish_reason"] for m in got] == [
        m.response_metadata["finish_reason"] for m in expected
    ]
    assert max(m.response_metadata["batch_size"] for m in got) > 1  # they really shared a generate call
    threaded = batched.batch([p for p, _ in calls], max_tokens=6, config={"max_concurrency": 5})
    assert [m.content for m in threaded] == [single.invoke(p, max_tokens=6).content for p, _ in calls]


@pytest.mark.integration
async def test_unseeded_samples_batch_and_seeded_samples_stay_reproducible() -> None:
    import asyncio

    batched = LocalChatModel(max_tokens=8, batch_size=8, batch_window=0.05)
    got = await asyncio.gather(*(batched.ainvoke(COUNT, temperature=0.9) for _ in range(4)))
    assert all(m.usage_metadata["output_tokens"] <= 8 for m in got)
    assert max(m.response_metadata["batch_size"] for m in got) > 1
    seeded = await asyncio.gather(*(batched.ainvoke(COUNT, temperature=0.9, seed=7) for _ in range(3)))
    assert len({m.content for m in seeded}) == 1  # generated alone, each with its own seed
    assert all(m.response_metadata["batch_size"] == 1 for m in seeded)


@pytest.mark.integration
def test_bfloat16_model_is_its_own_copy_and_ranks_like_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    """``dtype="bfloat16"`` (and ``"int8"``) loads another copy (the float32 one is untouched) that chat,
    option ranking and GCR's decoder use; on a clear choice each ranks as float32 does."""
    import torch

    from kg_agents.kg import MemoryKG
    from kg_agents.kg.testing import CONTRACT_TRIPLES
    from kg_agents.llm.local_model import load_local_model
    from kg_agents.llm.ranking import rank_options
    from kg_agents.methods.gcr import graph as gcr_graph
    from kg_agents.methods.gcr.graph import create_gcr_graph
    from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder

    made: list[Any] = []

    def decoder(dtype: str | None = None, **kwargs: Any) -> LocalConstrainedDecoder:
        made.append(LocalConstrainedDecoder(dtype=dtype, **kwargs))
        return made[-1]

    monkeypatch.setattr(gcr_graph, "LocalConstrainedDecoder", decoder)

    fp32, _ = load_local_model(dtype="float32")
    bf16, _ = load_local_model(dtype="bfloat16")
    assert fp32 is not bf16 and fp32.dtype == torch.float32 and bf16.dtype == torch.bfloat16
    msgs = [HumanMessage("What is the capital of France? Answer with the city.")]
    options = ["Paris", "Berlin", "a bicycle"]
    orders = [
        rank_options(LocalChatModel(dtype=d, max_tokens=8), msgs, options).order()
        for d in ("float32", "bfloat16", "int8")
    ]
    assert [o[0] for o in orders] == [0, 0, 0]
    int8, _ = load_local_model(dtype="int8")
    assert isinstance(int8.model.layers[0].mlp.up_proj, torch.ao.nn.quantized.dynamic.Linear)
    assert isinstance(fp32.model.layers[0].mlp.up_proj, torch.nn.Linear)
    assert "Paris" in LocalChatModel(dtype="bfloat16", max_tokens=8).invoke(msgs).content
    g = create_gcr_graph(
        MemoryKG(CONTRACT_TRIPLES), llm=LocalChatModel(dtype="bfloat16", max_tokens=8), num_beams=2
    )
    assert [d.model for d in made] == [bf16]  # the graph's decoder follows its chat model's dtype
    assert made[0].path_scores == "trie"  # and gets the graph's path scores
    out = g.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert out["paths"] and not out.get("errors")


@pytest.mark.integration
def test_the_default_dtype_is_what_auto_resolves_to_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """With no dtype named anywhere, the model loads in bfloat16 on a CPU that computes it, else in
    float32, and answers (the suite pins float32 for its other tests; this one runs as a user's does)."""
    import torch

    from kg_agents.llm import local_model

    monkeypatch.delenv(local_model.DTYPE_ENV, raising=False)
    expected = "bfloat16" if local_model.cpu_has_bf16() else "float32"
    assert local_model.resolve_dtype() == expected
    model, _ = local_model.load_local_model()
    assert model.dtype == getattr(torch, expected)
    msg = LocalChatModel(max_tokens=24).invoke(
        [SystemMessage("Answer in one short sentence."), HumanMessage("What is the capital of France?")]
    )
    assert "Paris" in msg.content
