from __future__ import annotations

import asyncio
import json

import pytest

from kg_agents.errors import ConfigError, DataFormatError, ModelError
from kg_agents.eval.datasets import Question, SubgraphFactory, get_dataset
from kg_agents.eval.metrics import SUMMARY_KEYS, normalize_answer, score_aliased, score_answers, summarize
from kg_agents.eval.runner import compare_runs, gold_sets, load_questions_file, read_predictions, run_eval
from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.baselines.graph import create_graph_rag_graph, create_llm_only_graph
from tests.fakes import FakeChat


# --------------------------------------------------------------------------- metrics
@pytest.mark.parametrize(
    "raw,want",
    [
        ("The  United_Kingdom!", "united kingdom"),
        ("Ron Howard.", "ron howard"),
        ("an Apple a day", "apple day"),
        ("O'Brien & Sons", "obrien sons"),
        ("  ", ""),
    ],
)
def test_normalize_answer(raw, want):
    assert normalize_answer(raw) == want


def test_scores_exact_by_default():
    s = score_answers(["the ron howard", "Tom Hanks", "tom hanks"], ["Ron Howard", "Penny Marshall"])
    assert s["hits@1"] == 1.0 and s["hit"] == 1.0
    assert s["precision"] == pytest.approx(1 / 2)  # distinct predictions: ron howard, tom hanks
    assert s["recall"] == pytest.approx(1 / 2)
    assert s["f1"] == pytest.approx(0.5)
    # a sentence naming the answer is not the answer; nor is an echoed topic entity inside it
    s = score_answers(["It was Ron Howard and Penny Marshall", "Big"], ["Ron Howard", "Penny Marshall"])
    assert s == {k: 0.0 for k in ("hits@1", "hit", "f1", "precision", "recall")}
    assert score_answers(["The Wedding Ringer release year 2015"], ["The Wedding Ringer"])["hit"] == 0.0
    assert score_answers([], ["x"]) == {k: 0.0 for k in ("hits@1", "hit", "f1", "precision", "recall")}
    with pytest.raises(ConfigError, match="match rule"):
        score_answers(["x"], ["x"], "fuzzy")  # type: ignore[arg-type]


def test_scores_word_boundary_containment():
    # the papers' containment rule, on word boundaries; a line naming two golds counts once for precision
    s = score_answers(
        ["It was Ron Howard and Penny Marshall", "Big"], ["Ron Howard", "Penny Marshall"], "contains"
    )
    assert s["hits@1"] == 1.0 and s["recall"] == 1.0 and s["precision"] == 0.5
    assert score_answers(["Ron"], ["Ron Howard"], "contains")["hit"] == 0.0
    assert score_answers(["a bus"], ["US"], "contains")["hit"] == 0.0


def test_scores_with_aliases_count_gold_answers_once():
    s = score_aliased(["UK", "France"], [["united_kingdom", "UK"], ["Germany"]])
    assert s["hits@1"] == 1.0 and s["recall"] == 0.5 and s["precision"] == 0.5


def test_summarize_keys_and_errors():
    ok = {
        "scores": score_answers(["x"], ["x"]),
        "error": None,
        "paths_total": 2,
        "paths_faithful": 1,
        "usage": {"llm_calls": 2, "input_tokens": 10, "output_tokens": 4, "kg_calls": 3},
        "seconds": 1.5,
    }
    bad = {
        "scores": score_answers([], ["x"]),
        "error": "ValueError: boom",
        "paths_total": 0,
        "paths_faithful": 0,
        "usage": {},
        "seconds": None,
    }
    s = summarize([ok, bad], method="m", dataset="d")
    assert tuple(s) == SUMMARY_KEYS
    assert s["n"] == 2 and s["errors"] == 1 and s["hits@1"] == 0.5
    assert s["faithful_path_ratio"] == 0.5 and s["match"] == "exact"
    assert s["grounded_answer_ratio"] is None  # no record counted answers
    grounded = summarize(
        [dict(ok, answers_total=4, answers_grounded=3), bad], method="m", dataset="d", match="contains"
    )
    assert grounded["grounded_answer_ratio"] == 0.75 and grounded["match"] == "contains"
    assert s["avg_llm_calls"] == 2 and s["avg_seconds"] == 1.5
    nopaths = summarize([dict(ok, paths_total=0, paths_faithful=0)], method="m", dataset="d")
    assert nopaths["faithful_path_ratio"] is None


