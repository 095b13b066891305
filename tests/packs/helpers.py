"""Small packs for the tests: a KG's manifest with a tiny trained hop classifier (over the hashing
encoder, so no sentence model is loaded) and fake specialist adapters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from kg_agents.core.hops import ENTITY_MASK, HopClassifier, encode
from kg_agents.kg.encoder import HashingEncoder
from kg_agents.methods.knowledge_navigator.train import fit_softmax_head
from kg_agents.packs import HOP_CLASSIFIER, PackManifest, kg_summary, write_manifest

#: What the tiny classifier is trained on: masked questions and their hop counts (chosen for the tests:
#: "who directed" is taught as a 2-hop question, so a method that follows it walks two hops).
TRAINING = [
    (f"who directed {ENTITY_MASK}", 2),
    (f"who was the director of {ENTITY_MASK}", 2),
    (f"what did {ENTITY_MASK} write", 1),
    (f"which films did {ENTITY_MASK} star in", 1),
]


def train_tiny_hops(folder: Path) -> Path:
    """A hop classifier trained on :data:`TRAINING` over :class:`HashingEncoder` features, saved in
    ``folder``."""
    enc = HashingEncoder()
    x = encode(enc, [q for q, _ in TRAINING])
    y = np.array([h - 1 for _, h in TRAINING])
    weight, bias = fit_softmax_head(x, y, 2, epochs=200, lr=0.5)
    HopClassifier(weight, bias, [1, 2], meta={"encoder": "hashing (tests)", "n_train": len(TRAINING)}).save(
        folder
    )
    return folder


def fake_adapter(folder: Path) -> Path:
    """A folder that looks like a LoRA adapter (what a pack's path check reads)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "adapter_config.json").write_text('{"peft_type": "LORA"}', encoding="utf-8")
    return folder


def manifest_for(kg: Any, name: str = "tiny") -> PackManifest:
    """A manifest for ``kg``: its summary, no components yet."""
    s = kg_summary(kg)
    assert s is not None
    kg_part = {"fingerprint": s.fingerprint, "triples": s.triples, "entities": s.entities}
    return PackManifest(name, {**kg_part, "relations": s.relations, "source": "a test"})


def hop_pack(
    directory: Path, kg: Any, *, routes: dict[str, str] | None = None, value: str = "predict"
) -> Path:
    """A pack for ``kg`` with the tiny hop classifier and, by default, ``hops=predict`` routes for
    graph_explore and graph_agent and ``answer_hops=predict`` for graph_rag (``value`` in place of
    ``"predict"``: ``"chain"``)."""
    m = manifest_for(kg)
    train_tiny_hops(directory / "hops")
    m.add_component(HOP_CLASSIFIER, "hops", record={"headline": "4 questions"}, validation={"accuracy": 1.0})
    wanted = (
        routes
        if routes is not None
        else {"graph_explore": "hops", "graph_agent": "hops", "graph_rag": "answer_hops"}
    )
    for method, option in wanted.items():
        m.set_route(method, "the walk's length is predicted", **{option: value})
    write_manifest(directory, m)
    return directory
