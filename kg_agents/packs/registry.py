"""Which pack goes with which knowledge graph: the bundled packs, the user's registry, and ``pack="auto"``.

Bundled packs live in the package (``kg_agents/packs/bundled/<name>/pack.json``; the MetaQA pack points
at the checkpoints shipped with the methods). The user's registry is one JSON file,
``$KG_AGENTS_PACKS/registry.json`` (default: ``cache_root("packs")``), holding each registered pack's
folder with its KG's fingerprint and edge count, so that finding the pack of a KG loads only the pack
whose fingerprint matches. A registered pack for a fingerprint replaces an earlier one for the same
fingerprint, and is found before a bundled pack for it.

``resolve_pack(kg, pack)`` is what every method factory calls with its ``pack`` option: ``"auto"`` (the
pack registered for the KG's content fingerprint, else None), ``"none"`` (None), a folder, or a
:class:`~kg_agents.packs.manifest.Pack`. A named pack is used as it is, whatever KG it was built for.

Example:
    >>> from kg_agents.kg import MemoryKG
    >>> resolve_pack(MemoryKG([("a", "r", "b")]), "auto") is None
    True
    >>> [p.name for p in bundled_packs()]
    ['metaqa']
"""

from __future__ import annotations

import functools
import json
import os
import threading
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kg_agents.errors import ConfigError, DataFormatError, KGError
from kg_agents.files import atomic_write, cache_root
from kg_agents.packs.fingerprint import edge_count, fingerprint_status
from kg_agents.packs.manifest import MANIFEST, Pack

__all__ = [
    "BUNDLED_DIR",
    "PACKS_ENV",
    "PACK_FORMS",
    "REGISTRY_FORMAT",
    "PackWarning",
    "bundled_packs",
    "find_pack",
    "pack_record",
    "register_pack",
    "registered_packs",
    "registry_path",
    "resolve_pack",
    "unregister_pack",
]

#: Where the bundled packs are (one folder each).
BUNDLED_DIR = Path(__file__).resolve().parent / "bundled"
#: The environment variable naming the folder of the user's registry.
PACKS_ENV = "KG_AGENTS_PACKS"
REGISTRY_FORMAT = "kg-agents-pack-registry/1"
#: The forms of a method's ``pack`` option, for messages.
PACK_FORMS = "'auto' (the pack registered for the KG), 'none' (no pack), or a pack's folder"
_LOCK = threading.Lock()


class PackWarning(UserWarning):
    """``pack="auto"`` could not tell which pack goes with a KG (no fingerprint, or the store failed)."""


def registry_path() -> Path:
    """The user's registry file: ``$KG_AGENTS_PACKS/registry.json``, else under ``cache_root("packs")``."""
    base = os.environ.get(PACKS_ENV)
    return (Path(base).expanduser() if base else cache_root("packs")) / "registry.json"


