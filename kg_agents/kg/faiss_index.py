"""The entity index's semantic side on disk: a FAISS inner-product index over label embeddings, built
from the embeddings and cached under ``<cache root>/index/<kg.name>-<fingerprint>/``.

A cache folder holds ``rows.json`` (the embedded texts and the ids that carry each), ``embeddings.npy``,
``faiss.index`` and ``manifest.json``. Each file is written to a temporary file and renamed into place,
and the manifest, with the other files' checksums, is written last: a crash leaves either no manifest
or one whose checksums do not match, and both mean "rebuild" (:class:`CacheInvalid`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kg_agents.errors import KGAgentsError, ModelError
from kg_agents.files import atomic_write, cache_root

__all__ = [
    "INDEX_FORMAT",
    "CacheInvalid",
    "IndexKey",
    "import_faiss",
    "index_cache_root",
    "load_index",
    "new_faiss",
    "save_index",
]

#: Version of the on-disk layout; a manifest with another version is rebuilt.
INDEX_FORMAT = 1
_FILES = ("rows.json", "embeddings.npy", "faiss.index")


class CacheInvalid(KGAgentsError):
    """A persisted index is missing, stale or corrupted (caught by the index: it means "rebuild")."""


@dataclass(frozen=True, slots=True)
class IndexKey:
    """What a cached index is for: the KG (its name and fingerprint), the encoder and the FAISS index
    type (a cache of another type is reused for its vectors)."""

    kg: str
    fingerprint: str
    encoder: str
    faiss_factory: str


def index_cache_root(cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """Root folder of the entity-index caches: ``cache_dir`` when given, else ``<cache root>/index``
    (:func:`kg_agents.files.cache_root`)."""
    return Path(cache_dir).expanduser() if cache_dir is not None else cache_root("index")


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def import_faiss() -> Any:
    """The ``faiss`` module.

    Raises:
        ModelError: FAISS is not installed (the ``index`` extra).
    """
    try:
        import faiss
    except ImportError as exc:
        raise ModelError("semantic entity search needs FAISS: pip install 'kg-agents[index]'") from exc
    return faiss


def new_faiss(faiss: Any, emb: np.ndarray, factory: str) -> Any:
    """A FAISS inner-product index of the ``factory`` type (``"Flat"``, ``"HNSW32"``, ...) over the rows of
    ``emb``, trained first when the type needs it.

    Raises:
        ModelError: FAISS does not know ``factory``.
    """
    dim = emb.shape[1]
    try:
        index = faiss.index_factory(dim, factory, faiss.METRIC_INNER_PRODUCT)
    except RuntimeError as exc:
        raise ModelError(f"bad FAISS index factory {factory!r}: {exc}") from exc
    if not index.is_trained:
        index.train(emb)
    index.add(emb)
    return index


def save_index(
    directory: Path,
    key: IndexKey,
    faiss: Any,
    texts: list[str],
    text_ids: list[list[str]],
    emb: np.ndarray,
    index: Any,
    build_seconds: float | None,
) -> None:
    """Write an index into ``directory``: its rows, embeddings and FAISS index (``index`` None: none,
    for a KG without labels), then the manifest.

    Raises:
        OSError: a file could not be written (what was written before has no manifest naming it).
    """
    rows = json.dumps({"texts": texts, "ids": text_ids}, ensure_ascii=False).encode("utf-8")
    buf = io.BytesIO()
    np.save(buf, emb, allow_pickle=False)
    blobs = {
        "rows.json": rows,
        "embeddings.npy": buf.getvalue(),
        "faiss.index": faiss.serialize_index(index).tobytes() if index is not None else b"",
    }
    manifest = {
        "format": INDEX_FORMAT,
        "kg": key.kg,
        "fingerprint": key.fingerprint,
        "encoder": key.encoder,
        "faiss_factory": key.faiss_factory,
        "count": len(texts),
        "dim": int(emb.shape[1]) if emb.size else 0,
        "build_seconds": build_seconds,
        "files": {name: _digest(data) for name, data in blobs.items()},
    }
    for name, data in blobs.items():
        atomic_write(directory / name, data)
    atomic_write(directory / "manifest.json", json.dumps(manifest, indent=1).encode())


def load_index(
    directory: Path, key: IndexKey, faiss: Any, texts: list[str], text_ids: list[list[str]]
) -> tuple[np.ndarray, Any]:
    """The embeddings and FAISS index cached in ``directory`` for these rows, KG and encoder (the index
    None for a KG without labels). A cache of another FAISS type gives its vectors a new index of the
    key's type (no re-encoding).

    Raises:
        CacheInvalid: no manifest, or one of another format, KG, encoder or size; a file missing,
            unreadable or not matching its checksum; rows other than ``texts`` and ``text_ids``.
    """
    try:
        manifest = json.loads((directory / "manifest.json").read_text("utf-8"))
    except FileNotFoundError:
        raise CacheInvalid("no manifest") from None
    except (OSError, ValueError) as exc:
        raise CacheInvalid(f"unreadable manifest: {exc}") from exc
    expect = {
        "format": INDEX_FORMAT,
        "fingerprint": key.fingerprint,
        "encoder": key.encoder,
        "count": len(texts),
    }
    if not isinstance(manifest, dict) or any(manifest.get(k) != v for k, v in expect.items()):
        raise CacheInvalid("manifest does not match this KG / encoder")
    blobs: dict[str, bytes] = {}
    for name in _FILES:
        try:
            data = (directory / name).read_bytes()
        except OSError as exc:
            raise CacheInvalid(f"cannot read {name}: {exc}") from exc
        if _digest(data) != manifest.get("files", {}).get(name):
            raise CacheInvalid(f"checksum mismatch in {name}")
        blobs[name] = data
    try:
        rows = json.loads(blobs["rows.json"])
        emb = np.load(io.BytesIO(blobs["embeddings.npy"]), allow_pickle=False)
    except ValueError as exc:
        raise CacheInvalid(f"unreadable data: {exc}") from exc
    if rows.get("texts") != texts or rows.get("ids") != text_ids:
        raise CacheInvalid("label rows differ from the KG's labels")
    if emb.dtype != np.float32 or emb.ndim != 2 or emb.shape[0] != len(texts):
        raise CacheInvalid(f"embeddings have shape {emb.shape}, expected ({len(texts)}, dim)")
    index = None
    if len(texts):
        if manifest.get("faiss_factory") == key.faiss_factory and blobs["faiss.index"]:
            try:
                index = faiss.deserialize_index(np.frombuffer(blobs["faiss.index"], dtype=np.uint8))
            except RuntimeError as exc:
                raise CacheInvalid(f"unreadable FAISS index: {exc}") from exc
            if index.ntotal != len(texts) or index.d != emb.shape[1]:
                raise CacheInvalid("FAISS index does not match the embeddings")
        else:
            index = new_faiss(
                faiss, emb, key.faiss_factory
            )  # same vectors, another index type: no re-encoding
    return emb, index
