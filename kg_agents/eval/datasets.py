"""KGQA datasets: MetaQA, PathQuestion, a WebQSP sample, and a generic triples + JSONL format.

Every loader returns a :class:`Dataset` of :class:`Question` s. A dataset names the knowledge graph
its questions are asked over (a spec for :func:`~kg_agents.kg.open_kg`, a KG, or a factory); a
question may carry its own graph instead (WebQSP: one Freebase subgraph per question), and
:meth:`Dataset.kg_for` gives the right KG for any question.

Files are read completely and validated before a dataset is returned: a malformed line raises
:class:`~kg_agents.errors.DataFormatError` naming the file and the line, and nothing half-loaded
is ever returned.

**MetaQA splits.** Only MetaQA's dev questions are bundled (see ``kg_agents/data/README.md``), so
``train`` and ``validation`` are a seeded 80/20 split of the dev file of each hop:

1. every line (0-based index ``i``) gets the key ``blake2b(f"{seed}:{i}", digest_size=8)`` read as
   a big-endian integer;
2. lines are ordered by key (ties, which do not occur in practice, by ``i``); the first
   ``n * 4 // 5`` are ``train``, the rest ``validation``;
3. ``limit`` keeps the first ``limit`` questions of the split in that same key order (a seeded
   uniform sample, and ``limit=100`` is a subset of ``limit=200``); the kept questions are returned
   in file order.

Only hashlib and integer arithmetic are involved, so the split is the same on every Python
version and platform. ``split="dev"`` is the whole file (``limit`` samples it the same way).
The same procedure splits PathQuestion and generic datasets when asked for ``train``/``validation``.
"""

from __future__ import annotations

from collections.abc import Callable

from kg_agents.errors import ConfigError
from kg_agents.eval.data_core import (
    SPLITS,
    Dataset,
    KGSpec,
    Question,
    load_jsonl_questions,
    read_lines,
    split_indices,
)
from kg_agents.eval.data_metaqa import load_metaqa, load_metaqa_file, metaqa_all_hops, parse_metaqa_line
from kg_agents.eval.data_pathquestion import (
    PATHQUESTION_SETS,
    load_pathquestion,
    load_pathquestion_file,
    parse_pathquestion_answer,
    parse_pathquestion_path,
)
from kg_agents.eval.data_webqsp import SubgraphFactory, load_webqsp_sample, load_webqsp_whole
from kg_agents.eval.data_whole import load_metaqa_whole

__all__ = [
    "DATASETS",
    "PATHQUESTION_SETS",
    "SPLITS",
    "Dataset",
    "KGSpec",
    "Question",
    "SubgraphFactory",
    "get_dataset",
    "load_jsonl_questions",
    "load_metaqa",
    "load_metaqa_file",
    "load_metaqa_whole",
    "load_pathquestion",
    "load_pathquestion_file",
    "load_webqsp_sample",
    "load_webqsp_whole",
    "metaqa_all_hops",
    "parse_metaqa_line",
    "parse_pathquestion_answer",
    "parse_pathquestion_path",
    "read_lines",
    "split_indices",
]


# ---------------------------------------------------------------------------- registry
def _registry() -> dict[str, Callable[..., Dataset]]:
    reg: dict[str, Callable[..., Dataset]] = {}
    for h in (1, 2, 3):
        reg[f"metaqa-{h}hop"] = lambda split, seed, limit, h=h: load_metaqa(h, split, seed=seed, limit=limit)
    for variant in PATHQUESTION_SETS:
        reg[f"pathquestion-{variant}"] = lambda split, seed, limit, v=variant: load_pathquestion(
            v, split, seed=seed, limit=limit
        )
    reg["metaqa-whole"] = lambda split, seed, limit: load_metaqa_whole(split, seed=seed, limit=limit)
    reg["webqsp-sample"] = _webqsp_entry
    reg["webqsp-sample-whole"] = _webqsp_whole_entry
    return reg


def _webqsp_entry(split: str, seed: int, limit: int | None) -> Dataset:
    if split != "dev":
        raise ConfigError("webqsp-sample has no train/validation split; use split='dev'")
    return load_webqsp_sample(limit=limit)


def _webqsp_whole_entry(split: str, seed: int, limit: int | None) -> Dataset:
    if split != "dev":
        raise ConfigError("webqsp-sample-whole has no train/validation split; use split='dev'")
    return load_webqsp_whole(limit=limit)


DATASETS: tuple[str, ...] = tuple(_registry())


def get_dataset(name: str, split: str = "dev", *, seed: int = 0, limit: int | None = None) -> Dataset:
    """A bundled dataset by name.

    Names: ``metaqa-1hop``, ``metaqa-2hop``, ``metaqa-3hop``, ``pathquestion-pq-2h``,
    ``pathquestion-pq-3h``, ``pathquestion-pql-2h``, ``pathquestion-pql-3h``,
    ``pathquestion-pql-3h-more``, ``webqsp-sample``; and the whole-answer sets ``metaqa-whole``
    (conjunctions and constraints, :mod:`kg_agents.eval.data_whole`) and ``webqsp-sample-whole``.

    Args:
        name: a registry name (see :data:`DATASETS`).
        split: ``dev``, ``train`` or ``validation`` (see :func:`split_indices`).
        seed: split seed.
        limit: at most this many questions.

    Raises:
        ConfigError: an unknown name or split (the message lists the valid ones).

    Example:
        >>> ds = get_dataset("pathquestion-pq-2h", split="train", limit=5)
        >>> len(ds), ds.kg, ds[0].meta["gold_path"].start == ds[0].topic_entities[0]
        (5, 'pq-2h', True)
    """
    reg = _registry()
    if name not in reg:
        raise ConfigError(f"unknown dataset {name!r}; valid: {', '.join(reg)}")
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")
    return reg[name](split, seed, limit)
