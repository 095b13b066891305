"""The ``dualr`` nodes called one by one, each with a small :class:`DualRDeps` (no graph, no model)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from kg_agents.core.metering import MeteredKG
from kg_agents.core.prompts import load_prompt
from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.dualr import DualRContext
from kg_agents.methods.dualr.gnn import DualRExplorer, ExplorerConfig
from kg_agents.methods.dualr.nodes import (
    DualRDeps,
    ExplorerSession,
    backtrack_chains,
    build_prompt,
    determine_answer,
    encode_question,
)
from tests.fakes import FakeChat

CANDIDATES = [
    {"entity": "Ron Howard", "probability": 0.8},
    {"entity": "Tom Hanks", "probability": 0.5},
    {"entity": "1984", "probability": 0.1},
]
CHAINS = {
    "Ron Howard": "Splash -> directed_by -> Ron Howard",
    "Tom Hanks": "Splash -> starred_actors -> Tom Hanks",
}


class ConstantEncoder:
    """A text encoder of the given size (every text the same vector)."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.name = f"constant-{dim}"

    def __call__(self, texts):
        return np.ones((len(texts), self.dim), np.float32)


def make_deps(*, answer_with="llm", llm=None, encoder=None, **context) -> DualRDeps:
    kg = MeteredKG(MemoryKG(CONTRACT_TRIPLES))
    model = DualRExplorer(ExplorerConfig(hidden=8, layers=2, top_k=(3,), encoder_dim=16))
    defaults = DualRContext(num_candidates=3, top_k=None, layers=None, answer_ratio=0.5)
    for k, v in context.items():
        setattr(defaults, k, v)
    return DualRDeps(
        kg=kg,
        explorer=ExplorerSession(model, kg, encoder=encoder),
        template=load_prompt("dualr", "answer"),
        defaults=defaults,
        answer_with=answer_with,
        llm=llm,
    )


def run(context: DualRContext | None) -> SimpleNamespace:
    return SimpleNamespace(context=context)


def test_encode_question_checks_the_encoder_size():
    out = encode_question(make_deps(encoder=ConstantEncoder(16)), {"question": "who directed [Splash]"})
    assert out["question_encoding"] == [1.0] * 16 and out["usage"]["kg_calls"] == 0
    out = encode_question(make_deps(encoder=ConstantEncoder(4)), {"question": "who directed [Splash]"})
    assert out["answers"] == [] and out["paths"] == []
    (err,) = out["errors"]
    assert err["node"] == "encode_question" and err["type"] == "ConfigError"
    assert "4-d vectors, the checkpoint expects 16" in err["message"]


def test_backtrack_keeps_only_chains_that_are_kg_paths():
    explored = [
        [
            ("Splash", "directed_by", False, "Ron Howard", 0.9),
            ("Splash", "invented_by", False, "Nobody", 0.8),
        ]
    ]
    state = {
        "explored": explored,
        "candidates": [
            {"entity": "Ron Howard", "probability": 0.6},
            {"entity": "Nobody", "probability": 0.4},
        ],
    }
    out = backtrack_chains(make_deps(), state)
    assert out["chains"] == {"Ron Howard": "Splash -> directed_by -> Ron Howard"}
    assert out["evidence"] == ["Splash -> directed_by -> Ron Howard"]
    assert out["trace"][1] == {"node": "backtrack", "paths_kept": 1, "paths_dropped": 1}


def test_build_prompt_lists_candidates_with_their_facts():
    out = build_prompt(make_deps(), {"candidates": CANDIDATES, "chains": CHAINS})
    assert out["options"].splitlines() == [
        "<kg>",
        "A. Ron Howard (correct probability: 0.800) {relevant facts: (Splash, directed_by, Ron Howard)}",
        "B. Tom Hanks (correct probability: 0.500) {relevant facts: (Splash, starred_actors, Tom Hanks)}",
        "C. 1984 (correct probability: 0.100) {relevant facts: }",
        "</kg>",
    ]


def test_determine_answer_gnn_only_uses_the_ratio_of_the_run():
    deps = make_deps(answer_with="gnn")
    state = {"question": "q", "candidates": CANDIDATES, "chains": CHAINS}
    out = determine_answer(deps, state, run(None))
    assert out["answers"] == ["Ron Howard", "Tom Hanks"] and out["usage"]["llm_calls"] == 0
    assert [p.to_text() for p in out["paths"]] == list(CHAINS.values())
    out = determine_answer(deps, state, run(DualRContext(answer_ratio=1.0)))
    assert out["answers"] == ["Ron Howard"]
    assert out["trace"][0] == {"node": "determine_answer", "mode": "gnn_only"}


def test_determine_answer_one_llm_call_picks_an_option():
    llm = FakeChat(rules=[("Reference answers", "Answer: B. Tom Hanks")])
    deps = make_deps(llm=llm)
    state = {
        "question": "who starred in [Splash]",
        "candidates": CANDIDATES,
        "chains": CHAINS,
        "options": "...",
    }
    out = determine_answer(deps, state)
    assert out["answers"] == ["Tom Hanks"] and out["usage"]["llm_calls"] == 1
    assert [p.to_text() for p in out["paths"]] == ["Splash -> starred_actors -> Tom Hanks"]
    assert out["trace"][0]["choice"] == "B" and "Question: who starred in [Splash]" in llm.prompts[0]


