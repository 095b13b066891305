"""Bundled benchmark data (MetaQA KG and dev questions, PathQuestion, a WebQSP sample).

See ``kg_agents/data/README.md`` for provenance and licences.
"""

from __future__ import annotations

from pathlib import Path

DATA_DIR = Path(__file__).resolve().parent

#: Bundled knowledge graphs by name: (relative file, format).
BUNDLED_KGS: dict[str, tuple[str, str]] = {
    "metaqa": ("metaqa/kb.txt.gz", "metaqa"),
    "pq-2h": ("pathquestion/2H-kb.txt.gz", "tsv"),
    "pq-3h": ("pathquestion/3H-kb.txt.gz", "tsv"),
    "pql-2h": ("pathquestion/PQL2-KB.txt.gz", "tsv"),
    "pql-3h": ("pathquestion/PQL3-KB.txt.gz", "tsv"),
}


def data_path(relative: str) -> Path:
    """Absolute path of a bundled data file."""
    return DATA_DIR / relative