# --------------------------------------------------------------------------- questions
def test_questions_file_metaqa_and_jsonl(tmp_path):
    f = tmp_path / "q.txt"
    f.write_text("who directed [Splash]\tRon Howard\nwhat films did [Tom Hanks] act in\tBig|Splash\n")
    ds = load_questions_file(f)
    assert [q.topic_entities for q in ds] == [["Splash"], ["Tom Hanks"]] and ds.kg == "metaqa"
    assert ds[1].answers == ["Big", "Splash"]
    j = tmp_path / "q.jsonl"
    j.write_text(json.dumps({"id": "a", "question": "who?", "answers": ["X"]}) + "\n")
    with pytest.raises(ConfigError, match="--kg"):
        load_questions_file(j)
    ds = load_questions_file(j, "kb.tsv")
    assert ds[0].id == "a" and ds.kg == "kb.tsv"
    bad = tmp_path / "bad.txt"
    bad.write_text("ok [A]\tB\nno tab here\n")
    with pytest.raises(DataFormatError) as err:
        load_questions_file(bad)
    assert err.value.line == 2


def test_gold_sets_pathquestion_aliases_are_one_answer():
    (q,) = get_dataset("pathquestion-pq-2h", "validation", limit=1).questions
    assert gold_sets(q) == [q.answers]
    s = score_aliased([q.answers[-1]], gold_sets(q))
    assert s["recall"] == 1.0 and s["hits@1"] == 1.0
    m = Question("m", "q [a]", ["x", "y"], ["a"])
    assert gold_sets(m) == [["x"], ["y"]]


# --------------------------------------------------------------------------- runner
@pytest.fixture
def kg():
    return MemoryKG(CONTRACT_TRIPLES)


QUESTIONS = [
    Question("q1", "who directed [Splash]", ["Ron Howard"], ["Splash"]),
    Question("q2", "who directed [Big]", ["Penny Marshall"], ["Big"]),
    Question("q3", "who directed [Cast Away]", ["Robert Zemeckis"], ["Cast Away"]),
]
SCRIPT = {
    "[Splash]": "Answer: Ron Howard",
    "[Big]": "Answer: Tom Hanks",
    "[Cast Away]": "Answer: Robert Zemeckis",
}


def _run(qs, out, llm, kg, **kw):
    return asyncio.run(
        run_eval(
            qs,
            out,
            method="graph_rag",
            dataset="toy",
            progress=False,
            kg_for=lambda q: q.kg() if q.kg else kg,
            build_graph=lambda g: create_graph_rag_graph(g, llm=llm),
            **kw,
        )
    )


def test_run_eval_writes_files_and_metrics(tmp_path, kg):
    llm = FakeChat(rules=SCRIPT)
    s = _run(QUESTIONS, tmp_path, llm, kg, concurrency=2)
    assert tuple(s) == SUMMARY_KEYS
    assert s["n"] == 3 and s["errors"] == 0
    assert s["hits@1"] == pytest.approx(2 / 3)
    assert s["faithful_path_ratio"] == 1.0  # graph_rag paths are verified; the runner re-checks them
    assert s["avg_llm_calls"] == 1.0 and s["avg_kg_calls"] >= 1 and s["avg_input_tokens"] > 0
    for name in ("predictions.jsonl", "summary.json", "report.md", "metrics.png", "run.json"):
        assert (tmp_path / name).is_file()
    recs = read_predictions(tmp_path / "predictions.jsonl")
    assert recs["q1"]["paths"] == ["Splash -> directed_by -> Ron Howard"]
    assert json.loads((tmp_path / "summary.json").read_text()) == s


def test_run_eval_resumes_and_retries_failed(tmp_path, kg):
    llm = FakeChat(rules={**SCRIPT, "[Big]": ValueError("scripted failure")})
    s = _run(QUESTIONS[:2], tmp_path, llm, kg)
    assert s["n"] == 2 and s["errors"] == 1 and s["hits@1"] == 0.5  # the failed one counts as wrong
    assert "scripted failure" in (tmp_path / "report.md").read_text()
    # rerun over all three: q1 is skipped, q2 (failed) is retried, q3 is new
    llm2 = FakeChat(rules=SCRIPT)
    s2 = _run(QUESTIONS, tmp_path, llm2, kg)
    assert len(llm2.prompts) == 2 and not any("[Splash]" in c for c in llm2.prompts)
    assert s2["n"] == 3 and s2["errors"] == 0
    lines = (tmp_path / "predictions.jsonl").read_text().splitlines()
    assert len(lines) == 4  # appended, never rewritten; the later record of q2 wins


def test_run_eval_repairs_a_cut_line_and_refuses_another_run(tmp_path, kg):
    llm = FakeChat(rules=SCRIPT)
    _run(QUESTIONS[:1], tmp_path, llm, kg)
    with open(tmp_path / "predictions.jsonl", "a") as fh:
        fh.write('{"id": "q2", "predic')  # an interrupted write
    s = _run(QUESTIONS[:2], tmp_path, llm, kg)
    assert s["n"] == 2
    with pytest.raises(ConfigError, match="another run"):
        asyncio.run(
            run_eval(
                QUESTIONS,
                tmp_path,
                method="llm_only",
                dataset="toy",
                kg_for=lambda q: kg,
                progress=False,
                build_graph=lambda g: create_llm_only_graph(g, llm=llm),
            )
        )


