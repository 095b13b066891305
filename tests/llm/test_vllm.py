"""The real vLLM CPU server (marker ``vllm``): chat through ``resolve_chat_model("openai:smollm2")`` and the
token-level :class:`VLLMClient` that GCR's vLLM decoder uses.

The session fixture ``vllm_server`` (tests/vllm_fixtures.py) starts one server for the whole session; if
``.venv-vllm`` is missing, these tests fail and say how to make it.

Constrained output on the server: ``extra_body={"structured_outputs": {"choice": [...]}}`` (or ``regex``)
through the chat model; the decoder uses prompt log-probabilities (``VLLMClient.score_continuations``) and
``allowed_token_ids`` instead of beam search, which ignores ``structured_outputs`` on this server.
"""

from __future__ import annotations

import re

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from kg_agents.errors import ModelError
from kg_agents.llm import LocalChatModel, UsageCallback, load_local_model, resolve_chat_model
from kg_agents.llm.vllm_client import VLLMClient
from kg_agents.llm.vllm_server import VLLMServer

pytestmark = pytest.mark.vllm

QUESTION = [SystemMessage("Answer in one short sentence."), HumanMessage("What is the capital of France?")]


@pytest.fixture(scope="module")
def chat(vllm_server: VLLMServer):
    return resolve_chat_model("openai:smollm2", base_url=vllm_server.base_url, temperature=0, max_tokens=24)


@pytest.fixture(scope="module")
def client(vllm_server: VLLMServer):
    with VLLMClient(vllm_server.base_url, "smollm2") as c:
        yield c


def test_server_is_up_and_serves_smollm2(vllm_server: VLLMServer) -> None:
    from kg_agents.llm.resolve import check_server

    assert check_server(vllm_server.base_url, "smollm2") == ["smollm2"]
    assert vllm_server.startup_s is not None and vllm_server.rss_bytes() > 100_000_000
    with pytest.raises(ModelError, match="does not serve"):
        check_server(vllm_server.base_url, "gpt-4")


def test_invoke_with_usage(chat) -> None:
    msg = chat.invoke(QUESTION)
    assert "Paris" in msg.content
    u = msg.usage_metadata
    assert u["input_tokens"] > 5 and 0 < u["output_tokens"] <= 24
    assert u["total_tokens"] == u["input_tokens"] + u["output_tokens"]


def test_same_prompt_tokens_as_the_local_model(chat) -> None:
    """The server applies the chat template as LocalChatModel does: same prompt tokens, same greedy answer."""
    local = LocalChatModel(max_tokens=24).invoke(QUESTION)
    remote = chat.invoke(QUESTION)
    assert remote.usage_metadata["input_tokens"] == local.usage_metadata["input_tokens"]
    assert remote.content == local.content


def test_stream_with_usage(chat) -> None:
    whole = chat.invoke(QUESTION)
    chunks = list(chat.stream(QUESTION))
    assert len([c for c in chunks if c.content]) > 2
    assert "".join(c.content for c in chunks) == whole.content
    total = chunks[0]
    for c in chunks[1:]:
        total = total + c
    assert total.usage_metadata["input_tokens"] == whole.usage_metadata["input_tokens"]
    assert total.usage_metadata["output_tokens"] == whole.usage_metadata["output_tokens"]


def test_batch_and_usage_callback(chat) -> None:
    prompts = ["Say hello.", "Name a color."]
    cb = UsageCallback()
    seq = [chat.invoke(p) for p in prompts]
    par = chat.batch(prompts, config={"callbacks": [cb]})
    assert [m.content for m in par] == [m.content for m in seq]
    assert cb.llm_calls == 2 and cb.errors == 0
    assert cb.input_tokens == sum(m.usage_metadata["input_tokens"] for m in par)
    assert cb.output_tokens == sum(m.usage_metadata["output_tokens"] for m in par)


async def test_abatch(chat) -> None:
    out = await chat.abatch(["Say hello.", "Name a color."])
    assert all(m.content and m.usage_metadata["output_tokens"] > 0 for m in out)


