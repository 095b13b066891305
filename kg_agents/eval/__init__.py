"""Evaluation: datasets (and, later, metrics, the async runner and reports)."""

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

__all__ = [
    "DATASETS",
    "Dataset",
    "Question",
    "get_dataset",
    "load_jsonl_questions",
    "load_metaqa",
    "load_metaqa_file",
    "load_pathquestion",
    "load_pathquestion_file",
    "load_webqsp_sample",
    "split_indices",
]
