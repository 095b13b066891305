"""A KG pack: a folder whose manifest ``pack.json`` names a knowledge graph by its content fingerprint,
the trained components for it, and what each changes in the methods' routes.

The manifest (format ``kg-agents-pack/1``)::

    {"format": "kg-agents-pack/1",
     "name": "metaqa",
     "kg": {"fingerprint": "0d0d...", "triples": 133582, "entities": 43234, "relations": 9,
            "source": "where the graph came from"},
     "components": {"hop_classifier": {"path": "hops", "record": {...}, "validation": {...}}, ...},
     "routes": {"graph_explore": {"hops": "predict", "adapter": "specialist.graph_explore",
                                  "summary": "one sentence"}, ...},
     "created": "2025-01-01T00:00:00+00:00",
     "stages": {...}}

A component's ``path`` is relative to the pack's folder and stays inside it, or, with the prefix
``package:``, relative to the installed ``kg_agents`` package (how the bundled MetaQA pack points at the
checkpoints shipped with the methods). Its ``record`` is its training record (``headline``: one line for
``kg-agents pack show``), its ``validation`` the figures measured for it. Component names are a fixed
vocabulary (:data:`COMPONENTS`).

``routes`` maps a method to what the pack changes in its route: option names and the value their
``"auto"`` takes with this pack, and a ``summary`` sentence. ``"predict"`` and ``"chain"`` for a hop option
(``hops``, ``answer_hops``) are read by the methods: their ``"auto"`` follows the pack's hop classifier, or
the length of the relation chain closest to the question; a value naming a component says which one the
method runs, and ``"none"`` for a method's chat-model adapter (``adapter``, gcr's ``general_adapter``) that
its chat model runs with no adapter with this pack (:meth:`Pack.specialist_for`).

Example:
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "hops").mkdir()
    >>> m = PackManifest("mine", {"fingerprint": "ab" * 16, "triples": 2, "entities": 3, "relations": 1})
    >>> m.add_component(HOP_CLASSIFIER, "hops", record={"headline": "trained"}, validation={"accuracy": 0.9})
    >>> m.set_route("graph_explore", "the walk's length is predicted", hops="predict")
    >>> _ = write_manifest(d, m)
    >>> Pack.load(d).component_path(HOP_CLASSIFIER) == (d / "hops").resolve()
    True
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.files import PACKAGE_PREFIX, PACKAGE_ROOT, atomic_write, portable_path

__all__ = [
    "CHAIN",
    "CHAT_ADAPTER_OPTIONS",
    "COMPONENTS",
    "DUALR",
    "GCR_PATH_GENERATOR",
    "HOP_CLASSIFIER",
    "MANIFEST",
    "NO_ADAPTER",
    "PACKAGE_PREFIX",
    "PACKAGE_ROOT",
    "PACK_FORMAT",
    "PREDICT",
    "SPECIALIST",
    "SPECIALIST_METHODS",
    "Pack",
    "PackManifest",
    "write_manifest",
]

#: The manifest's file name and format tag.
MANIFEST = "pack.json"
PACK_FORMAT = "kg-agents-pack/1"
# A component path with the prefix PACKAGE_PREFIX ("package:") is relative to the installed kg_agents
# package, PACKAGE_ROOT (kg_agents.files).

#: The hop classifier (``kg_agents.core.hops.HopClassifier`` checkpoint folder).
HOP_CLASSIFIER = "hop_classifier"
#: dualr's GNN explorer checkpoint (a ``.pt`` file).
DUALR = "dualr"
#: gcr's LoRA path generator (an adapter folder from ``kg-agents train gcr``).
GCR_PATH_GENERATOR = "gcr_path_generator"
#: The shared specialist adapter of the embedded chat model (``kg-agents train specialist``).
SPECIALIST = "specialist"
#: The methods with a specialist of their own (``specialist.<method>``; gcr's is its general reasoner's).
SPECIALIST_METHODS = ("gcr", "graph_agent", "graph_explore", "knowledge_navigator")
#: Every component name a manifest may hold.
COMPONENTS = (
    DUALR,
    GCR_PATH_GENERATOR,
    HOP_CLASSIFIER,
    SPECIALIST,
    *(f"{SPECIALIST}.{m}" for m in SPECIALIST_METHODS),
)
#: The option that holds a method's chat-model adapter where it is not ``adapter``: gcr's ``adapter`` is its
#: path decoder's (the KG-specialised path generator), ``general_adapter`` its general reasoner's.
CHAT_ADAPTER_OPTIONS = {"gcr": "general_adapter"}
#: The route value of a method's chat-model adapter option saying that with this pack the method's chat
#: model runs with no adapter (the zero-shot model), though the pack has a specialist.
NO_ADAPTER = "none"
#: The route value of a hop option whose ``"auto"`` follows the pack's hop classifier.
PREDICT = "predict"
#: The route value of a hop option whose ``"auto"`` takes the length of the relation chain closest to the
#: question (:func:`kg_agents.core.hops.chain_hops`; no component needed).
CHAIN = "chain"
_KG_KEYS = ("fingerprint", "triples", "entities", "relations")


def _now() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat()


@dataclass
class PackManifest:
    """A pack's manifest, built one component at a time (what ``kg-agents specialise`` writes).

    Args:
        name: the pack's name.
        kg: ``fingerprint``, ``triples``, ``entities``, ``relations`` (see
            :func:`~kg_agents.packs.fingerprint.kg_summary`) and ``source`` (a description).
        components: name -> ``{"path", "record", "validation"}``.
        routes: method -> option values and a ``summary`` sentence.
        created: when the pack was begun (ISO 8601).
        stages: the builder's own bookkeeping (what is done, to resume after a kill).
    """

    name: str
    kg: dict[str, Any]
    components: dict[str, dict[str, Any]] = field(default_factory=dict)
    routes: dict[str, dict[str, Any]] = field(default_factory=dict)
    created: str = field(default_factory=_now)
    stages: dict[str, Any] = field(default_factory=dict)

    def add_component(
        self,
        name: str,
        path: str | os.PathLike[str],
        *,
        record: Mapping[str, Any] | None = None,
        validation: Mapping[str, Any] | None = None,
    ) -> None:
        """Add (or replace) the component ``name`` at ``path`` (relative to the pack's folder, or
        ``package:...``) with its training record and validation figures.

        Raises:
            ConfigError: an unknown component name or a path that is absolute.
        """
        if name not in COMPONENTS:
            raise ConfigError(f"unknown pack component {name!r}; valid: {', '.join(COMPONENTS)}")
        text = Path(path).as_posix() if not isinstance(path, str) else path
        if Path(text).is_absolute():
            raise ConfigError(f"component {name!r}: give its path relative to the pack's folder, not {text}")
        self.components[name] = {
            "path": text,
            "record": dict(record or {}),
            "validation": dict(validation or {}),
        }

    def set_route(self, method: str, summary: str, **changes: str | int | float | bool) -> None:
        """Say what the pack changes in ``method``'s route: ``changes`` (option -> what its ``"auto"``
        becomes) and a ``summary`` sentence."""
        self.routes[method] = {**changes, "summary": summary}

    def to_json(self) -> dict[str, Any]:
        """The manifest as JSON data."""
        return {
            "format": PACK_FORMAT,
            "name": self.name,
            "kg": dict(self.kg),
            "components": {k: dict(v) for k, v in self.components.items()},
            "routes": {k: dict(v) for k, v in self.routes.items()},
            "created": self.created,
            "stages": dict(self.stages),
        }

    @classmethod
    def from_json(cls, data: Any, where: str = MANIFEST) -> PackManifest:
        """The manifest in ``data`` checked (``where`` names it in errors).

        Raises:
            DataFormatError: a missing or ill-typed field, another format, an unknown component name, a
                route that is not a mapping of short values with a ``summary``, or a route naming a
                component the pack does not have.
        """

        def bad(reason: str) -> DataFormatError:
            return DataFormatError(where, None, reason)

        if not isinstance(data, dict):
            raise bad("a pack manifest is a JSON object")
        if data.get("format") != PACK_FORMAT:
            raise bad(f"format must be {PACK_FORMAT!r}, got {data.get('format')!r}")
        name, kg = data.get("name"), data.get("kg")
        if not isinstance(name, str) or not name.strip():
            raise bad("name must be a non-empty string")
        if not isinstance(kg, dict) or not isinstance(kg.get("fingerprint"), str) or not kg["fingerprint"]:
            raise bad('kg must be an object with a "fingerprint" string')
        for key in _KG_KEYS[1:]:
            if not isinstance(kg.get(key), int) or isinstance(kg.get(key), bool) or kg[key] < 0:
                raise bad(f"kg.{key} must be a non-negative integer, got {kg.get(key)!r}")
        components = data.get("components", {})
        routes = data.get("routes", {})
        stages = data.get("stages", {})
        if not isinstance(components, dict) or not isinstance(routes, dict) or not isinstance(stages, dict):
            raise bad("components, routes and stages must be JSON objects")
        for cname, comp in components.items():
            if cname not in COMPONENTS:
                raise bad(f"unknown component {cname!r}; valid: {', '.join(COMPONENTS)}")
            if not isinstance(comp, dict) or not isinstance(comp.get("path"), str) or not comp["path"]:
                raise bad(f'component {cname!r} needs a "path" string')
            for key in ("record", "validation"):
                if not isinstance(comp.get(key, {}), dict):
                    raise bad(f"component {cname!r}: {key} must be a JSON object")
        for method, route in routes.items():
            if not isinstance(route, dict) or not isinstance(route.get("summary"), str):
                raise bad(f'route of {method!r} must be an object with a "summary" sentence')
            for key, value in route.items():
                if not isinstance(value, (str, int, float, bool)):
                    raise bad(f"route of {method!r}: {key} must be a short value, got {value!r}")
                if key == "summary":
                    continue
                if value == PREDICT and HOP_CLASSIFIER not in components:
                    raise bad(f"route of {method!r}: {key}={PREDICT} needs a {HOP_CLASSIFIER} component")
                if isinstance(value, str) and value in COMPONENTS and value not in components:
                    raise bad(f"route of {method!r}: {key} names {value!r}, which the pack does not have")
        created = data.get("created", "")
        return cls(
            name,
            dict(kg),
            {k: _component(v) for k, v in components.items()},
            {k: dict(v) for k, v in routes.items()},
            created if isinstance(created, str) else str(created),
            dict(stages),
        )

    @classmethod
    def read(cls, directory: str | os.PathLike[str]) -> PackManifest:
        """The manifest of the pack in ``directory`` (to add components to it and write it again).

        Raises:
            ConfigError: no ``pack.json`` there.
            DataFormatError: it is not valid JSON or not a manifest.
        """
        path = Path(directory) / MANIFEST
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError(
                f"{directory} is not a KG pack (no {MANIFEST} there); build one with `kg-agents specialise`"
            ) from None
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataFormatError(str(path), exc.lineno, f"not valid JSON: {exc.msg}") from exc
        return cls.from_json(data, str(path))


def _component(comp: dict[str, Any]) -> dict[str, Any]:
    """A component's entry with its keys in order (path, record, validation, then any others)."""
    first = {"path": comp["path"], "record": comp.get("record", {}), "validation": comp.get("validation", {})}
    return first | {k: v for k, v in comp.items() if k not in first}