def _read_registry() -> list[dict[str, Any]]:
    path = registry_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfigError(f"cannot read the pack registry {path}: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise DataFormatError(str(path), exc.lineno, f"not a pack registry ({exc.msg}); remove it") from exc
    entries = data.get("packs") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("format") != REGISTRY_FORMAT or not isinstance(entries, list):
        raise DataFormatError(str(path), None, f"not a {REGISTRY_FORMAT} file; remove it and register again")
    ok = all(isinstance(e, dict) and isinstance(e.get("directory"), str) for e in entries)
    if not ok:
        raise DataFormatError(str(path), None, "an entry without a directory; remove it and register again")
    return entries


def _write_registry(entries: list[dict[str, Any]]) -> None:
    atomic_write(registry_path(), json.dumps({"format": REGISTRY_FORMAT, "packs": entries}, indent=2) + "\n")


def _unusable(exc: ConfigError | DataFormatError, what: str) -> ConfigError | DataFormatError:
    """``exc`` again, saying which registered pack it is about and how to remove it."""
    hint = "`kg-agents pack unregister DIR` removes it"
    if isinstance(exc, DataFormatError):
        return DataFormatError(exc.path, exc.line, f"{what} cannot be used: {exc.reason}; {hint}")
    return ConfigError(f"{what} cannot be used: {exc}; {hint}")


def bundled_packs() -> list[Pack]:
    """The packs shipped in the package, by name (loaded once per process)."""
    return list(_bundled())


@functools.cache
def _bundled() -> tuple[Pack, ...]:
    return tuple(Pack.load(d) for d in sorted(BUNDLED_DIR.iterdir()) if (d / MANIFEST).is_file())


def registered_packs() -> list[Pack]:
    """The user's registered packs, oldest registration first (each loaded and checked).

    Raises:
        ConfigError, DataFormatError: a registered pack is gone or broken (the message names it;
            ``kg-agents pack unregister DIR`` removes it).
    """
    out = []
    for entry in _read_registry():
        try:
            out.append(Pack.load(entry["directory"]))
        except (ConfigError, DataFormatError) as exc:
            raise _unusable(exc, f"the registered pack {entry['directory']}") from exc
    return out


def register_pack(directory: str | os.PathLike[str]) -> Pack:
    """Register the pack in ``directory`` for its KG's fingerprint (replacing a pack registered for the
    same fingerprint, or the same folder registered before); return it.

    Raises:
        ConfigError, DataFormatError: ``directory`` holds no valid pack.
    """
    pack = Pack.load(directory)
    with _LOCK:
        entries = [
            e
            for e in _read_registry()
            if Path(e["directory"]) != pack.directory and e.get("fingerprint") != pack.fingerprint
        ]
        entries.append(
            {
                "directory": str(pack.directory),
                "name": pack.name,
                "fingerprint": pack.fingerprint,
                "triples": pack.triples,
                "registered": datetime.now(UTC).replace(microsecond=0).isoformat(),
            }
        )
        _write_registry(entries)
    return pack


def unregister_pack(directory: str | os.PathLike[str]) -> bool:
    """Remove the pack in ``directory`` from the registry (it may be gone); whether it was there."""
    target = Path(directory).expanduser().resolve()
    with _LOCK:
        entries = _read_registry()
        kept = [e for e in entries if Path(e["directory"]) != target]
        if len(kept) != len(entries):
            _write_registry(kept)
    return len(kept) != len(entries)


def find_pack(kg: Any) -> Pack | None:
    """The pack for ``kg``'s content: a registered one for its fingerprint, else a bundled one, else None.

    Cheap where no pack can match: a store whose edge count is cheap to know (``MemoryKG``, a SPARQL
    store) is fingerprinted only when some pack was built for a KG of that many edges. Where ``kg`` has no
    fingerprint (too large, or no ``iter_triples``) or its store fails while it is read, a
    :class:`PackWarning` says so and there is no pack.

    Raises:
        ConfigError, DataFormatError: the registered pack for ``kg``'s fingerprint is gone or broken.
    """
    entries = _read_registry()
    bundled = bundled_packs()
    counts = {int(e["triples"]) for e in entries if isinstance(e.get("triples"), int)}
    counts |= {p.triples for p in bundled}
    try:
        n = edge_count(kg)
        if n is not None and n not in counts:
            return None
        summary, why = fingerprint_status(kg)
    except KGError as exc:
        warnings.warn(f"pack='auto' found no pack: the KG failed while it was read ({exc})", PackWarning, 2)
        return None
    if summary is None:
        warnings.warn(f"pack='auto' found no pack: {why}; name one with pack=DIR", PackWarning, 2)
        return None
    for entry in reversed(entries):
        if entry.get("fingerprint") == summary.fingerprint:
            try:
                return Pack.load(entry["directory"])
            except (ConfigError, DataFormatError) as exc:
                raise _unusable(exc, f"the pack registered for this KG, {entry['directory']},") from exc
    return next((p for p in bundled if p.fingerprint == summary.fingerprint), None)


def resolve_pack(kg: Any, pack: str | os.PathLike[str] | Pack | None) -> Pack | None:
    """A method's ``pack`` option resolved for ``kg``: ``"auto"`` (:func:`find_pack`), ``"none"`` or None
    (no pack), a pack's folder, or a :class:`Pack` as it is.

    Raises:
        ConfigError: anything else, or a folder that holds no pack.
        DataFormatError: the folder's manifest is broken.
    """
    if pack is None or isinstance(pack, Pack):
        return pack
    if not isinstance(pack, (str, os.PathLike)) or not str(pack).strip():
        raise ConfigError(f"pack must be {PACK_FORMS}, got {pack!r}")
    if pack == "none":
        return None
    if pack == "auto":
        return find_pack(kg)
    return Pack.load(pack)


def pack_record(pack: Pack | None, root: str | os.PathLike[str] | None = None) -> dict[str, str] | None:
    """What a run records of the pack it used (``run.json``'s ``pack``): name, fingerprint and, where it
    travels, folder (:meth:`Pack.record`, relative to ``root``), or None."""
    return pack.record(root) if pack is not None else None
