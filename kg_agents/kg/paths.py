"""Path search over any ``KnowledgeGraph``: L-hop enumeration, all shortest paths, and the hops on every
walk of a given length between two sets of entities.

Both expand one hop at a time with ``neighbors_many`` (one round trip per hop on a SPARQL store),
bound the fan-out of every entity and the number of paths, and report when a bound was hit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from kg_agents.kg.base import Direction, Hop, KnowledgeGraph, Path, check_direction

__all__ = [
    "MAX_CHAINS",
    "PathSearchResult",
    "Truncation",
    "best_chains",
    "chain_paths",
    "chain_step",
    "enumerate_paths",
    "follow_chain",
    "hops_at_length",
    "shortest_paths",
]


class Truncation:
    """What cut a search short: ``fanout_truncated``, the entities whose neighbour list was cut at the
    fan-out limit, and ``path_limit_hit``, whether the path limit stopped it (fields of the dataclass
    that takes this in)."""

    fanout_truncated: list[str]
    path_limit_hit: bool

    @property
    def truncated(self) -> bool:
        """Whether either limit cut the search short."""
        return bool(self.fanout_truncated) or self.path_limit_hit


@dataclass
class PathSearchResult(Truncation):
    """Paths found, and which limits cut the search short.

    Attributes:
        paths: the paths, shortest first.
        fanout_truncated: entities whose neighbour list was cut at ``fanout_limit``.
        path_limit_hit: True when ``max_paths`` stopped the search.
        kg_calls: neighbour round trips made.
    """

    paths: list[Path] = field(default_factory=list)
    fanout_truncated: list[str] = field(default_factory=list)
    path_limit_hit: bool = False
    kg_calls: int = 0


def _hops_from(triples: Iterable, source: str, relations: set[str] | None) -> list[Hop]:
    hops = []
    for t in triples:
        if relations is not None and t.relation not in relations:
            continue
        if t.head == source:
            hops.append(Hop(source, t.relation, t.tail, False))
        if t.tail == source and t.head != source:
            hops.append(Hop(source, t.relation, t.head, True))
    return hops


def enumerate_paths(
    kg: KnowledgeGraph,
    starts: Sequence[str],
    max_hops: int = 2,
    *,
    direction: Direction = "both",
    fanout_limit: int | None = 500,
    max_paths: int | None = 20_000,
    relations: Iterable[str] | None = None,
) -> PathSearchResult:
    """All simple paths of 1..``max_hops`` hops from ``starts`` (BFS, no entity repeated in a path).

    Args:
        kg: the store.
        starts: start entity ids.
        max_hops: the longest path, L.
        direction: ``out`` follows triples forwards only; ``both`` also walks them backwards.
        fanout_limit: at most this many neighbour triples per entity and hop (None: no limit).
        max_paths: stop once this many paths were collected (None: no limit).
        relations: only follow these relations (None: all).
    """
    check_direction(direction)
    if max_hops < 1:
        raise ValueError(f"max_hops must be >= 1, got {max_hops}")
    rel_set = set(relations) if relations is not None else None
    result = PathSearchResult()
    frontier: list[Path | str] = list(dict.fromkeys(starts))
    for _ in range(max_hops):
        ends = list(dict.fromkeys(p if isinstance(p, str) else p.end for p in frontier))
        if not ends:
            break
        nbrs = kg.neighbors_many(ends, direction=direction, limit=fanout_limit)  # type: ignore[arg-type]
        result.kg_calls += 1
        for e, tl in nbrs.items():
            if tl.truncated and e not in result.fanout_truncated:
                result.fanout_truncated.append(e)
        nxt: list[Path | str] = []
        for p in frontier:
            src = p if isinstance(p, str) else p.end
            seen = {src} if isinstance(p, str) else set(p.entities)
            for hop in _hops_from(nbrs.get(src, ()), src, rel_set):  # type: ignore[arg-type]
                if hop.target in seen:
                    continue
                new = Path((hop,)) if isinstance(p, str) else p.extend(hop)
                result.paths.append(new)
                nxt.append(new)
                if max_paths is not None and len(result.paths) >= max_paths:
                    result.path_limit_hit = True
                    return result
        frontier = nxt
    return result


def shortest_paths(
    kg: KnowledgeGraph,
    sources: Sequence[str],
    targets: Sequence[str],
    max_hops: int = 3,
    *,
    direction: Direction = "both",
    fanout_limit: int | None = 2000,
    max_paths: int | None = 1000,
) -> PathSearchResult:
    """All shortest paths (at most ``max_hops`` hops) from any source to any target.

    Breadth-first from the sources, keeping every parent hop that reaches an entity at its first
    level; stops at the first level that reaches a target and backtracks all shortest paths to the
    targets reached there.
    """
    check_direction(direction)
    target_set = set(targets)
    result = PathSearchResult()
    level: dict[str, int] = {s: 0 for s in sources}
    parents: dict[str, list[Hop]] = {}
    frontier = list(dict.fromkeys(sources))
    reached = [s for s in frontier if s in target_set]
    depth = 0
    while not reached and frontier and depth < max_hops:
        depth += 1
        nbrs = kg.neighbors_many(frontier, direction=direction, limit=fanout_limit)
        result.kg_calls += 1
        nxt: list[str] = []
        for src in frontier:
            tl = nbrs.get(src)
            if tl is None:
                continue
            if tl.truncated and src not in result.fanout_truncated:
                result.fanout_truncated.append(src)
            for hop in _hops_from(tl, src, None):
                lv = level.get(hop.target)
                if lv is None:
                    level[hop.target] = depth
                    parents[hop.target] = [hop]
                    nxt.append(hop.target)
                elif lv == depth and hop not in parents[hop.target]:
                    parents[hop.target].append(hop)
        frontier = nxt
        reached = [e for e in frontier if e in target_set]

    def back(entity: str) -> list[tuple[Hop, ...]]:
        if level.get(entity) == 0:
            return [()]
        out: list[tuple[Hop, ...]] = []
        for hop in parents.get(entity, []):
            for prefix in back(hop.source):
                out.append((*prefix, hop))
                if max_paths is not None and len(out) >= max_paths:
                    return out
        return out

    for t in reached:
        for hops in back(t):
            if not hops:
                continue
            result.paths.append(Path(hops))
            if max_paths is not None and len(result.paths) >= max_paths:
                result.path_limit_hit = True
                return result
    return result


def hops_at_length(
    kg: KnowledgeGraph,
    sources: Sequence[str],
    targets: Sequence[str],
    length: int,
    *,
    fanout_limit: int | None = 2000,
) -> list[tuple[int, Hop]]:
    """Every hop on a walk of exactly ``length`` hops from a source to a target, with its position
    (1 for a hop leaving a source), in both directions; no walk passes through a source again.

    Unlike :func:`shortest_paths`, a shorter connection does not hide a longer one: the gold chain of a
    3-hop question ("who directed the films that share actors with X") is found even when one answer is
    also X's own director, one hop away. Forward levels are kept as sets (no parents) up to
    ``length - 1``; the walk is then traced back from the targets inside them, so the widest level is
    never expanded. An empty list: no walk of that length within ``fanout_limit``.

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("A", "r", "B"), ("B", "s", "C"), ("A", "t", "C")])
        >>> [(i, h.relation) for i, h in hops_at_length(kg, ["A"], ["C"], 2)]
        [(1, 'r'), (2, 's')]
        >>> [(i, h.relation) for i, h in hops_at_length(kg, ["A"], ["C"], 1)]
        [(1, 't')]
    """
    if length < 1:
        raise ValueError(f"length must be >= 1, got {length}")
    starts = set(sources)
    levels: list[set[str]] = [starts]
    for _ in range(length - 1):
        frontier = sorted(levels[-1])
        nbrs = kg.neighbors_many(frontier, direction="both", limit=fanout_limit)
        nxt: set[str] = set()
        for src in frontier:
            for hop in _hops_from(nbrs.get(src, ()), src, None):
                if hop.target not in starts:
                    nxt.add(hop.target)
        if not nxt:
            return []
        levels.append(nxt)
    good = {t for t in targets if t not in starts}
    found: list[tuple[int, Hop]] = []
    for k in range(length, 0, -1):  # hops from level k-1 into ``good`` (at level k)
        if not good:
            return []
        nbrs = kg.neighbors_many(sorted(good), direction="both", limit=fanout_limit)
        prev: set[str] = set()
        for node in sorted(good):
            for back in _hops_from(nbrs.get(node, ()), node, None):
                src = back.target
                if src in levels[k - 1]:
                    found.append((k, Hop(src, back.relation, node, not back.inverse)))
                    prev.add(src)
        good = prev
    return sorted(set(found), key=lambda x: (x[0], x[1].source, x[1].relation, x[1].target))


#: Relation chains (relation, direction) scored per question at most (see :func:`best_chains`).
MAX_CHAINS = 200


def chain_step(hop: Hop) -> tuple[str, str]:
    """A hop as a relation chain's step: ``(relation, "out")``, or ``"in"`` for a backwards hop."""
    return (hop.relation, "in" if hop.inverse else "out")


