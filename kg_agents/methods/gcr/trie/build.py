"""Building KG-Tries: on demand for a question's entities (:func:`build_trie`), and offline, one file
per entity in a directory with its ``index.json`` (:func:`build_tries`, ``kg-agents build-tries``)."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path as FsPath
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.files import atomic_write, remove_temporaries
from kg_agents.kg.base import KnowledgeGraph
from kg_agents.kg.paths import enumerate_paths
from kg_agents.methods.gcr.trie.tokens import path_tokenizer
from kg_agents.methods.gcr.trie.tree import FORMAT_VERSION, KGTrie, TrieStats, tokenizer_signature

__all__ = ["INDEX_COST_RATIO", "build_trie", "build_tries", "entity_file_name"]

#: While :func:`build_tries` builds, it rewrites ``index.json`` once the time since the last rewrite is
#: this many times what that rewrite took: rewriting costs at most about 1/INDEX_COST_RATIO of the build.
INDEX_COST_RATIO = 10.0


def build_trie(
    kg: KnowledgeGraph,
    entities: Sequence[str],
    tokenizer: Any,
    *,
    max_hops: int = 2,
    fanout_limit: int | None = 500,
    max_paths: int | None = 20_000,
    tokenizer_sig: str | None = None,
    min_hops: int = 1,
) -> KGTrie:
    """Build the KG-Trie of all paths of ``min_hops``..``max_hops`` hops from ``entities`` (on demand).

    Both directions are followed (a backwards hop is written ``~relation``). ``max_paths`` bounds the
    paths per call and ``fanout_limit`` the neighbours per entity and hop; the trie's ``stats`` say
    when either was hit.

    Args:
        kg: the knowledge graph.
        entities: start entity ids.
        tokenizer: the decoder's (Hugging Face) tokenizer.
        max_hops: L (paper default 2).
        fanout_limit: neighbour triples per entity and hop (None: all).
        max_paths: paths per build (None: all).
        tokenizer_sig: :func:`tokenizer_signature` of ``tokenizer`` if already known.
        min_hops: the shortest path kept (``min_hops=max_hops``: paths of exactly L hops, so that a
            decoded path cannot end before them).

    Example:
        >>> trie = build_trie(kg, ["Splash"], tok, max_hops=1)     # doctest: +SKIP
        >>> trie.texts[:1]                                         # doctest: +SKIP
        ['Splash -> directed_by -> Ron Howard']
    """
    if max_hops < 1:
        raise ValueError(f"max_hops must be >= 1, got {max_hops}")
    if not 1 <= min_hops <= max_hops:
        raise ValueError(f"min_hops must be in 1..max_hops={max_hops}, got {min_hops}")
    t0 = time.perf_counter()
    # The build allocates many small objects and makes no reference cycles: pausing the cyclic
    # collector spares full collections of the whole heap in the middle of it (the p95 of the build).
    paused = gc.isenabled()
    gc.disable()
    try:
        res = enumerate_paths(
            kg, list(entities), max_hops, direction="both", fanout_limit=fanout_limit, max_paths=max_paths
        )
        sig = tokenizer_sig if tokenizer_sig is not None else tokenizer_signature(tokenizer)
        trie = KGTrie([], [], tokenizer_sig=sig)
        paths = res.paths if min_hops == 1 else [p for p in res.paths if len(p) >= min_hops]
        path_tokenizer(tokenizer).fill(trie, paths)
    finally:
        if paused:
            gc.enable()
    trie.stats = TrieStats(
        entities=list(entities),
        max_hops=max_hops,
        fanout_truncated=list(res.fanout_truncated),
        path_limit_hit=res.path_limit_hit,
    )
    trie.stats.paths = len(trie)
    trie.stats.seconds = time.perf_counter() - t0
    return trie


def entity_file_name(entity: str) -> str:
    """The file name of an entity's trie in an offline trie directory."""
    return hashlib.sha1(entity.encode()).hexdigest()[:24] + ".npz"


