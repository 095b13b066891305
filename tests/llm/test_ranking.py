"""Option ranking (:mod:`kg_agents.llm.ranking`): the routes, the exact scores on the embedded model, and
the same order on every route for the same log-probabilities (the vLLM server's half is in test_vllm.py).
"""

from __future__ import annotations

import math

import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from kg_agents.core.decide import ground_answers, rank, ranked_answers
from kg_agents.core.metering import metered
from kg_agents.errors import ConfigError, ModelError
from kg_agents.llm import resolve_chat_model
from kg_agents.llm.chat import messages_to_chat
from kg_agents.llm.local_model import load_local_model
from kg_agents.llm.ranking import Ranking, match_option, rank_options, reply_token_ids
from tests.fakes import FakeChat

PROMPT = [
    SystemMessage("You pick the relation of a knowledge graph that answers the question."),
    HumanMessage("Which relation of Splash answers: who directed Splash?"),
]
OPTIONS = ["directed by", "has genre", "starred actors", "release year"]


# --------------------------------------------------------------------------- no model
def test_input_errors_are_typed() -> None:
    llm = FakeChat(default="x")
    with pytest.raises(ConfigError, match="at least one"):
        rank_options(llm, "q", [])
    with pytest.raises(ConfigError, match="distinct"):
        rank_options(llm, "q", ["a", "a"])
    with pytest.raises(ConfigError, match="non-empty"):
        rank_options(llm, "q", ["a", " "])
    with pytest.raises(ConfigError, match="batch_size"):
        rank_options(llm, "q", ["a"], batch_size=0)
    with pytest.raises(ConfigError, match="chat model"):
        rank_options(object(), "q", ["a"])
    bad = FakeChat(logprobs=lambda text, options: [0.0])
    with pytest.raises(ModelError, match="1 scores for 2"):
        rank_options(bad, "q", ["a", "b"])


def test_scripted_logprobs_route_orders_by_score_and_keeps_ties_in_order() -> None:
    llm = FakeChat(logprobs={"has genre": -0.5, "directed by": -2.0, "starred actors": -0.5})
    r = rank_options(llm, PROMPT, OPTIONS)
    assert r.route == "logprobs" and r.matched
    assert [o for o, _ in r.ranked()] == ["has genre", "starred actors", "directed by", "release year"]
    assert r.best == "has genre" and llm.calls["logprobs"] == 1
    assert sum(r.probabilities()) == pytest.approx(1.0)
    top = r.as_trace(top=2)["top"]
    assert [o for o, _ in top] == ["has genre", "starred actors"] and top[0][1] == top[1][1] > 0.4


def test_structured_then_generate_route_on_a_text_only_model() -> None:
    # bind_tools accepted but the reply is text: the text is matched (one call, route "generate")
    llm = FakeChat(default="I think it is the one about directed by.")
    r = rank_options(llm, PROMPT, OPTIONS)
    assert r.route == "generate" and r.best == "directed by" and len(llm.prompts) == 1
    assert r.scores[0] == 0.0 and all(s == -math.inf for s in r.scores[1:])
    # no tool calling at all: generate-and-match directly
    plain = FakeChat(default="release year", tools=False)
    assert rank_options(plain, PROMPT, OPTIONS).best == "release year"
    # a reply naming no option: nothing chosen, and said so
    lost = rank_options(FakeChat(default="Paris", tools=False), PROMPT, OPTIONS)
    assert not lost.matched and lost.best is None and lost.as_trace()["matched"] is False
    assert ranked_answers(lost, max_answers=3, ratio=0.5) == []


def test_match_option_prefers_exact_then_longest() -> None:
    opts = ["Ron", "Ron Howard", "Splash"]
    assert match_option("splash", opts) == 2
    assert match_option("It was Ron Howard", opts) == 1
    assert match_option("Ronald", opts) is None


def test_rank_meters_one_call_with_tokens() -> None:
    llm = FakeChat(default="has genre", tools=False)

    @metered
    def node(state: dict) -> dict:
        return {"answers": [rank(llm, PROMPT, OPTIONS).best]}

    out = node({})
    assert out["answers"] == ["has genre"]
    assert out["usage"]["llm_calls"] == 1 and out["usage"]["input_tokens"] > 0