def follow_chain(
    kg: KnowledgeGraph, starts: set[str], chain: Sequence[tuple[str, str]], limit: int
) -> set[str]:
    """The entities ``chain`` reaches from ``starts`` (never a start again)."""
    frontier = set(starts)
    for rel, d in chain:
        nbrs = kg.neighbors_many(sorted(frontier), rel, "in" if d == "in" else "out", limit=limit)
        frontier = {t.other(e) for e, tl in nbrs.items() for t in tl} - starts
        if not frontier:
            break
    return frontier


def best_chains(
    kg: KnowledgeGraph, topics: Sequence[str], answers: Sequence[str], length: int, *, limit: int = 2000
) -> list[tuple[tuple[tuple[str, str], ...], list[Hop]]]:
    """The relation chains (one ``(relation, direction)`` per hop, exactly ``length`` hops) that best
    explain the answers, each with the hops of its walks from a topic entity to a gold answer.

    A walk of the right length is not yet a gold path: on MetaQA, "who starred in the films whose
    screenwriters also wrote X" also reaches some of its actors through the films released in the same
    year as X. Each relation chain that some walk follows is scored by the F1 of the entities it reaches
    from the topic entities against the answers; the chains with the best F1 are kept (all of them on a
    tie). Empty: no walk.
    """
    walks = hops_at_length(kg, topics, answers, length, fanout_limit=limit)
    if not walks:
        return []
    by_level: dict[int, dict[str, list[Hop]]] = {}
    for k, h in walks:
        by_level.setdefault(k, {}).setdefault(h.source, []).append(h)
    # the relation chains the walks follow, each with its hops (set-based: one branch per relation)
    chains: list[tuple[tuple[tuple[str, str], ...], list[list[Hop]]]] = []

    def walk(k: int, nodes: set[str], chain: tuple[tuple[str, str], ...], levels: list[list[Hop]]) -> None:
        if len(chains) >= MAX_CHAINS:
            return
        if k > length:
            chains.append((chain, levels))
            return
        groups: dict[tuple[str, str], list[Hop]] = {}
        for n in sorted(nodes):
            for h in by_level.get(k, {}).get(n, []):
                groups.setdefault(chain_step(h), []).append(h)
        for key in sorted(groups):
            walk(k + 1, {h.target for h in groups[key]}, (*chain, key), [*levels, groups[key]])

    walk(1, set(topics), (), [])
    gold = set(answers)
    starts = set(topics)
    best, kept = -1.0, []
    for chain, levels in chains:
        reached = follow_chain(kg, starts, chain, limit)
        hit = len(reached & gold)
        f1 = 2 * hit / (len(reached) + len(gold)) if hit else 0.0
        if f1 > best + 1e-9:
            best, kept = f1, [(chain, levels)]
        elif abs(f1 - best) <= 1e-9:
            kept.append((chain, levels))
    out = []
    for chain, levels in kept:
        # a hop is kept when this chain goes on from where it leads to an answer (the walk it came from
        # may have gone on along another relation)
        ends = gold
        on_chain: list[list[Hop]] = []
        for hops in reversed(levels):
            hops = [h for h in hops if h.target in ends]
            on_chain.append(hops)
            ends = {h.source for h in hops}
        out.append((chain, [h for hops in reversed(on_chain) for h in hops]))
    return out


