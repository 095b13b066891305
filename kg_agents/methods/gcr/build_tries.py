"""``kg-agents build-tries``: KG-Tries built offline for a file of entities or a dataset's topic entities."""

from __future__ import annotations

import time
from pathlib import Path as FsPath
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.eval.datasets import get_dataset
from kg_agents.kg import open_kg
from kg_agents.llm.local_model import load_local_tokenizer
from kg_agents.methods.gcr import trie

__all__ = ["build_tries_command"]


def build_tries_command(
    *,
    kg: str = "metaqa",
    entities: str | None = None,
    dataset: str | None = None,
    split: str = "train",
    limit: int | None = None,
    out: str = "tries",
    max_hops: int = 2,
    fanout_limit: int = 500,
    max_paths: int = 20_000,
    overwrite: bool = False,
    prepare_labels: bool = False,
) -> dict[str, Any]:
    """``kg-agents build-tries``: offline KG-Tries for a file of entity ids or a dataset's topic entities.

    Args:
        kg: an ``open_kg`` spec.
        entities: a text file with one entity id per line.
        dataset: a dataset name (``get_dataset``) whose topic entities get tries (instead of ``entities``).
        split, limit: the dataset's split and size.
        out: the trie directory.
        max_hops, fanout_limit, max_paths, overwrite: as :func:`~kg_agents.methods.gcr.trie.build_tries`.
        prepare_labels: first tokenise every id and relation of the KG once
            (:func:`~kg_agents.methods.gcr.trie.prepare_labels`; its seconds are ``prepare_seconds``).

    Returns:
        The :func:`~kg_agents.methods.gcr.trie.build_tries` summary with per-entity
        ``seconds``/``bytes`` replaced by their median and p95.
    """
    if (entities is None) == (dataset is None):
        raise ConfigError("build-tries needs exactly one of entities=FILE or dataset=NAME")
    if entities is not None:
        names = [
            line.strip() for line in FsPath(entities).read_text(encoding="utf-8").splitlines() if line.strip()
        ]
    else:
        names = [e for q in get_dataset(str(dataset), split, limit=limit) for e in (q.topic_entities or [])]
    tok = load_local_tokenizer()
    graph = open_kg(kg)
    t0 = time.perf_counter()
    prepared = trie.prepare_labels(graph, tok) if prepare_labels else 0
    prepare_seconds = time.perf_counter() - t0
    summary = trie.build_tries(
        graph,
        names,
        tok,
        out,
        max_hops=max_hops,
        fanout_limit=fanout_limit,
        max_paths=max_paths,
        overwrite=overwrite,
    )
    if prepare_labels:
        summary.update(prepared_labels=prepared, prepare_seconds=prepare_seconds)
    for key in ("seconds", "bytes"):
        vals = sorted(summary.pop(key))
        summary[f"{key}_median"] = vals[len(vals) // 2] if vals else None
        summary[f"{key}_p95"] = vals[min(len(vals) - 1, round(0.95 * (len(vals) - 1)))] if vals else None
    for key in ("built", "skipped_existing", "unknown", "truncated"):
        summary[f"n_{key}"] = len(summary[key])
    return summary