def test_a_calibrated_ranking_scores_what_the_question_adds() -> None:
    # after the question, "starred actors" is likeliest; without it, it is likelier still: the question
    # raises "directed by" most, so calibration ranks it first
    def logprobs(text: str, options: list[str]) -> list[float]:
        with_q = {"directed by": -2.0, "has genre": -3.0, "starred actors": -1.0, "release year": -4.0}
        without = {"directed by": -5.0, "has genre": -3.5, "starred actors": -0.5, "release year": -4.0}
        table = with_q if "who directed" in text else without
        return [table[o] for o in options]

    llm = FakeChat(logprobs=logprobs)
    baseline = [PROMPT[0], HumanMessage("Which relation of Splash answers: [Splash]?")]

    @metered
    def node(state: dict) -> dict:
        return {"ranking": rank(llm, PROMPT, OPTIONS, baseline=baseline)}

    out = node({})
    r = out["ranking"]
    assert r.best == "directed by" and r.scores == pytest.approx((3.0, 0.5, -0.5, 0.0))
    assert r.extra["uncalibrated"] == (-2.0, -3.0, -1.0, -4.0) and r.as_trace()["calibrated"] is True
    assert out["usage"]["llm_calls"] == 2 and llm.calls["logprobs"] == 2
    assert rank(llm, PROMPT, OPTIONS).best == "starred actors"  # uncalibrated, as before


def test_calibration_needs_log_probabilities() -> None:
    # a text-only model ranks by its reply: no baseline call, and the trace says it was not calibrated
    llm = FakeChat(default="has genre", tools=False)

    @metered
    def node(state: dict) -> dict:
        return {"ranking": rank(llm, PROMPT, OPTIONS, baseline="[Splash]")}

    out = node({})
    assert out["ranking"].best == "has genre" and out["ranking"].as_trace()["calibrated"] is False
    assert out["usage"]["llm_calls"] == 1 and len(llm.prompts) == 1
    # a single option needs no call either way
    assert rank(llm, PROMPT, ["x"], baseline="[Splash]").route == "only" and len(llm.prompts) == 1


def test_ranked_answers_keeps_those_near_the_best() -> None:
    r = Ranking(("a", "b", "c"), (math.log(0.6), math.log(0.35), math.log(0.05)), "logprobs")
    assert ranked_answers(r, max_answers=5, ratio=0.5) == ["a", "b"]
    assert ranked_answers(r, max_answers=1, ratio=0.01) == ["a"]


def test_ground_answers_drops_text_naming_no_candidate() -> None:
    from kg_agents.kg.base import Hop, Path

    p1 = Path((Hop("Splash", "directed_by", "Ron Howard"),))
    p2 = Path((Hop("Splash", "starred_actors", "Tom Hanks"),))
    answers, paths, dropped = ground_answers(
        ["The director is Ron Howard", "Steven Spielberg", "ron howard"],
        {"Ron Howard": [p1], "Tom Hanks": [p2]},
    )
    assert answers == ["Ron Howard"] and paths == [p1] and dropped == ["Steven Spielberg"]


# --------------------------------------------------------------------------- the embedded model
@pytest.fixture(scope="module")
def local():
    return resolve_chat_model("local")


@pytest.mark.integration
def test_local_scores_are_exact_reply_logprobs(local) -> None:
    import torch

    r = rank_options(local, PROMPT, OPTIONS, batch_size=3)  # two batches
    assert r.route == "logprobs" and r.input_tokens > 0 and r.output_tokens == 0
    model, tok = load_local_model()
    prefix, conts = reply_token_ids(tok, messages_to_chat(PROMPT), OPTIONS)
    assert all(c[-1] == tok.convert_tokens_to_ids("<|im_end|>") for c in conts)  # the reply is closed
    for cont, score in zip(conts, r.scores, strict=True):
        with torch.inference_mode():
            logp = torch.log_softmax(model(torch.tensor([prefix + cont])).logits[0].float(), dim=-1)
        full = sum(float(logp[len(prefix) + j - 1, t]) for j, t in enumerate(cont))
        assert score == pytest.approx(full, abs=1e-3)
    one_batch = rank_options(local, PROMPT, OPTIONS, batch_size=32)
    assert one_batch.scores == pytest.approx(r.scores, abs=1e-3)


@pytest.mark.integration
def test_same_order_for_the_same_logprobs_on_every_route(local) -> None:
    real = rank_options(local, PROMPT, OPTIONS)
    scripted = rank_options(FakeChat(logprobs=dict(zip(OPTIONS, real.scores, strict=True))), PROMPT, OPTIONS)
    assert [o for o, _ in scripted.ranked()] == [o for o, _ in real.ranked()]
    assert scripted.probabilities() == pytest.approx(real.probabilities())


@pytest.mark.integration
def test_per_token_scores_are_the_mean_over_the_reply_tokens(local) -> None:
    summed = rank_options(local, PROMPT, OPTIONS)
    mean = rank_options(local, PROMPT, OPTIONS, per_token=True)
    _, tok = load_local_model()
    _, conts = reply_token_ids(tok, messages_to_chat(PROMPT), OPTIONS)
    want = [s / len(c) for s, c in zip(summed.scores, conts, strict=True)]
    assert mean.scores == pytest.approx(want, abs=1e-4)