@pytest.mark.parametrize("reply", ["", "  \n "])
def test_determine_answer_records_no_answer(reply):
    deps = make_deps(llm=FakeChat(replies=[reply]))
    out = determine_answer(deps, {"question": "q", "candidates": CANDIDATES, "chains": CHAINS})
    assert out["answers"] == [] and out["paths"] == []
    assert [(e["node"], e["type"]) for e in out["errors"]] == [("determine_answer", "NoAnswer")]


class KeywordEncoder:
    """A text encoder that counts a few words (one dimension each), so similarities are known."""

    WORDS = ("directed", "starred", "year", "written")

    def __init__(self, dim: int = 16) -> None:
        self.dim = dim
        self.name = "keywords"

    def __call__(self, texts):
        out = np.zeros((len(texts), self.dim), np.float32)
        for i, t in enumerate(texts):
            for j, w in enumerate(self.WORDS):
                out[i, j] = t.lower().count(w)
            out[i, -1] = 0.1  # no text is the zero vector
        return out


#: Tom Hanks' films (layer 1), their directors and years (layer 2), and a step back (layer 3); an
#: entity stays a candidate through the later layers by an identity edge (relation None).
def _stay(*entities: str) -> list:
    return [(e, None, False, e, 1.0) for e in entities]


HANKS_EXPLORED = [
    [
        ("Tom Hanks", "starred_actors", True, "Splash", 0.9),
        ("Tom Hanks", "starred_actors", True, "Big", 0.8),
    ],
    [
        *_stay("Splash", "Big"),
        ("Splash", "directed_by", False, "Ron Howard", 0.7),
        ("Big", "directed_by", False, "Penny Marshall", 0.6),
        ("Big", "release_year", False, "1988", 0.5),
    ],
    [
        *_stay("Splash", "Big", "Ron Howard", "Penny Marshall", "1988"),
        ("Ron Howard", "directed_by", True, "Parenthood", 0.4),
    ],
]
HANKS_POOL = [
    {"entity": "Splash", "probability": 0.4},
    {"entity": "Big", "probability": 0.3},
    {"entity": "Parenthood", "probability": 0.12},
    {"entity": "Ron Howard", "probability": 0.1},
    {"entity": "1988", "probability": 0.05},
    {"entity": "Penny Marshall", "probability": 0.03},
]


def hanks_state(question: str) -> dict:
    return {
        "question": question,
        "topic_entities": ["Tom Hanks"],
        "explored": HANKS_EXPLORED,
        "candidates": HANKS_POOL[:3],
        "pool": HANKS_POOL,
    }


def test_path_match_puts_the_path_that_reads_like_the_question_first():
    deps = make_deps(encoder=KeywordEncoder(), answer_with="gnn", path_match=True, whole_set=True)
    state = hanks_state("who directed the films of [Tom Hanks]")
    out = backtrack_chains(deps, state, run(None))
    # "starred actors directed by" reads closest, then "starred actors", then "starred actors release
    # year"; the step back along directed_by goes last, though it reads as close; within a path, by
    # probability
    assert [c["entity"] for c in out["pool"]] == [
        "Ron Howard",
        "Penny Marshall",
        "Splash",
        "Big",
        "1988",
        "Parenthood",
    ]
    assert [c["entity"] for c in out["candidates"]] == ["Ron Howard", "Penny Marshall", "Splash"]
    info = out["trace"][0]["path_match"]
    assert info["best"] == "~starred_actors directed_by"
    assert info["paths"]["~starred_actors directed_by"] > info["paths"]["~starred_actors release_year"]
    # the answer is the best path's candidate; the whole set, every end of that path
    answer = determine_answer(deps, {**state, **out}, run(None))
    assert answer["answers"] == ["Ron Howard", "Penny Marshall"]
    assert [p.to_text() for p in answer["paths"]] == [
        "Tom Hanks -> ~starred_actors -> Splash -> directed_by -> Ron Howard",
        "Tom Hanks -> ~starred_actors -> Big -> directed_by -> Penny Marshall",
    ]


def test_without_path_match_the_gnn_order_stands():
    deps = make_deps(encoder=KeywordEncoder(), answer_with="gnn", path_match=False, whole_set=True)
    state = hanks_state("who directed the films of [Tom Hanks]")
    out = backtrack_chains(deps, state, run(None))
    assert [c["entity"] for c in out["pool"]] == [c["entity"] for c in HANKS_POOL]
    assert "path_match" not in out["trace"][0]
    # a run's context turns it on
    out = backtrack_chains(deps, state, run(DualRContext(path_match=True)))
    assert out["pool"][0]["entity"] == "Ron Howard"


def test_path_match_reads_the_year_question_as_the_year_path():
    deps = make_deps(encoder=KeywordEncoder(), answer_with="gnn", path_match=True, whole_set=True)
    state = hanks_state("what year were the films of [Tom Hanks] released")
    out = backtrack_chains(deps, state, run(None))
    assert out["pool"][0]["entity"] == "1988"
    answer = determine_answer(deps, {**state, **out}, run(None))
    assert answer["answers"] == ["1988"]
