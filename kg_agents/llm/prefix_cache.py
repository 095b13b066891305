"""Prompt prefix caching for the embedded model: a prompt's shared beginning is not run twice.

A method sends the same instructions and few-shot examples before every question, so consecutive prompts
to the local model share a long token prefix. :class:`PrefixCache` keeps the KV caches (transformers
``DynamicCache``) of the last few prompts; :func:`prefill` runs a new prompt on a private copy of the
entry that shares the longest token prefix with it, cut to that prefix, so only the rest of the prompt is
computed. The result equals a full forward pass up to floating-point rounding (the shared positions'
keys and values come from an earlier pass of the same tokens; see the tests for the tolerances).

One cache per loaded model (:func:`prompt_cache`: checkpoint, so each adapter has its own, and dtype);
each is a bounded LRU of ``max_entries`` prompts (an entry of N tokens holds N x 46 KB of keys and values
in float32 for SmolLM2-135M) and is safe to use from several threads. Used by option ranking
(:func:`kg_agents.llm.ranking.score_local`) and by the local chat model's unbatched generation.

Example:
    >>> cache = PrefixCache(max_entries=2)
    >>> cache.lookup([1, 2, 3])
    (0, None)
    >>> shared_prefix([1, 2, 3, 4], [1, 2, 5])
    2
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Sequence
from typing import Any

from kg_agents._lru import LRU
from kg_agents.errors import ConfigError

__all__ = ["DEFAULT_ENTRIES", "PrefixCache", "prefill", "prompt_cache", "shared_prefix"]

#: Prompts kept per model by :func:`prompt_cache`.
DEFAULT_ENTRIES = 4


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """How many leading tokens ``a`` and ``b`` have in common."""
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


class PrefixCache(LRU[tuple[int, ...], Any]):
    """A bounded LRU (:class:`~kg_agents._lru.LRU`) of prompts' KV caches, looked up by the longest shared
    token prefix (:meth:`lookup`; :meth:`get` is an exact prompt's stored entry, which is not to be changed).

    Args:
        max_entries: prompts kept (>= 1); the least recently used one goes first.

    Attributes:
        hits: lookups that reused an entry; ``misses``: those that did not.
        reused_tokens: prompt tokens not computed thanks to the cache, in all.
    """

    def __init__(self, max_entries: int = DEFAULT_ENTRIES) -> None:
        if max_entries < 1:
            raise ConfigError(f"max_entries must be >= 1, got {max_entries}")
        super().__init__(max_entries)
        self.reused_tokens = 0

    @property
    def max_entries(self) -> int:
        """Prompts kept."""
        return self.maxsize

    def lookup(self, ids: Sequence[int]) -> tuple[int, Any | None]:
        """``(n, kv)``: ``kv`` a private copy of the entry sharing the longest prefix with ``ids``, cut to
        its first ``n`` tokens; ``(0, None)`` when none shares any. ``n`` is at most ``len(ids) - 1``, so the
        caller always runs the prompt's last token (its logits are the next token's distribution)."""
        key = tuple(int(t) for t in ids)
        with self._lock:
            best, entry, chosen = 0, None, key
            for stored, kv in self._data.items():
                n = min(shared_prefix(stored, key), len(key) - 1)
                if n > best:
                    best, entry, chosen = n, kv, stored
            if entry is None:
                self.misses += 1
                return 0, None
            self._data.move_to_end(chosen)
            self.hits += 1
            self.reused_tokens += best
        past = copy.deepcopy(entry)  # entries are never changed once stored: copied outside the lock
        extra = past.get_seq_length() - best
        if extra:
            past.crop(-extra)
        return best, past

    def store(self, ids: Sequence[int], kv: Any) -> None:
        """Keep ``kv``, the KV cache of exactly the tokens ``ids``; the cache owns it from now on (the
        caller may read it, never change it)."""
        key = tuple(int(t) for t in ids)
        if not key or kv.get_seq_length() != len(key):
            raise ValueError(f"a KV cache of {kv.get_seq_length()} tokens stored for {len(key)} tokens")
        self.put(key, kv)


_CACHES: dict[tuple[str, str], PrefixCache] = {}
_CACHES_LOCK = threading.Lock()


def prompt_cache(checkpoint: str, dtype: str) -> PrefixCache:
    """The process-wide :class:`PrefixCache` of one loaded model: ``checkpoint`` (a directory, or the
    bundled model's name; an adapter is its own merged checkpoint) in ``dtype`` (resolved, e.g.
    ``float32``). Different models never share entries."""
    with _CACHES_LOCK:
        return _CACHES.setdefault((checkpoint, dtype), PrefixCache())


def prefill(model: Any, ids: Sequence[int], cache: PrefixCache | None = None) -> tuple[Any, Any]:
    """Run the prompt ``ids`` (one sequence) through ``model``, reusing ``cache``'s longest shared prefix.

    Returns:
        ``(logits, kv)``: the logits after the prompt's last token (vocabulary-sized) and the prompt's KV
        cache, which is also stored in ``cache``: read it (copy it to extend it), never change it.
    """
    import torch

    with torch.inference_mode():
        n, past = cache.lookup(ids) if cache is not None else (0, None)
        out = model(torch.tensor([list(ids[n:])]), past_key_values=past, use_cache=True)
    kv = out.past_key_values
    if cache is not None:
        cache.store(ids, kv)
    return out.logits[0, -1], kv