def test_structured_outputs_choice_and_regex(chat) -> None:
    choices = ["Ron Howard", "Tom Hanks", "Steven Spielberg"]
    constrained = chat.bind(extra_body={"structured_outputs": {"choice": choices}})
    for q in ["Who directed Splash?", "Name an actor."]:
        assert constrained.invoke(q).content in choices
    year = chat.bind(extra_body={"structured_outputs": {"regex": "(19|20)[0-9]{2}"}}).invoke(
        "When was Splash released?"
    )
    assert re.fullmatch(r"(19|20)[0-9]{2}", year.content)


def test_tokenizer_matches_the_local_model(client: VLLMClient) -> None:
    _, tok = load_local_model()
    for text in [
        "Splash -> directed_by -> Ron Howard",
        "Tom Hanks ~starred_actors Forrest Gump",
        "Émile Zola",
    ]:
        ids = client.tokenize(text)
        assert ids == tok.encode(text, add_special_tokens=False)
        assert client.detokenize(ids) == text


def test_prompt_logprobs_agree_with_echo(client: VLLMClient) -> None:
    ids = client.tokenize("The capital of France is Paris")
    (row,) = client.prompt_logprobs([ids])
    assert row[0] is None and len(row) == len(ids)
    echo = client.completions(ids, max_tokens=1, logprobs=1, echo=True)["choices"][0]["logprobs"][
        "token_logprobs"
    ]
    assert echo[0] is None
    assert row[1:] == pytest.approx(echo[1 : len(ids)], abs=1e-4)


def test_score_continuations_ranks_the_likelier_path(client: VLLMClient) -> None:
    prefix = client.tokenize("The capital of France is")
    good, bad = client.tokenize(" Paris"), client.tokenize(" banana")
    scores = client.score_continuations(prefix, [good, bad, good])
    assert scores[0] > scores[1] and scores[0] == pytest.approx(scores[2], abs=1e-4)
    assert all(s < 0 for s in scores)


def test_allowed_token_ids_restrict_generation(client: VLLMClient) -> None:
    allowed = client.tokenize(" Ron Howard Tom Hanks")
    out = client.completions(client.tokenize("Splash was directed by"), max_tokens=4, logprobs=2)
    free = client.completions(
        client.tokenize("Splash was directed by"), max_tokens=4, allowed_token_ids=allowed, logprobs=2
    )
    text = free["choices"][0]["text"]
    assert set(client.tokenize(text)) <= set(allowed)
    assert free["usage"]["completion_tokens"] == 4
    assert out["choices"][0]["text"]  # the unconstrained call works too


def test_server_rejections_are_model_errors(client: VLLMClient) -> None:
    with pytest.raises(ModelError, match="n must be 1 when using greedy"):
        client.completions("Hi", n=2)
    with pytest.raises(ModelError, match="max_tokens"):
        client.completions("Hi", max_tokens=0)


def test_a_server_that_cannot_start_fails_with_its_log(tmp_path) -> None:
    server = VLLMServer(model_dir=tmp_path / "empty-model", startup_timeout=240, work_dir=tmp_path / "work")
    (tmp_path / "empty-model").mkdir()
    with pytest.raises(ModelError, match="exited with code") as info:
        server.start()
    assert "log tail" in str(info.value)
    assert server.proc is None and not list((tmp_path / "work").glob("tmp-*"))


def test_rank_options_on_the_server_matches_the_local_model(chat) -> None:
    """Option ranking on the server (prompt log-probabilities) scores the same token sequences as the
    embedded model: the same order, and the same log-probabilities up to float noise."""
    from kg_agents.llm.ranking import rank_options

    prompt = [
        SystemMessage("You pick the relation of a knowledge graph that answers the question."),
        HumanMessage("Which relation of Splash answers: who directed Splash?"),
    ]
    options = ["directed by", "has genre", "starred actors", "release year"]
    local_llm = resolve_chat_model("local")
    for complete in (True, False):
        served = rank_options(chat, prompt, options, complete=complete)
        local = rank_options(local_llm, prompt, options, complete=complete)
        assert served.route == "logprobs" and served.input_tokens == local.input_tokens > 0
        assert [o for o, _ in served.ranked()] == [o for o, _ in local.ranked()]
        assert served.scores == pytest.approx(local.scores, abs=0.05)
