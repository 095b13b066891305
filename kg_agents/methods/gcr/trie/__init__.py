"""KG-Trie: a token prefix tree over the reasoning paths of a knowledge graph (GCR, section 4.2).

Paths of up to L hops from an entity are written with the paper's template (figure 8),
``<PATH> e0 -> r1 -> e1 -> ... </PATH>`` (a hop walked backwards is written ``~r``, so every path
text parses back with :meth:`~kg_agents.kg.base.Path.from_text` and stays checkable), tokenised with
the decoder's tokenizer and stored in a dict-of-dicts prefix tree: a prefix is answered with one dict
lookup per token (about 2 µs for a whole path here).

Construction strategies (appendix B):

- on demand per question: :func:`build_trie` over the question's topic entities;
- offline for a set of entities: :func:`build_tries` writes one file per entity into a directory
  (``kg-agents build-tries``); files are ``.npz`` arrays of token ids plus JSON metadata, never pickle;
- the dynamic cache of figure 6: :class:`TrieCache` keeps the per-entity tries of the most recently
  used entities in memory (LRU), reads offline tries from disk, and builds the others on demand.

Example:
    >>> from kg_agents.kg import MemoryKG
    >>> from kg_agents.kg.testing import CONTRACT_TRIPLES
    >>> from kg_agents.llm.local_model import load_local_tokenizer
    >>> tok = load_local_tokenizer()                                     # doctest: +SKIP
    >>> trie = build_trie(MemoryKG(CONTRACT_TRIPLES), ["Splash"], tok)  # doctest: +SKIP
    >>> trie.allowed(trie.sequences[0][:1])                             # doctest: +SKIP

Modules: :mod:`.tree` (path sentences, the prefix tree and its files), :mod:`.tokens` (path
tokenisation), :mod:`.build` (on-demand and offline builds), :mod:`.cache` (the dynamic cache).
"""

from __future__ import annotations

from kg_agents.methods.gcr.trie.build import INDEX_COST_RATIO, build_trie, build_tries, entity_file_name
from kg_agents.methods.gcr.trie.cache import TrieCache
from kg_agents.methods.gcr.trie.tokens import PathTokenizer, path_tokenizer, prepare_labels, splits_at_spaces
from kg_agents.methods.gcr.trie.tree import (
    END,
    FORMAT_VERSION,
    PATH_END,
    PATH_START,
    KGTrie,
    TrieStats,
    format_path,
    parse_path_text,
    path_sentence,
    tokenizer_signature,
)

__all__ = [
    "END",
    "FORMAT_VERSION",
    "INDEX_COST_RATIO",
    "PATH_END",
    "PATH_START",
    "KGTrie",
    "PathTokenizer",
    "TrieCache",
    "TrieStats",
    "build_trie",
    "build_tries",
    "entity_file_name",
    "format_path",
    "parse_path_text",
    "path_sentence",
    "path_tokenizer",
    "prepare_labels",
    "splits_at_spaces",
    "tokenizer_signature",
]
