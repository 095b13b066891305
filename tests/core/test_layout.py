"""The package's shape holds: no import cycles (function-level imports included), layers import only
downwards, inference never imports training code, every public module declares ``__all__``, no
private name is imported across modules, and every module imports in a fresh interpreter in
dependency order."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

import kg_agents

ROOT = Path(kg_agents.__file__).resolve().parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The kg_agents module ``name`` refers to (a module, or the package holding an attribute)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> dict[str, list[tuple[str, int]]]:
    """Modules ``module`` imports (anywhere in the file) -> [(imported name, line)]."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    out: dict[str, list[tuple[str, int]]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("kg_agents") and (target := _resolve(a.name)):
                    out.setdefault(target, []).append(("", node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                ).strip(".")
            if not base.startswith("kg_agents"):
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                target = full if full in MODULES else _resolve(base)
                if target:
                    out.setdefault(target, []).append((a.name if target != full else "", node.lineno))
    out.pop(module, None)
    return out


GRAPH = {m: _imports(m) for m in MODULES}


def _deps(module: str) -> set[str]:
    """What ``module`` imports. (A package's ``__init__`` importing its own submodules is the normal
    way to export them, so the implicit parent-package import of a submodule is not an edge.)"""
    return set(GRAPH[module]) - {module}


def test_no_import_cycles():
    sorter = TopologicalSorter({m: _deps(m) for m in MODULES})
    try:
        list(sorter.static_order())
    except CycleError as exc:  # pragma: no cover - the message is the finding
        pytest.fail(f"import cycle: {' -> '.join(exc.args[1])}")


# what lies above core: methods, and what reads them (evaluation, tools, the command line)
_ABOVE_CORE = ("kg_agents.methods", "kg_agents.eval", "kg_agents.tools", "kg_agents.cli")
# layer -> the layers it must not import (package prefixes)
FORBIDDEN = {
    "kg_agents.kg": ("kg_agents.llm", "kg_agents.packs", "kg_agents.core", *_ABOVE_CORE),
    "kg_agents.llm": (
        "kg_agents.specialist",
        "kg_agents.kg",
        "kg_agents.packs",
        "kg_agents.core",
        *_ABOVE_CORE,
    ),
    # a pack knows KGs and files, never what runs its components
    "kg_agents.packs": (
        "kg_agents.llm",
        "kg_agents.core",
        *_ABOVE_CORE,
        "kg_agents.specialist",
        "kg_agents.synth",
    ),
    "kg_agents.core": (*_ABOVE_CORE, "kg_agents.specialist"),
    "kg_agents.eval": ("kg_agents.methods", "kg_agents.tools", "kg_agents.cli", "kg_agents.specialist"),
    "kg_agents.tools": ("kg_agents.methods", "kg_agents.eval", "kg_agents.cli", "kg_agents.specialist"),
    "kg_agents.methods": ("kg_agents.cli", "kg_agents.specialist"),
    "kg_agents.specialist": ("kg_agents.cli",),
    "kg_agents.synth": ("kg_agents.methods", "kg_agents.tools", "kg_agents.cli", "kg_agents.specialist"),
    "kg_agents.files": ("kg_agents.",),
    "kg_agents.errors": ("kg_agents.",),
    "kg_agents.untrusted": ("kg_agents.",),
    "kg_agents.options": ("kg_agents.core", "kg_agents.methods", "kg_agents.kg", "kg_agents.llm"),
}


def _under(module: str, prefix: str) -> bool:
    return (
        module == prefix
        or module.startswith(prefix + ".")
        or (prefix.endswith(".") and module.startswith(prefix))
    )


def test_layers_import_only_downwards():
    bad = []
    for module, deps in GRAPH.items():
        for layer, forbidden in FORBIDDEN.items():
            if not _under(module, layer):
                continue
            for dep in deps:
                if dep == "kg_agents.errors" and layer in ("kg_agents.files", "kg_agents.errors"):
                    continue
                if any(_under(dep, f) for f in forbidden) and dep != module:
                    bad.append(f"{module} imports {dep}")
    assert not bad, "\n".join(sorted(bad))


def test_methods_do_not_import_each_other_and_inference_never_imports_training():
    bad = []
    for module, deps in GRAPH.items():
        if not module.startswith("kg_agents.methods."):
            continue
        home = ".".join(module.split(".")[:3])
        for dep in deps:
            if dep.startswith("kg_agents.methods.") and not _under(dep, home):
                bad.append(f"{module} imports another method's {dep}")
            training = dep.endswith(".train") or dep.endswith(".build_tries")
            if training and not (module.endswith(".train") or module.endswith(".build_tries")):
                bad.append(f"{module} (inference) imports training code {dep}")
    assert not bad, "\n".join(sorted(bad))


def test_every_public_module_declares_all():
    missing = [
        m
        for m, p in MODULES.items()
        if not any(part.startswith("_") and part != "__init__" for part in p.relative_to(ROOT).parts)
        and m != "kg_agents.cli.__main__"
        and m != "kg_agents.core"
        and "__all__" not in p.read_text(encoding="utf-8")
    ]
    assert not missing, f"modules without __all__: {missing}"


def test_no_private_name_is_imported_across_modules():
    bad = [
        f"{m}:{line} imports {name} from {dep}"
        for m, deps in GRAPH.items()
        for dep, names in deps.items()
        for name, line in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert not bad, "\n".join(bad)


def test_every_module_imports_in_a_fresh_interpreter_in_dependency_order():
    order = [
        m
        for m in TopologicalSorter({m: _deps(m) for m in MODULES}).static_order()
        if not m.endswith("__main__")
    ]
    code = (
        "import importlib, json, sys\n"
        f"order = json.loads({json.dumps(json.dumps(order))})\n"
        "failed = []\n"
        "for m in order:\n"
        "    try:\n"
        "        importlib.import_module(m)\n"
        "    except Exception as exc:\n"
        "        failed.append(f'{m}: {type(exc).__name__}: {exc}')\n"
        "print(json.dumps(failed))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT.parent, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
