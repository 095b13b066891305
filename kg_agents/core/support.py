"""Support paths: the reasoning paths, through triples a method retrieved, that lead to its answers.

Methods that retrieve triples and then let a model pick answers (the baselines, Graph-CoT's chains)
return, for each answer, the paths from a topic entity to it through the retrieved triples, walked
in either direction. The graph then verifies every path against the KG.

Example:
    >>> from kg_agents.kg.base import Triple
    >>> ts = [Triple("Splash", "directed_by", "Ron Howard"), Triple("Splash", "starred_actors", "Tom Hanks")]
    >>> [p.to_text() for p in support_paths(["Splash"], ts, {"Ron Howard"}, max_hops=2)]
    ['Splash -> directed_by -> Ron Howard']
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from kg_agents.kg.base import Path, Triple

__all__ = ["support_paths"]


def _adjacency(triples: Iterable[Triple]) -> dict[str, list[Triple]]:
    adj: dict[str, list[Triple]] = {}
    for t in dict.fromkeys(triples):
        adj.setdefault(t.head, []).append(t)
        if t.tail != t.head:
            adj.setdefault(t.tail, []).append(t)
    return adj


def support_paths(
    starts: Sequence[str],
    triples: Iterable[Triple],
    targets: set[str],
    *,
    max_hops: int,
    shortest: bool = False,
    max_partial: int = 2000,
) -> list[Path]:
    """Paths of at most ``max_hops`` of ``triples`` from an entity of ``starts`` to one of ``targets``.

    Args:
        starts: the topic entities.
        triples: the retrieved triples (walked in both directions, none twice on a path).
        targets: the answer entities.
        max_hops: the longest path.
        shortest: one shortest path per (start, target) pair (breadth-first); otherwise every path,
            with at most ``max_partial`` partial paths kept per hop.
        max_partial: the bound on partial paths per hop (``shortest=False``).
    """
    adj = _adjacency(triples)
    if shortest:
        return _shortest(starts, adj, targets, max_hops)
    out: list[Path] = []
    layer: list[tuple[str, str, list[Triple]]] = [(s, s, []) for s in dict.fromkeys(starts)]
    for _ in range(max_hops):
        nxt: list[tuple[str, str, list[Triple]]] = []
        for start, cur, walked in layer:
            for t in adj.get(cur, []):
                if t in walked:
                    continue
                o = t.other(cur)
                path = [*walked, t]
                if o in targets:
                    out.append(Path.from_triples(start, path))
                nxt.append((start, o, path))
        layer = nxt[:max_partial]
    return out


def _shortest(
    starts: Sequence[str], adj: dict[str, list[Triple]], targets: set[str], max_hops: int
) -> list[Path]:
    paths: list[Path] = []
    for start in dict.fromkeys(starts):
        if start not in adj:
            continue
        prev: dict[str, tuple[str, Triple] | None] = {start: None}
        queue = deque([(start, 0)])
        while queue:
            node, d = queue.popleft()
            if d >= max_hops:
                continue
            for t in adj.get(node, []):
                nxt = t.other(node)
                if nxt not in prev:
                    prev[nxt] = (node, t)
                    queue.append((nxt, d + 1))
        for target in targets:
            if target == start or target not in prev:
                continue
            seq: list[Triple] = []
            cur = target
            while (step := prev[cur]) is not None:
                cur, t = step
                seq.append(t)
            paths.append(Path.from_triples(start, list(reversed(seq))))
    return paths