def _resolve(directory: Path, name: str, text: str, where: str) -> Path:
    """The file or folder of a component, checked to exist inside the pack (or the package)."""
    if text.startswith(PACKAGE_PREFIX):
        base, rel = PACKAGE_ROOT, text[len(PACKAGE_PREFIX) :]
    else:
        base, rel = directory.resolve(), text
    if Path(rel).is_absolute():
        raise DataFormatError(where, None, f"component {name!r}: path {text!r} must be relative")
    path = (base / rel).resolve()
    if not path.is_relative_to(base):
        inside = "the kg_agents package" if base is PACKAGE_ROOT else "the pack's folder"
        raise DataFormatError(where, None, f"component {name!r}: path {text!r} leads outside {inside}")
    if not path.exists():
        raise DataFormatError(where, None, f"component {name!r}: nothing at {text!r} ({path})")
    return path


def write_manifest(directory: str | os.PathLike[str], manifest: PackManifest | Mapping[str, Any]) -> Path:
    """Write ``manifest`` as ``directory/pack.json``, whole or not at all; return its path.

    Call it again after each component is added: every component's path must exist when it is written.

    Raises:
        DataFormatError: the manifest is not valid, or a component's path is missing or leads outside
            the pack's folder.
    """
    d = Path(directory)
    where = str(d / MANIFEST)
    data = manifest.to_json() if isinstance(manifest, PackManifest) else dict(manifest)
    checked = PackManifest.from_json(data, where)
    for name, comp in checked.components.items():
        _resolve(d, name, comp["path"], where)
    d.mkdir(parents=True, exist_ok=True)
    atomic_write(d / MANIFEST, json.dumps(checked.to_json(), indent=2, ensure_ascii=False) + "\n")
    return d / MANIFEST


