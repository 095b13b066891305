"""Fixtures of the CLI tests."""

from __future__ import annotations

import pytest

from kg_agents.kg.testing import CONTRACT_TRIPLES


@pytest.fixture
def kg_file(tmp_path):
    """The contract KG as a TSV triples file (what ``--kg FILE`` reads)."""
    f = tmp_path / "kb.tsv"
    f.write_text("".join(f"{h}\t{r}\t{t}\n" for h, r, t in CONTRACT_TRIPLES), encoding="utf-8")
    return str(f)