def chain_paths(
    kg: KnowledgeGraph,
    topics: Sequence[str],
    answers: Sequence[str],
    length: int,
    *,
    max_paths: int = 5,
    limit: int = 2000,
) -> list[Path]:
    """Paths of exactly ``length`` hops from a topic entity to an answer along the relation chains that
    best explain the answers (:func:`best_chains`), at most ``max_paths``, the chains taken in turn.

    Where :func:`shortest_paths` gives a 2-hop question the 1-hop shortcut to one of its answers, these
    follow the question's own chain. Empty: no walk of that length.

    Example:
        >>> from kg_agents.kg.memory import MemoryKG
        >>> kg = MemoryKG([("X", "written_by", "W"), ("F", "written_by", "W"), ("X", "directed_by", "F")])
        >>> [p.to_text() for p in chain_paths(kg, ["X"], ["F"], 2)]
        ['X -> written_by -> W -> ~written_by -> F']
    """
    gold = set(answers)
    starts = set(topics)
    per_chain: list[list[Path]] = []
    for chain, hops in best_chains(kg, topics, answers, length, limit=limit):
        by_source: dict[tuple[str, tuple[str, str]], list[Hop]] = {}
        for h in hops:
            by_source.setdefault((h.source, chain_step(h)), []).append(h)
        found: list[Path] = []
        # depth first from each topic entity along the chain's relations, to an answer
        stack: list[tuple[str, tuple[Hop, ...]]] = [(t, ()) for t in reversed(list(topics))]
        while stack and len(found) < max_paths:
            node, done = stack.pop()
            if len(done) == len(chain):
                if node in gold:
                    found.append(Path(done))
                continue
            nxt = [h for h in by_source.get((node, chain[len(done)]), []) if h.target not in starts]
            stack.extend((h.target, (*done, h)) for h in reversed(nxt))
        per_chain.append(found)
    out: list[Path] = []
    for i in range(max_paths):  # one path of each chain in turn, so that every chain is taught
        out.extend(paths[i] for paths in per_chain if i < len(paths))
    return out[:max_paths]
