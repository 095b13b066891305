"""The synthesiser's shares and split: questions per kind and hop count, and the validation split."""

from __future__ import annotations

import hashlib
import itertools
import math
import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.synth.questions import SynthQuestion

__all__ = [
    "BALANCES",
    "direction_pattern",
    "interleave",
    "quotas",
    "split_questions",
    "take_turns",
    "weights_of",
    "with_changes",
]

#: How a hop count's chains are shared among its relation paths (:func:`~kg_agents.synth.synthesise`).
BALANCES = ("direction", "path")


def quotas(total: int, weights: Mapping[Any, float]) -> dict[Any, int]:
    """``total`` split by ``weights`` (largest remainder, ties by key order)."""
    s = sum(weights.values())
    raw = {k: total * w / s for k, w in weights.items()}
    out = {k: math.floor(v) for k, v in raw.items()}
    left = total - sum(out.values())
    for k in sorted(raw, key=lambda k: (-(raw[k] - out[k]), str(k)))[:left]:
        out[k] += 1
    return out


def direction_pattern(relation_path: str) -> str:
    """The directions of a relation path's steps, ``o`` along a triple and ``i`` against it (``~``).

    Example:
        >>> direction_pattern("~directed_by has_genre")
        'io'
    """
    return "".join("i" if step.startswith("~") else "o" for step in relation_path.split())


def interleave(groups: Mapping[str, Iterator[Any]], rng: random.Random) -> Iterator[Any]:
    """The items of ``groups`` in turns, one from each group a round (a seeded order each round), until
    every group is empty."""
    active = sorted(groups)
    while active:
        rng.shuffle(active)
        still = []
        for key in active:
            item = next(groups[key], None)
            if item is not None:
                yield item
                still.append(key)
        active = sorted(still)


def take_turns(groups: Mapping[str, Iterator[Any]], quota: int, rng: random.Random) -> list[Any]:
    """Items from ``groups`` in turns (a seeded order each round) until ``quota`` or all are empty.

    Example:
        >>> take_turns({"a": iter("aaaa"), "b": iter("b")}, 4, random.Random(0))
        ['a', 'b', 'a', 'a']
    """
    # islice draws no item past the quota: drawing one has effects
    return list(itertools.islice(interleave(groups, rng), max(quota, 0)))


def weights_of(
    mix: Mapping[Any, float] | Sequence[float] | None, keys: Sequence[Any], what: str
) -> dict[Any, float]:
    """The weight of each of ``keys`` given a mix (a mapping, one weight per key, or None: equal);
    ConfigError naming ``what`` when it names other keys or has no positive weight."""
    if mix is None:
        return {k: 1.0 for k in keys}
    if not isinstance(mix, Mapping):
        if len(mix) != len(keys):
            raise ConfigError(f"{what} gives {len(mix)} weights for {len(keys)} values {list(keys)}")
        mix = dict(zip(keys, mix, strict=True))
    unknown = sorted(str(k) for k in mix if k not in keys)
    if unknown:
        raise ConfigError(f"{what} names {', '.join(unknown)}, not among {list(keys)}")
    weights = {k: float(mix.get(k, 0.0)) for k in keys}
    if any(w < 0 or math.isnan(w) for w in weights.values()) or sum(weights.values()) <= 0:
        raise ConfigError(f"{what} needs non-negative weights with a positive sum, got {dict(mix)}")
    return weights


def _split_key(seed: int, topics: Sequence[str], path: str) -> str:
    text = "\x1f".join([str(seed), *topics, path])
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


def with_changes(q: SynthQuestion, **changes: Any) -> SynthQuestion:
    """``q`` with fields replaced."""
    return replace(q, **changes)


def split_questions(questions: list[SynthQuestion], fraction: float, seed: int) -> list[SynthQuestion]:
    """``questions`` with their split: within each kind and hop count, ordered by a keyed hash of their
    topics (a constraint's value too) and relation path, the first ``fraction`` go to validation."""
    groups: dict[tuple[str, int], list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault((q.kind, q.hops), []).append(i)
    validation: set[int] = set()
    for _, idx in sorted(groups.items()):
        idx = sorted(
            idx, key=lambda i: (_split_key(seed, _split_topics(questions[i]), questions[i].relation_path), i)
        )
        validation.update(idx[: round(fraction * len(idx))])
    return [
        with_changes(q, split="validation" if i in validation else "train") for i, q in enumerate(questions)
    ]


def _split_topics(q: SynthQuestion) -> tuple[str, ...]:
    """What splits a question beside its relation path: its topics (and a constraint's value)."""
    return (*q.topic_entities, *q.constraint[1:])
