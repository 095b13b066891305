"""Docstrings say what the code does, not what it scored: measured figures live in the docs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "kg_agents"

#: A score word and a figure in (0, 1) with two or three decimals, in either order, a sentence apart at most.
SCORE = re.compile(
    r"(?i)(hits@1|\bf1\b|accuracy|right on|scored)[^;]{0,60}?\b0\.\d{2,3}\b"
    r"|\b0\.\d{2,3}\b[^;]{0,40}?(hits@1|\bf1\b|accuracy)"
)


def prose(doc: str) -> str:
    """``doc`` without its doctest blocks (an example's input and the output after it), on one line."""
    kept, in_example = [], False
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped.startswith((">>>", "...")):
            in_example = True
            continue
        if in_example and stripped:
            continue
        in_example = False
        kept.append(stripped)
    return " ".join(kept)


def scored_docstrings(root: Path) -> list[str]:
    """``file:name: text`` of every module, class or function docstring under ``root`` that states a
    score."""
    found = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            doc = ast.get_docstring(node)
            match = SCORE.search(prose(doc)) if doc else None
            if match:
                name = getattr(node, "name", "<module>")
                found.append(f"{path.relative_to(root.parent)}:{name}: {match[0]}")
    return found


def test_no_docstring_states_a_score() -> None:
    assert scored_docstrings(PACKAGE) == []


def test_the_check_finds_a_score(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(
        'def f():\n    """The depth.\n\n    It is right on 0.32 to 0.76 of people\'s questions.\n    """\n'
        'def g():\n    """Ranks.\n\n    Example:\n        >>> g()\n        hits@1 0.960\n    """\n'
        'def h():\n    """Reached 0.893 Hits@1 on validation."""\n',
        encoding="utf-8",
    )
    assert [line.split(":")[1] for line in scored_docstrings(tmp_path)] == ["f", "h"]
