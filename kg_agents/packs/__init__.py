"""KG packs: everything the methods learnt for one knowledge graph, found by the graph's content.

A pack is a folder with a manifest (``pack.json``) naming the KG's content fingerprint, each trained
component (the hop classifier, dualr's GNN, gcr's path generator, the specialist adapters) with its
training record and validation figures, and what each changes in a method's route. Every method takes
``pack="auto"`` (the pack registered for the KG, else none), ``pack="none"`` or ``pack=DIR``. The MetaQA
checkpoints shipped with the package are the bundled pack ``metaqa``. See docs/packs.md.

Example:
    >>> from kg_agents.kg import open_kg
    >>> resolve_pack(open_kg("metaqa"), "auto").name
    'metaqa'
"""

from __future__ import annotations

from kg_agents.packs import registry
from kg_agents.packs.fingerprint import (
    FINGERPRINT_MAX_TRIPLES,
    KGSummary,
    fingerprint_status,
    kg_fingerprint,
    kg_summary,
)
from kg_agents.packs.manifest import (
    CHAIN,
    COMPONENTS,
    DUALR,
    GCR_PATH_GENERATOR,
    HOP_CLASSIFIER,
    NO_ADAPTER,
    PACK_FORMAT,
    PREDICT,
    SPECIALIST,
    Pack,
    PackManifest,
    write_manifest,
)
from kg_agents.packs.registry import *  # noqa: F403

__all__ = [
    "CHAIN",
    "COMPONENTS",
    "DUALR",
    "FINGERPRINT_MAX_TRIPLES",
    "GCR_PATH_GENERATOR",
    "HOP_CLASSIFIER",
    "NO_ADAPTER",
    "PACK_FORMAT",
    "PREDICT",
    "SPECIALIST",
    "KGSummary",
    "Pack",
    "PackManifest",
    "fingerprint_status",
    "kg_fingerprint",
    "kg_summary",
    "write_manifest",
    *registry.__all__,  # the registry's API: resolve_pack, register_pack, ...
]
