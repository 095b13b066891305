"""A small thread-safe LRU map: the SPARQL-backed KGs' query cache (:mod:`kg_agents.kg._query`) and the
embedded model's prompt prefix cache (:class:`~kg_agents.llm.prefix_cache.PrefixCache`) keep their
entries in one.

Example:
    >>> lru = LRU(2)
    >>> for key, value in [("a", 1), ("b", 2), ("c", 3)]:
    ...     lru.put(key, value)
    >>> lru.get("a") is MISSING, lru.get("c"), len(lru), (lru.hits, lru.misses)
    (True, 3, 2, (1, 1))
    >>> "b" in lru, "a" in lru, (lru.hits, lru.misses)  # not counted as lookups
    (True, False, (1, 1))
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, Final, Generic, TypeVar

__all__ = ["LRU", "MISSING"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: What :meth:`LRU.get` returns for a key it does not hold.
MISSING: Final = object()


class LRU(Generic[K, V]):
    """A bounded, thread-safe least-recently-used map (``maxsize=0`` keeps nothing).

    A subclass may read and reorder ``_data`` (oldest first) while it holds ``_lock``.

    Attributes:
        maxsize: the most entries kept; the least recently used one goes first.
        hits, misses: lookups that found an entry, and those that did not.
    """

    def __init__(self, maxsize: int) -> None:
        self.maxsize = int(maxsize)
        self.hits = 0
        self.misses = 0
        self._data: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def __contains__(self, key: object) -> bool:
        """Whether ``key`` is held; neither counted as a lookup nor made the most recently used."""
        with self._lock:
            return key in self._data

    def get(self, key: K) -> V | Any:
        """The value stored for ``key`` (now the most recently used), else :data:`MISSING`."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                self.hits += 1
                return self._data[key]
            self.misses += 1
            return MISSING

    def put(self, key: K, value: V) -> None:
        """Store ``value`` for ``key`` as the most recently used, dropping the least recently used
        entries beyond ``maxsize``."""
        if self.maxsize <= 0:
            return
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry (the counters stay)."""
        with self._lock:
            self._data.clear()