def test_run_level_error_stops_the_run(tmp_path, kg):
    llm = FakeChat(
        rules={"[Big]": ModelError("model server http://127.0.0.1:9/v1 unreachable")},
        default="Answer: Ron Howard",
    )
    with pytest.raises(ModelError, match=r"127\.0\.0\.1:9"):
        _run(QUESTIONS[:2], tmp_path, llm, kg)
    kept = read_predictions(tmp_path / "predictions.jsonl")
    assert set(kept) <= {"q1"} and "q2" not in kept


def test_per_question_kg(tmp_path):
    qa = Question("a", "who made [X]", ["Y"], ["X"], kg=SubgraphFactory((("X", "made_by", "Y"),)))
    qb = Question("b", "who made [P]", ["Q"], ["P"], kg=SubgraphFactory((("P", "made_by", "Q"),)))
    llm = FakeChat(rules={"[X]": "Answer: Y", "[P]": "Answer: Q"})
    s = _run([qa, qb], tmp_path, llm, None)
    assert s["hits@1"] == 1.0 and s["faithful_path_ratio"] == 1.0


def test_compare_runs(tmp_path, kg):
    llm = FakeChat(rules=SCRIPT)
    _run(QUESTIONS, tmp_path / "a", llm, kg)
    asyncio.run(
        run_eval(
            QUESTIONS,
            tmp_path / "b",
            method="llm_only",
            dataset="toy",
            kg_for=lambda q: kg,
            progress=False,
            build_graph=lambda g: create_llm_only_graph(g, llm=llm),
        )
    )
    table, chart = compare_runs([tmp_path / "a", tmp_path / "b"], tmp_path / "cmp.png")
    assert "graph_rag" in table and "llm_only" in table and chart.stat().st_size > 0
    with pytest.raises(ConfigError, match=r"summary\.json"):
        compare_runs([tmp_path / "nothing"], tmp_path / "x.png")


class _DownFor:
    """A KG whose endpoint 'fails' (EndpointError) for neighbour reads of some entities."""

    def __init__(self, kg, down):
        self.inner, self.down = kg, set(down)

    def __getattr__(self, item):
        return getattr(self.inner, item)

    def neighbors_many(self, entities, relation=None, direction="out", limit=None):
        from kg_agents.errors import EndpointError

        if self.down & set(entities):
            raise EndpointError("http://kg.invalid/sparql", "HTTP 503 Service Unavailable (3 attempts)")
        return self.inner.neighbors_many(entities, relation, direction, limit)


def test_endpoint_failure_in_a_graph_is_an_error_and_the_run_goes_on(tmp_path, kg):
    """The graph ends the failing question with the error in its trace; the runner counts it, goes on."""
    llm = FakeChat(rules=SCRIPT)
    s = _run(QUESTIONS, tmp_path, llm, _DownFor(kg, {"Big"}))
    assert s["n"] == 3 and s["errors"] == 1 and s["hits@1"] == pytest.approx(2 / 3)
    recs = read_predictions(tmp_path / "predictions.jsonl")
    assert "http://kg.invalid/sparql" in recs["q2"]["error"] and recs["q2"]["predictions"] == []
    assert recs["q1"]["error"] is None and recs["q3"]["error"] is None
    assert not any("[Big]" in c for c in llm.prompts)  # the failed question never reached the model


def test_endpoint_down_for_every_question_stops_the_run(tmp_path, kg):
    from kg_agents.errors import EndpointError

    llm = FakeChat(rules=SCRIPT)
    down = _DownFor(kg, {"Splash", "Big", "Cast Away"})
    with pytest.raises(EndpointError, match=r"2 questions in a row"):
        _run(QUESTIONS, tmp_path, llm, down, max_endpoint_failures=2)
    assert len(read_predictions(tmp_path / "predictions.jsonl")) == 2
    with pytest.raises(ConfigError):
        _run(QUESTIONS, tmp_path, llm, kg, max_endpoint_failures=0)


def test_run_json_records_the_model_used_and_a_rerun_with_another_is_refused(tmp_path):
    from kg_agents import __version__
    from kg_agents.eval.runner import _RUN_KEYS, check_run_info

    used = "SmolLM2-135M-Instruct+metaqa"
    info = {"method": "graph_rag", "dataset": "d", "model": "local", "model_used": used}
    check_run_info(tmp_path, info)
    saved = json.loads((tmp_path / "run.json").read_text(encoding="utf-8"))
    assert saved["model_used"] == "SmolLM2-135M-Instruct+metaqa" and saved["version"] == __version__
    check_run_info(tmp_path, info)  # the same run resumes
    with pytest.raises(ConfigError, match="model_used"):
        check_run_info(tmp_path, {**info, "model_used": "smollm2-135m-instruct"})  # --set adapter=none
    older = tmp_path / "older"  # a run written before run.json recorded the model used still resumes
    older.mkdir()
    (older / "run.json").write_text(json.dumps({k: info.get(k) for k in _RUN_KEYS}), encoding="utf-8")
    check_run_info(older, info)
