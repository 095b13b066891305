"""Per-question figures of a run (``scores.jsonl``): what a report needs to summarise any subset of its
questions, without the model's outputs."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from kg_agents.eval.metrics import METRIC_KEYS
from kg_agents.files import atomic_write

__all__ = ["SCORES", "score_record", "write_scores"]

SCORES = "scores.jsonl"
_USAGE_KEYS = ("llm_calls", "input_tokens", "output_tokens", "kg_calls")
_COUNT_KEYS = ("paths_total", "paths_faithful", "answers_total", "answers_grounded")


def score_record(rec: Mapping[str, Any]) -> dict[str, Any]:
    """What ``scores.jsonl`` keeps of one ``predictions.jsonl`` record: enough to summarise any subset."""
    usage = rec.get("usage") or {}
    return {
        "id": rec["id"],
        "error": bool(rec.get("error")),
        "scores": {k: float((rec.get("scores") or {}).get(k, 0.0)) for k in METRIC_KEYS},
        **{k: int(rec.get(k) or 0) for k in _COUNT_KEYS},
        "usage": {k: usage[k] for k in _USAGE_KEYS if k in usage},
        "seconds": rec.get("seconds"),
    }


def write_scores(out_dir: str | Path, records: Iterable[Mapping[str, Any]]) -> Path:
    """Write ``scores.jsonl`` (one :func:`score_record` a line, in the records' order) into ``out_dir``."""
    path = Path(out_dir) / SCORES
    lines = (json.dumps(score_record(r), sort_keys=True, separators=(",", ":")) for r in records)
    atomic_write(path, "".join(line + "\n" for line in lines))
    return path
