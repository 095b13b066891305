"""Evaluation: datasets, pure metric functions, the async runner and reports."""

from __future__ import annotations

from kg_agents.eval.datasets import (
    DATASETS,
    Dataset,
    Question,
    get_dataset,
    load_jsonl_questions,
    load_metaqa,
    load_metaqa_file,
    load_pathquestion,
    load_pathquestion_file,
    load_webqsp_sample,
    split_indices,
)
from kg_agents.eval.metrics import normalize_answer, score_answers, summarize
from kg_agents.eval.runner import compare_runs, load_questions_file, run_eval

__all__ = [
    "DATASETS",
    "Dataset",
    "Question",
    "compare_runs",
    "get_dataset",
    "load_jsonl_questions",
    "load_metaqa",
    "load_metaqa_file",
    "load_pathquestion",
    "load_pathquestion_file",
    "load_questions_file",
    "load_webqsp_sample",
    "normalize_answer",
    "run_eval",
    "score_answers",
    "split_indices",
    "summarize",
]