@dataclass(frozen=True)
class Pack:
    """A loaded pack: its folder, its checked manifest and its components' resolved paths.

    Load one with :meth:`load`; :func:`~kg_agents.packs.registry.resolve_pack` finds the one for a KG.
    """

    directory: Path
    manifest: PackManifest
    paths: Mapping[str, Path]

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> Pack:
        """The pack in ``directory``.

        ``directory`` may name a folder inside the installed package as ``package:<path>`` (as a run's
        record of a bundled pack does, :meth:`record`).

        Raises:
            ConfigError: no ``pack.json`` there.
            DataFormatError: the manifest is not valid JSON or not a manifest, or a component's path is
                missing or leads outside the pack's folder.
        """
        text = os.fspath(directory)
        if text.startswith(PACKAGE_PREFIX):
            d = (PACKAGE_ROOT / text[len(PACKAGE_PREFIX) :]).resolve()
        else:
            d = Path(text).expanduser().resolve()
        manifest = PackManifest.read(d)
        where = str(d / MANIFEST)
        paths = {n: _resolve(d, n, c["path"], where) for n, c in manifest.components.items()}
        return cls(d, manifest, paths)

    def __repr__(self) -> str:
        return f"Pack({self.name!r}, {str(self.directory)!r}, components={sorted(self.paths)})"

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def fingerprint(self) -> str:
        """The fingerprint of the KG the pack was built for."""
        return str(self.manifest.kg["fingerprint"])

    @property
    def triples(self) -> int:
        """The number of edges of the pack's KG."""
        return int(self.manifest.kg["triples"])

    @property
    def routes(self) -> Mapping[str, Mapping[str, Any]]:
        """Method -> what the pack changes in its route (option values and a ``summary``)."""
        return self.manifest.routes

    def route(self, method: str) -> Mapping[str, Any]:
        """What the pack changes in ``method``'s route (empty when nothing)."""
        return self.manifest.routes.get(method, {})

    def predicts(self, method: str, option: str = "hops") -> bool:
        """Whether ``method``'s ``option`` set to ``"auto"`` follows the pack's hop classifier."""
        return self.route(method).get(option) == PREDICT and HOP_CLASSIFIER in self.paths

    def auto_hops(self, method: str, option: str = "hops") -> bool | str:
        """What ``method``'s ``option`` set to ``"auto"`` follows with this pack: True for the pack's hop
        classifier (:meth:`predicts`), :data:`CHAIN` for the relation chain closest to the question,
        False for nothing."""
        if self.predicts(method, option):
            return True
        return CHAIN if self.route(method).get(option) == CHAIN else False

    def component_path(self, name: str) -> Path | None:
        """The file or folder of component ``name``, or None when the pack has none.

        Raises:
            ConfigError: ``name`` is not a component name.
        """
        if name not in COMPONENTS:
            raise ConfigError(f"unknown pack component {name!r}; valid: {', '.join(COMPONENTS)}")
        return self.paths.get(name)

    def specialist_for(self, method: str | None) -> Path | None:
        """The specialist adapter ``method`` runs with this pack: the one its route names for its chat
        model (the route's ``adapter``, gcr's ``general_adapter``: :data:`CHAT_ADAPTER_OPTIONS`), None
        where the route says :data:`NO_ADAPTER`; where the route names none, the method's own
        (``specialist.<method>``), else the shared one, else None.

        Example:
            >>> from kg_agents.packs import bundled_packs
            >>> bundled_packs()[0].specialist_for("gcr").name
            'metaqa-gcr'
        """
        if method:
            named = self.route(method).get(CHAT_ADAPTER_OPTIONS.get(method, "adapter"))
            if named == NO_ADAPTER:
                return None
            if isinstance(named, str) and named in self.paths and named.startswith(SPECIALIST):
                return self.paths[named]
        own = self.paths.get(f"{SPECIALIST}.{method}") if method else None
        return own if own is not None else self.paths.get(SPECIALIST)

    def record(self, root: str | os.PathLike[str] | None = None) -> dict[str, str]:
        """What a run records of the pack, in terms that hold on another machine: its name, the KG's
        fingerprint and, where it has one that travels, its folder (``directory``): ``package:<path>`` for
        a pack inside the installed package (the bundled ones; :meth:`load` takes it back), else relative
        to ``root`` when the folder lies below it. Elsewhere the record has no folder: the name and the
        fingerprint stand for the pack (``pack="auto"`` finds a registered pack by fingerprint).

        Example:
            >>> from kg_agents.packs import bundled_packs
            >>> bundled_packs()[0].record()["directory"]
            'package:packs/bundled/metaqa'
        """
        out = {"name": self.name, "fingerprint": self.fingerprint}
        folder = portable_path(self.directory, root)
        return out if folder is None else {**out, "directory": folder}
