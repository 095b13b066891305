"""Evaluation metrics as pure functions.

Answer normalisation (one procedure, used everywhere): :func:`normalize_answer` lowercases, turns
``_`` into a space (PathQuestion and Freebase ids write ``united_kingdom``), deletes punctuation,
removes the articles *a*, *an*, *the* and collapses whitespace: the ``normalize`` of the RoG/GCR
evaluation code (itself SQuAD's), plus the underscore rule.

Two matching rules (``match=``):

- ``exact`` (the default): a prediction matches a gold answer when both are equal after
  normalisation (aliases listed as separate golds each count);
- ``contains``: the papers' scripts (RoG/GCR ``match``): the normalised gold answer occurs in the
  normalised prediction, on word boundaries (so "The Son's Room was directed by Nanni Moretti"
  matches "The Son's Room", and "us" does not match "bus"). A prediction that names several gold
  answers matches each of them, but counts once for precision. Use it only to compare with papers:
  it credits sentences that echo the question's entity.

Metrics per question:

- ``hits@1``: the first prediction matches a gold answer (0/1);
- ``hit``: any prediction matches a gold answer (0/1);
- ``precision``: share of (distinct, normalised) predictions that match a gold answer;
- ``recall``: share of (distinct) gold answers matched by some prediction;
- ``f1``: their harmonic mean (0 when both are 0). No prediction: every metric is 0.

Example:
    >>> score_answers(["Ron Howard", "Tom Hanks"], ["ron howard"])["f1"]
    0.6666666666666666
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from kg_agents.errors import ConfigError

__all__ = [
    "MATCH_RULES",
    "METRIC_KEYS",
    "SUMMARY_KEYS",
    "MatchRule",
    "answer_matches",
    "faithful_ratio",
    "mean",
    "normalize_answer",
    "per_kind",
    "score_aliased",
    "score_answers",
    "summarize",
]

_PUNCT = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")

METRIC_KEYS = ("hits@1", "hit", "f1", "precision", "recall")

MatchRule = Literal["exact", "contains"]
MATCH_RULES: tuple[MatchRule, ...] = ("exact", "contains")


def _check_rule(match: str) -> MatchRule:
    if match not in MATCH_RULES:
        raise ConfigError(f"unknown match rule {match!r}; valid: {', '.join(MATCH_RULES)}")
    return match  # type: ignore[return-value]


def normalize_answer(text: str) -> str:
    """Normalise an answer for matching (see the module docstring).

    Example:
        >>> normalize_answer("The  United_Kingdom!")
        'united kingdom'
    """
    s = str(text).lower().replace("_", " ")
    s = s.translate(_PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _distinct(items: Iterable[str]) -> list[str]:
    return [s for s in dict.fromkeys(normalize_answer(x) for x in items) if s]


def answer_matches(prediction: str, gold: str, match: MatchRule = "contains") -> bool:
    """True when ``prediction`` matches ``gold`` under the rule (normalised; see the module docstring).

    The default here is ``contains``: methods use it to find which KG labels a free-text reply names.

    Example:
        >>> answer_matches("The answer is Ron Howard.", "ron howard"), answer_matches("Ron", "Ron Howard")
        (True, False)
        >>> answer_matches("The answer is Ron Howard.", "ron howard", "exact")
        False
    """
    g, p = normalize_answer(gold), normalize_answer(prediction)
    if _check_rule(match) == "exact":
        return bool(g) and g == p
    return bool(g) and f" {g} " in f" {p} "


def score_answers(
    predictions: Sequence[str], golds: Sequence[str], match: MatchRule = "exact"
) -> dict[str, float]:
    """Hits@1, Hit, precision, recall and F1 of one question's ranked predictions.

    Args:
        predictions: the method's answers, best first.
        golds: the gold answers (aliases may be listed as separate golds; see :func:`score_aliased`).

        match: ``exact`` (default) or ``contains``.

    Example:
        >>> s = score_answers(["Big", "Splash"], ["splash"])
        >>> s["hits@1"], s["hit"]
        (0.0, 1.0)
        >>> score_answers(["Splash was directed by Ron Howard"], ["Ron Howard"])["hits@1"]
        0.0
        >>> score_answers(["Splash was directed by Ron Howard"], ["Ron Howard"], "contains")["hits@1"]
        1.0
    """
    return score_aliased(predictions, [[g] for g in golds], match)


def score_aliased(
    predictions: Sequence[str], gold_sets: Sequence[Sequence[str]], match: MatchRule = "exact"
) -> dict[str, float]:
    """Like :func:`score_answers`, with each gold answer given as a list of aliases.

    A prediction matches a gold answer when it matches any of its aliases under ``match``; recall
    counts gold answers, not aliases.

    Raises:
        ConfigError: an unknown match rule.
    """
    exact = _check_rule(match) == "exact"
    preds = _distinct(predictions)
    golds = list(dict.fromkeys(frozenset(_distinct(aliases)) for aliases in gold_sets))
    golds = [g for g in golds if g]
    if not preds or not golds:
        return {k: 0.0 for k in METRIC_KEYS}

    def hit(p: str, aliases: frozenset[str]) -> bool:
        if exact:
            return p in aliases
        return any(f" {a} " in f" {p} " for a in aliases)

    pred_ok = [any(hit(p, g) for g in golds) for p in preds]
    matched_preds = sum(pred_ok)
    matched_golds = sum(1 for g in golds if any(hit(p, g) for p in preds))
    precision = matched_preds / len(preds)
    recall = matched_golds / len(golds)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "hits@1": float(pred_ok[0]),
        "hit": float(matched_preds > 0),
        "f1": f1,
        "precision": precision,
        "recall": recall,
    }


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the non-None values; None when there are none."""
    vals = [float(v) for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


def faithful_ratio(faithful: int, total: int) -> float | None:
    """Share of returned paths found in the KG; None when no path was returned."""
    return faithful / total if total else None


SUMMARY_KEYS = (
    "method",
    "dataset",
    "n",
    "errors",
    "hits@1",
    "hit",
    "f1",
    "precision",
    "recall",
    "faithful_path_ratio",
    "grounded_answer_ratio",
    "supported_answer_ratio",
    "match",
    "avg_llm_calls",
    "avg_input_tokens",
    "avg_output_tokens",
    "avg_kg_calls",
    "avg_seconds",
)


def summarize(
    records: Sequence[Mapping[str, Any]], *, method: str, dataset: str, match: MatchRule = "exact"
) -> dict[str, Any]:
    """The ``summary.json`` of a run from its prediction records (lines of ``predictions.jsonl``).

    Each record has ``scores`` (the metric dict under ``match``, all 0 for a question that raised),
    ``error`` (None or the exception text), ``paths_total``/``paths_faithful``,
    ``answers_total``/``answers_grounded`` and ``usage``. Quality metrics average over all ``n``
    questions (a question that raised counts as wrong); usage averages over the questions that finished
    (None when none did); ``faithful_path_ratio`` pools all returned paths and
    ``grounded_answer_ratio`` all returned answers (the share that are the KG node ending a returned,
    verified path; None when no answer was returned).

    Example:
        >>> r = {"scores": score_answers(["x"], ["x"]), "error": None, "paths_total": 0,
        ...      "paths_faithful": 0, "usage": {"llm_calls": 1}, "seconds": 0.5}
        >>> summarize([r], method="m", dataset="d")["hits@1"]
        1.0
    """
    n = len(records)
    done = [r for r in records if not r.get("error")]
    out: dict[str, Any] = {"method": method, "dataset": dataset, "n": n, "errors": n - len(done)}
    for k in METRIC_KEYS:
        out[k] = (sum(float(r["scores"][k]) for r in records) / n) if n else None
    out["faithful_path_ratio"] = faithful_ratio(
        sum(int(r.get("paths_faithful", 0)) for r in records),
        sum(int(r.get("paths_total", 0)) for r in records),
    )
    out["grounded_answer_ratio"] = faithful_ratio(
        sum(int(r.get("answers_grounded", 0)) for r in records),
        sum(int(r.get("answers_total", 0)) for r in records),
    )
    out["supported_answer_ratio"] = _supported_ratio(records)
    out["match"] = _check_rule(match)
    for key, field in (
        ("avg_llm_calls", "llm_calls"),
        ("avg_input_tokens", "input_tokens"),
        ("avg_output_tokens", "output_tokens"),
        ("avg_kg_calls", "kg_calls"),
    ):
        out[key] = mean((r.get("usage") or {}).get(field, 0) for r in done) if done else None
    out["avg_seconds"] = mean(r.get("seconds") for r in done) if done else None
    assert tuple(out) == SUMMARY_KEYS
    kinds = per_kind(records)
    if kinds:
        out["per_kind"] = kinds
    return out


def _supported_ratio(records: Sequence[Mapping[str, Any]]) -> float | None:
    conj = [r for r in records if r.get("kind") == "conjunction" and "answers_supported" in r]
    return faithful_ratio(
        sum(int(r["answers_supported"]) for r in conj), sum(int(r.get("answers_total", 0)) for r in conj)
    )


def per_kind(records: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Figures per question kind (``chain``, ``conjunction``, ``constraint``: the records' ``kind``):
    ``n``, ``hits@1``, ``f1`` (over the kind's questions, a question that raised counting as wrong) and,
    for conjunctions, ``supported_answer_ratio``. Empty when no record has a kind.

    Example:
        >>> r = {"kind": "constraint", "scores": score_answers(["x"], ["x"])}
        >>> per_kind([r, {"kind": None, "scores": r["scores"]}])
        {'constraint': {'n': 1, 'hits@1': 1.0, 'f1': 1.0}}
    """
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        kind = r.get("kind")
        if isinstance(kind, str) and kind:
            groups.setdefault(kind, []).append(r)
    out: dict[str, dict[str, Any]] = {}
    for kind, rs in sorted(groups.items()):
        fig: dict[str, Any] = {"n": len(rs)}
        for k in ("hits@1", "f1"):
            fig[k] = sum(float(r["scores"][k]) for r in rs) / len(rs)
        if kind == "conjunction":
            fig["supported_answer_ratio"] = _supported_ratio(rs)
        out[kind] = fig
    return out
