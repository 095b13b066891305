"""The dynamic trie cache of figure 6: per-entity KG-Tries kept in memory (LRU), read from an offline
directory, else built on demand."""

from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from pathlib import Path as FsPath
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.kg.base import KnowledgeGraph
from kg_agents.methods.gcr.trie.build import build_trie
from kg_agents.methods.gcr.trie.tree import FORMAT_VERSION, KGTrie, tokenizer_signature

__all__ = ["TrieCache"]


class TrieCache:
    """Per-entity KG-Tries for questions: LRU in memory, offline files, else built on demand (fig. 6).

    Args:
        kg: the knowledge graph.
        tokenizer: the decoder's tokenizer.
        max_hops, fanout_limit, max_paths: as :func:`build_trie`, per entity.
        capacity: entities kept in memory (least recently used dropped first).
        directory: an offline trie directory written by :func:`build_tries` (optional).

    Example:
        >>> cache = TrieCache(kg, tok, capacity=1000)               # doctest: +SKIP
        >>> trie = cache.get(["Tom Hanks", "Splash"])               # doctest: +SKIP
        >>> cache.info()                                            # doctest: +SKIP
        {'hits': 0, 'misses': 2, 'disk': 0, 'size': 2, 'capacity': 1000}
    """

    def __init__(
        self,
        kg: KnowledgeGraph,
        tokenizer: Any,
        *,
        max_hops: int = 2,
        fanout_limit: int | None = 500,
        max_paths: int | None = 20_000,
        capacity: int = 1024,
        directory: str | os.PathLike[str] | None = None,
    ) -> None:
        if capacity < 0:
            raise ValueError(f"capacity must be >= 0, got {capacity}")
        self.kg = kg
        self.tokenizer = tokenizer
        self.max_hops = max_hops
        self.fanout_limit = fanout_limit
        self.max_paths = max_paths
        self.capacity = capacity
        self.sig = tokenizer_signature(tokenizer)
        # (entity, L), or (entity, L, shortest) for a trie without the shorter paths
        self._lru: OrderedDict[tuple[Any, ...], KGTrie] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = self.misses = self.disk = 0
        self.directory = FsPath(directory) if directory is not None else None
        self._disk_index: dict[str, str] = {}
        if self.directory is not None:
            index_file = self.directory / "index.json"
            if not index_file.is_file():
                raise ConfigError(f"{self.directory} is not a KG-Trie directory (no index.json)")
            idx = json.loads(index_file.read_text())
            settings = idx.get("settings", {})
            if settings.get("format", 1) != FORMAT_VERSION:
                raise ConfigError(
                    f"the tries in {self.directory} are KG-Trie format {settings.get('format', 1)}, "
                    f"this version reads {FORMAT_VERSION}; rebuild them (kg-agents build-tries --overwrite)"
                )
            if settings.get("tokenizer_sig") != self.sig:
                raise ConfigError(f"the tries in {self.directory} were built with a different tokenizer")
            if settings.get("kg") != kg.fingerprint():
                raise ConfigError(f"the tries in {self.directory} were built from a different KG")
            if settings.get("max_hops") == max_hops:
                self._disk_index = dict(idx.get("entities", {}))

    def info(self) -> dict[str, int]:
        """Cache counters: memory ``hits``, ``misses`` (built on demand), ``disk`` loads, ``size``."""
        return {
            "hits": self.hits,
            "misses": self.misses,
            "disk": self.disk,
            "size": len(self._lru),
            "capacity": self.capacity,
        }

    def entity_trie(self, entity: str, max_hops: int | None = None, min_hops: int = 1) -> KGTrie:
        """The trie of one entity's paths of ``min_hops``..``max_hops`` hops (from memory, disk, or built
        now)."""
        hops = self.max_hops if max_hops is None else max_hops
        key: tuple[Any, ...] = (entity, hops) if min_hops == 1 else (entity, hops, min_hops)
        with self._lock:
            trie = self._lru.get(key)
            if trie is not None:
                self._lru.move_to_end(key)
                self.hits += 1
                return trie
        name = self._disk_index.get(entity) if hops == self.max_hops and min_hops == 1 else None
        if name is not None and self.directory is not None and (self.directory / name).is_file():
            trie = KGTrie.load(self.directory / name)
            self.disk += 1
        else:
            trie = build_trie(
                self.kg,
                [entity],
                self.tokenizer,
                max_hops=hops,
                fanout_limit=self.fanout_limit,
                max_paths=self.max_paths,
                tokenizer_sig=self.sig,
                min_hops=min_hops,
            )
            self.misses += 1
        with self._lock:
            if self.capacity:
                self._lru[key] = trie
                self._lru.move_to_end(key)
                while len(self._lru) > self.capacity:
                    self._lru.popitem(last=False)
        return trie

    def get(self, entities: Sequence[str], max_hops: int | None = None, min_hops: int = 1) -> KGTrie:
        """The question's trie: the union of its topic entities' tries (paths of ``min_hops``..``max_hops``
        hops)."""
        tries = [self.entity_trie(e, max_hops, min_hops) for e in dict.fromkeys(entities)]
        return KGTrie.merge(tries or [KGTrie([], [], tokenizer_sig=self.sig)])

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(list(self._lru))
