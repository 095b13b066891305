"""Which entities can be a question's topic: one pass over a graph's labels.

A topic is named by its label in brackets and found again by that label, so its label must be one a
reader and a linker can take back: not empty, no bracket or line break, no surrounding space, at most
:data:`MAX_LABEL` characters, not an IRI (an entity without a label), and no other entity with the same
label after the evaluation's normalisation (:func:`kg_agents.eval.metrics.normalize_answer`).
"""

from __future__ import annotations

from dataclasses import dataclass

from kg_agents.eval.metrics import normalize_answer
from kg_agents.kg.base import KnowledgeGraph

__all__ = ["MAX_LABEL", "TopicLabels", "good_topic_label", "read_topic_labels"]

#: The longest label a topic may have.
MAX_LABEL = 100


@dataclass
class TopicLabels:
    """What one pass over the KG's labels found.

    Attributes:
        topics: entities whose label can stand for a topic, sorted.
        shared: normalised labels that several entities have -> those entities, sorted.
        read: entities read; capped: True when ``max_entities`` stopped the pass.
        bad_topic_label: entities left out as topics for their label.
    """

    topics: list[str]
    shared: dict[str, tuple[str, ...]]
    read: int
    capped: bool
    bad_topic_label: int


def good_topic_label(label: str) -> bool:
    return (
        bool(label)
        and label == label.strip()
        and len(label) <= MAX_LABEL
        and not any(c in label for c in "[]\n\r\t")
        and "://" not in label
    )


def read_topic_labels(kg: KnowledgeGraph, max_entities: int = 2_000_000) -> TopicLabels:
    """One pass over ``kg.iter_labels()`` (at most ``max_entities`` entities): the entities whose label
    can stand for a topic and the normalised labels several entities share."""
    first: dict[str, str] = {}
    shared: dict[str, list[str]] = {}
    labels: list[tuple[str, str, str]] = []
    capped = False
    for i, (e, label) in enumerate(kg.iter_labels()):
        if i >= max_entities:
            capped = True
            break
        norm = normalize_answer(label)
        labels.append((e, label, norm))
        if norm in first:
            shared.setdefault(norm, [first[norm]]).append(e)
        else:
            first[norm] = e
    topics = sorted(e for e, label, norm in labels if norm and norm not in shared and good_topic_label(label))
    return TopicLabels(
        topics=topics,
        shared={k: tuple(sorted(v)) for k, v in shared.items()},
        read=len(labels),
        capped=capped,
        bad_topic_label=len(labels) - len(topics),
    )
