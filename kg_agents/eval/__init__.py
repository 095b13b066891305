"""Evaluation: datasets and question files, pure metric functions, the async runner and reports."""

from __future__ import annotations

from kg_agents.eval.metrics import normalize_answer, score_aliased, score_answers, summarize
from kg_agents.eval.questions import DATASETS, EvalQuestion, load_dataset, load_questions_file
from kg_agents.eval.runner import compare_runs, run_eval

__all__ = [
    "DATASETS",
    "EvalQuestion",
    "compare_runs",
    "load_dataset",
    "load_questions_file",
    "normalize_answer",
    "run_eval",
    "score_aliased",
    "score_answers",
    "summarize",
]