def build_tries(
    kg: KnowledgeGraph,
    entities: Iterable[str],
    tokenizer: Any,
    directory: str | os.PathLike[str],
    *,
    max_hops: int = 2,
    fanout_limit: int | None = 500,
    max_paths: int | None = 20_000,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Build and persist one KG-Trie per entity (offline construction, ``kg-agents build-tries``).

    Writes ``<sha1>.npz`` per entity and ``index.json`` (entity -> file, settings, KG fingerprint)
    into ``directory``. Unknown entities are skipped and listed in the summary.

    Crash-safe: each file is written to a temporary name and renamed, and the index names a file only
    once it is whole; the index is rewritten as often as costs at most about 1/:data:`INDEX_COST_RATIO`
    of the build, and when the build ends for whatever reason. So a build that was killed resumes (a
    rerun skips what the index names, which lags the files by at most a few tries) and a half-written
    trie file is never read.

    Args:
        kg: the knowledge graph.
        entities: entity ids to build tries for.
        tokenizer: the decoder's tokenizer.
        directory: where to write.
        max_hops, fanout_limit, max_paths: as :func:`build_trie`.
        overwrite: rebuild entities that already have a file.

    Returns:
        A summary: ``built``, ``skipped_existing``, ``unknown``, ``truncated`` (entity ids),
        ``seconds`` (per-entity build times), ``bytes`` (per-entity file sizes).
    """
    out = FsPath(directory)
    out.mkdir(parents=True, exist_ok=True)
    index_file = out / "index.json"
    sig = tokenizer_signature(tokenizer)
    settings = {
        "max_hops": max_hops,
        "fanout_limit": fanout_limit,
        "max_paths": max_paths,
        "tokenizer_sig": sig,
        "kg": kg.fingerprint(),
        "format": FORMAT_VERSION,
    }
    index: dict[str, Any] = {"settings": settings, "entities": {}}
    if index_file.is_file():
        old = json.loads(index_file.read_text())
        if old.get("settings") == settings:
            index = old
        elif not overwrite:
            raise ConfigError(
                f"{out} holds tries built with other settings {old.get('settings')}; "
                "use another directory or overwrite=True"
            )
    remove_temporaries(out, "*.npz")  # what a killed build left half-written
    remove_temporaries(out, "index.json")
    # The index names only finished files built with its settings: written before any file is
    # replaced (so an index of other settings never names a new file), then as often as costs at most
    # about 1/INDEX_COST_RATIO of the build (after nearly every trie while the index is small), and at
    # the end, also when the build stops early (Ctrl-C).
    next_write = 0.0

    def write_index() -> None:
        nonlocal next_write
        t0 = time.monotonic()
        atomic_write(index_file, json.dumps(index))
        t1 = time.monotonic()
        next_write = t1 + INDEX_COST_RATIO * (t1 - t0)

    write_index()
    summary: dict[str, Any] = {
        "built": [],
        "skipped_existing": [],
        "unknown": [],
        "truncated": [],
        "seconds": [],
        "bytes": [],
    }
    try:
        for e in dict.fromkeys(entities):
            if not kg.has_entity(e):
                summary["unknown"].append(e)
                continue
            name = entity_file_name(e)
            if not overwrite and index["entities"].get(e) == name and (out / name).is_file():
                summary["skipped_existing"].append(e)
                continue
            trie = build_trie(
                kg,
                [e],
                tokenizer,
                max_hops=max_hops,
                fanout_limit=fanout_limit,
                max_paths=max_paths,
                tokenizer_sig=sig,
            )
            trie.save(out / name)
            index["entities"][e] = name
            summary["built"].append(e)
            summary["seconds"].append(trie.stats.seconds)
            summary["bytes"].append((out / name).stat().st_size)
            if trie.stats.truncated:
                summary["truncated"].append(e)
            if time.monotonic() >= next_write:
                write_index()
    finally:
        write_index()
        # An interrupt can land while a write has its temporary file open; the final rewrite above
        # has the whole index, and a half-written trie is not in it, so any such leftover goes.
        remove_temporaries(out, "index.json")
        remove_temporaries(out, "*.npz")
    return summary
