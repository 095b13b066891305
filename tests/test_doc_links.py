"""Every relative link of the repository's markdown files names a file that exists and, with a ``#fragment``,
a heading of that file (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.MULTILINE | re.DOTALL)
_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.MULTILINE)


def _prose(text: str) -> str:
    """``text`` without its fenced blocks and code spans (a link inside them is not one)."""
    return _CODE.sub("code", _FENCE.sub("", text))


def anchors(text: str) -> set[str]:
    """The anchors GitHub gives the headings of a markdown text (a repeated one gets ``-1``, ``-2``...)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    for heading in _HEADING.findall(_FENCE.sub("", text)):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        found.add(slug if n == 0 else f"{slug}-{n}")
    return found


def broken_links(page: Path) -> list[str]:
    """The relative links of ``page`` whose file or heading does not exist."""
    bad = []
    for target in _LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
            continue
        path, _, fragment = target.partition("#")
        dest = (page.parent / path) if path else page
        if not dest.exists():
            bad.append(f"{target} (no such file)")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest.read_text(encoding="utf-8")):
            bad.append(f"{target} (no such heading)")
    return bad


def _pages() -> list[Path]:
    pages = [ROOT / "README.md", ROOT / "CHANGELOG.md"]
    for folder in ("docs", "benchmarks", "kg_agents"):
        pages += sorted((ROOT / folder).rglob("*.md"))
    return [p for p in pages if p.is_file()]


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    assert broken_links(page) == []


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "other.md").write_text("# Speed: the `model`, and 1M triples\n\n## Speed: the model\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[ok](other.md#speed-the-model-and-1m-triples) [ok](other.md#speed-the-model) [ok](#top)\n"
        "# Top\n[gone](missing.md) [no heading](other.md#speed) [a long\nline](other.md#nope)\n"
        "`[code](missing.md)`\n```\n[fenced](missing.md)\n```\n[web](https://example.org/x#y)\n"
    )
    assert broken_links(page) == [
        "missing.md (no such file)",
        "other.md#speed (no such heading)",
        "other.md#nope (no such heading)",
    ]
