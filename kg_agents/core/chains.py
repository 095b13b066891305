"""Relation chains: the sequences of relations a walk of a given length can follow from some entities.

A method that knows how many hops its answers lie away (the hop classifier of :mod:`kg_agents.core.hops`)
can let the model choose the whole chain of relations at once instead of one relation per hop. Chosen hop
by hop, a small model tends to take the relation that names the answer's type first ("who starred ..."
takes ``starred_actors`` from the topic film), and a wrong first hop cannot be undone; ranked as a whole,
the chain is read against the whole question. :func:`relation_chains` lists the chains the graph
has, :func:`chain_text` writes one as a ranked reply.

Example:
    >>> from kg_agents.kg.memory import MemoryKG
    >>> kg = MemoryKG([("X", "written_by", "W"), ("F", "written_by", "W"), ("F", "starred", "A")])
    >>> chains, truncated = relation_chains(kg, ["X"], 3)
    >>> for c in chains:
    ...     print(chain_text(c))
    written by, then reverse of written by, then starred
    written by, then reverse of written by, then written by
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.kg.base import INVERSE_PREFIX, Hop, Path, has_chain_queries, parse_relation_path, relations_of
from kg_agents.kg.text import relation_words

__all__ = [
    "CHAIN_EXAMPLE",
    "CHAIN_EXAMPLE_HOPS",
    "Chain",
    "ChainWalk",
    "chain_example",
    "chain_text",
    "relation_chains",
    "relation_path",
    "walk_chain",
]

#: The worked example of a relation-chain prompt (its ``{example}``), shown only for chains longer than
#: its own 2 hops: among 2-hop options the embedded model copies it, while for 3 hops, where it is no
#: option, it shows how a chain reads the question (both measured in docs/dev/results-history.md). A
#: specialist adapter learns the chains without it.
CHAIN_EXAMPLE = (
    "\n\nExample:\nQuestion: who directed the movies starred by [Mara Quill]\nEntity: Mara Quill\n"
    "Relation chain: reverse of starred actors, then directed by"
)
#: The length of :data:`CHAIN_EXAMPLE`'s chain.
CHAIN_EXAMPLE_HOPS = 2

#: One ``(relation, direction)`` per hop, ``direction`` ``"out"`` (head to tail) or ``"in"``.
Chain = tuple[tuple[str, str], ...]


def relation_chains(
    kg: Any,
    starts: Sequence[str],
    length: int,
    *,
    sample: int = 10,
    fanout: int = 20,
    max_chains: int = 200,
) -> tuple[list[Chain], bool]:
    """The relation chains of exactly ``length`` hops that some walk from ``starts`` follows, in a fixed
    order, and whether the list was cut at ``max_chains``.

    Only the relations matter, so each chain prefix is followed from a sample of the entities it
    reaches (``sample`` of them, ``fanout`` neighbours read per entity and relation): a chain that only
    entities beyond the sample have may be missed on a large graph. Walks may turn back along the
    relation they came by (a film's writer, then the writer's other films), but a chain that ends only
    at ``starts`` (a director's films, then their director: the director again) is left out, since an
    answer is never a start. A level's relations are read in order only until it holds ``max_chains``
    chains: a hub with thousands of relations costs about ``max_chains`` reads, not thousands.

    Raises:
        ConfigError: ``length``, ``sample``, ``fanout`` or ``max_chains`` is not a positive integer.
    """
    for key, v in (("length", length), ("sample", sample), ("fanout", fanout), ("max_chains", max_chains)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(f"{key} must be a positive integer, got {v!r}")
    level: list[tuple[Chain, list[str]]] = [((), list(dict.fromkeys(starts))[:sample])]
    start_set = set(starts)
    truncated = False
    for k in range(length):
        # the chain's end: only what is not a start could be an answer
        exclude = start_set if k == length - 1 else set()
        nxt: list[tuple[Chain, list[str]]] = []
        for step in _longer(kg, level, exclude, fanout, sample):
            if len(nxt) == max_chains:  # one more than fits: the level is cut, its other relations unread
                truncated = True
                break
            nxt.append(step)
        level = nxt
    return [chain for chain, _ in level], truncated


def _longer(
    kg: Any, level: list[tuple[Chain, list[str]]], exclude: set[str], fanout: int, sample: int
) -> Iterator[tuple[Chain, list[str]]]:
    """Each chain of ``level`` one relation longer, with a sample of the entities it reaches, in order,
    one neighbour read at a time (read only as far as the caller takes them)."""
    for chain, ents in level:
        for d in ("out", "in"):
            for rel in sorted({r for rels in relations_of(kg, ents, d).values() for r in rels}):
                got = kg.neighbors_many(ents, rel, d, limit=fanout)
                tails = [
                    t
                    for t in dict.fromkeys(t.other(e) for e in ents for t in got.get(e, ()))
                    if t not in exclude
                ]
                if tails:
                    yield (*chain, (rel, d)), tails[:sample]


def chain_text(chain: Chain) -> str:
    """A chain as words, the way it is ranked: ``written by, then reverse of written by``.

    Example:
        >>> chain_text((("directed_by", "out"), ("release_year", "out")))
        'directed by, then release year'
    """
    return ", then ".join(
        relation_words(r) if d == "out" else f"reverse of {relation_words(r)}" for r, d in chain
    )


def chain_example(length: int, show: bool) -> str:
    """The ``{example}`` of a relation-chain prompt for chains of ``length`` hops: :data:`CHAIN_EXAMPLE`
    when ``show`` and the chains are longer than the example's, else empty.

    Example:
        >>> chain_example(2, True), chain_example(3, False)
        ('', '')
        >>> chain_example(3, True) == CHAIN_EXAMPLE
        True
    """
    return CHAIN_EXAMPLE if show and length > CHAIN_EXAMPLE_HOPS else ""


@dataclass
class ChainWalk:
    """What :func:`walk_chain` found: one walk per end reached, and the starts whose ends were cut.

    Attributes:
        paths: a walk (a :class:`~kg_agents.kg.base.Path`) from a start to each end reached, the ends of
            each start in the store's order.
        truncated: ``"start relation/path"`` for each start with more ends than the limit.
        ends: the number of ends reached (at most ``limit`` per start).
    """

    paths: list[Path] = field(default_factory=list)
    truncated: list[str] = field(default_factory=list)
    ends: int = 0


def walk_chain(kg: Any, starts: Sequence[str], relation_path: Sequence[str], *, limit: int) -> ChainWalk:
    """The ends of ``relation_path`` from each of ``starts`` and one walk to each. On a store with
    :class:`~kg_agents.kg.base.ChainQueries` (:func:`~kg_agents.kg.base.has_chain_queries`): two
    queries per start (its ends, at most ``limit``, then their walks), the engine joining the hops,
    instead of reading each hop's neighbourhood. On a store without them, hop by hop: one
    ``neighbors_many`` per hop (``limit`` neighbours read per entity and hop), the first walk to reach an
    entity kept, never through the start again; a start with more than ``limit`` ends keeps the first
    ``limit``. The walks are the store's; a method verifies the ones it returns, as every path.

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("F", "starring", "A"), ("G", "starring", "A"), ("F", "directed_by", "D"),
        ...                ("G", "directed_by", "E")])
        >>> w = walk_chain(kg, ["A"], ["~starring", "directed_by"], limit=1)
        >>> [p.to_text() for p in w.paths], w.truncated
        (['A -> ~starring -> F -> directed_by -> D'], ['A ~starring/directed_by'])
    """
    out = ChainWalk()
    path = list(relation_path)
    engine = has_chain_queries(kg)
    for s in dict.fromkeys(starts):
        if not engine:
            walks, cut = _walk_hop_by_hop(kg, s, path, limit)
            if cut:
                out.truncated.append(f"{s} {'/'.join(path)}")
            out.ends += len(walks)
            out.paths.extend(walks)
            continue
        ends, cut = kg.chain_ends(s, path, limit=limit)
        if cut:
            out.truncated.append(f"{s} {'/'.join(path)}")
        if not ends:
            continue
        out.ends += len(ends)
        walks = kg.chain_witnesses(s, path, ends)
        out.paths.extend(walks[e] for e in ends if e in walks)
    return out


def _walk_hop_by_hop(kg: Any, start: str, path: Sequence[str], limit: int) -> tuple[list[Path], bool]:
    """:func:`walk_chain` for one start on a store without chain queries: its walks and whether they
    were cut (a hop's neighbour list, or the ends, beyond ``limit``)."""
    walks: dict[str, Path] = {start: Path(())}
    cut = False
    for rel, inverse in parse_relation_path(path):
        d = "in" if inverse else "out"
        got = kg.neighbors_many(list(walks), rel, d, limit=limit)
        nxt: dict[str, Path] = {}
        for e, walk in walks.items():
            tl = got.get(e, ())
            cut = cut or bool(getattr(tl, "truncated", False))
            for t in tl:
                o = t.other(e)
                if o != start and o not in nxt:
                    nxt[o] = walk.extend(Hop(e, rel, o, inverse))
        walks = nxt
        if not walks:
            return [], cut
    ends = list(walks.values())
    return ends[:limit], cut or len(ends) > limit


def relation_path(chain: Chain) -> list[str]:
    """A chain as a relation path: ``~relation`` for a hop walked backwards.

    Example:
        >>> relation_path((("starred_actors", "in"), ("directed_by", "out")))
        ['~starred_actors', 'directed_by']
    """
    return [f"{INVERSE_PREFIX}{r}" if d == "in" else r for r, d in chain]
