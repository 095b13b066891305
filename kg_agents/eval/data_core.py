"""The dataset record types, the seeded split, and file reading shared by every loader.

:class:`Question` and :class:`Dataset` are what every loader returns (see :mod:`kg_agents.eval.datasets`
for the loaders and the registry); :func:`split_indices` is the one seeded train/validation split; files
are read whole and checked before anything is returned (a bad line raises
:class:`~kg_agents.errors.DataFormatError` naming the file and the line).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import IO, Any, TypeVar

from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.kg.base import KnowledgeGraph
from kg_agents.kg.text import unbracket

__all__ = [
    "SPLITS",
    "Dataset",
    "KGSpec",
    "Question",
    "load_jsonl_questions",
    "read_content_lines",
    "read_lines",
    "split_dataset",
    "split_indices",
]

KGSpec = str | KnowledgeGraph | Callable[[], KnowledgeGraph]
Row = TypeVar("Row")

#: Valid ``split`` values.
SPLITS = ("dev", "train", "validation")
#: Share of a file that goes to ``train``: ``n * TRAIN_NUM // TRAIN_DEN``.
TRAIN_NUM, TRAIN_DEN = 4, 5


@dataclass
class Question:
    """One question with its gold answers.

    Attributes:
        id: unique within its dataset (e.g. ``metaqa-1hop-dev-17``).
        question: the text as given (MetaQA keeps its ``[topic entity]`` brackets).
        answers: gold answer entity ids (PathQuestion: the answer and its aliases).
        topic_entities: gold topic entity ids, or None when the dataset has none.
        hops: reasoning hops when known.
        qtype: question type when known (MetaQA: ``actor_to_movie`` ...).
        meta: anything else (``source``, ``line``; PathQuestion ``gold_path``: a :class:`Path`).
        kg: a factory of this question's own knowledge graph, or None when the question is
            asked over its dataset's KG (use :meth:`Dataset.kg_for`).
    """

    id: str
    question: str
    answers: list[str]
    topic_entities: list[str] | None = None
    hops: int | None = None
    qtype: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    kg: Callable[[], KnowledgeGraph] | None = field(default=None, repr=False, compare=False)

    @property
    def plain_question(self) -> str:
        """The question with MetaQA's topic brackets removed."""
        return unbracket(self.question)


@dataclass
class Dataset:
    """A named list of questions and the knowledge graph they are asked over.

    Attributes:
        name: registry name (``metaqa-1hop``) or a file name.
        questions: the questions, in file order.
        kg: what :meth:`kg_for` opens for questions without their own graph: an
            :func:`~kg_agents.kg.open_kg` spec (``"metaqa"``, a file path, a SPARQL URL), a KG, a
            zero-argument factory, or None when every question carries its own graph.
        split: ``dev``, ``train`` or ``validation`` (None for datasets without splits).
        meta: provenance (source files, seed, sizes before ``limit``).

    Example:
        >>> from kg_agents.eval.datasets import get_dataset
        >>> ds = get_dataset("metaqa-1hop", split="validation", limit=3)
        >>> len(ds), ds.kg
        (3, 'metaqa')
        >>> ds.kg_for(ds[0]).name
        'metaqa'
    """

    name: str
    questions: list[Question]
    kg: KGSpec | None = None
    split: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    _kg_cache: dict[str, KnowledgeGraph] = field(default_factory=dict, init=False, repr=False, compare=False)
    _default_kg: KnowledgeGraph | None = field(default=None, init=False, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.questions)

    def __iter__(self) -> Iterator[Question]:
        return iter(self.questions)

    def __getitem__(self, i: int) -> Question:
        return self.questions[i]

    def __repr__(self) -> str:
        kg = self.kg if isinstance(self.kg, str) or self.kg is None else type(self.kg).__name__
        return f"Dataset(name={self.name!r}, split={self.split!r}, questions={len(self)}, kg={kg!r})"

    def kg_for(self, question: Question) -> KnowledgeGraph:
        """The knowledge graph ``question`` is asked over.

        A question's own graph (``question.kg``) wins; otherwise the dataset's KG, opened once.
        The last few per-question graphs are kept, so asking twice costs nothing.

        Raises:
            ConfigError: neither the question nor the dataset names a KG.
        """
        if question.kg is not None:
            kg = self._kg_cache.get(question.id)
            if kg is None:
                kg = question.kg()
                if len(self._kg_cache) >= 8:
                    self._kg_cache.pop(next(iter(self._kg_cache)))
                self._kg_cache[question.id] = kg
            return kg
        return self.default_kg()

    def default_kg(self) -> KnowledgeGraph:
        """The dataset's own KG (opened once)."""
        from kg_agents.kg import open_kg

        if self.kg is None:
            raise ConfigError(f"dataset {self.name!r} has no shared KG: each question carries its own graph")
        if self._default_kg is None:
            if isinstance(self.kg, str):
                self._default_kg = open_kg(self.kg)
            elif callable(self.kg) and not isinstance(self.kg, KnowledgeGraph):
                self._default_kg = self.kg()
            else:
                self._default_kg = self.kg
        return self._default_kg


# ---------------------------------------------------------------------------- splits
def _split_key(seed: int, i: int) -> int:
    return int.from_bytes(hashlib.blake2b(f"{seed}:{i}".encode(), digest_size=8).digest(), "big")


def split_indices(n: int, split: str, *, seed: int = 0, limit: int | None = None) -> list[int]:
    """Line indices (0-based, in file order) of ``split`` of an ``n``-line file.

    See the module docstring for the exact procedure.

    Args:
        n: number of items.
        split: ``dev`` (all), ``train`` (80%) or ``validation`` (20%).
        seed: split seed.
        limit: keep at most this many, a seeded sample of the split.

    Example:
        >>> tr, va = split_indices(10, "train"), split_indices(10, "validation")
        >>> len(tr), len(va), sorted(tr + va) == list(range(10))
        (8, 2, True)
    """
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}; valid: {', '.join(SPLITS)}")
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ConfigError(f"limit must be a non-negative int or None, got {limit!r}")
    order = sorted(range(n), key=lambda i: (_split_key(seed, i), i))
    n_train = n * TRAIN_NUM // TRAIN_DEN
    chosen = {"dev": order, "train": order[:n_train], "validation": order[n_train:]}[split]
    if limit is not None:
        chosen = chosen[:limit]
    return sorted(chosen)


# ---------------------------------------------------------------------------- reading
def _open_text(path: FsPath) -> IO[str]:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def read_lines(path: str | FsPath) -> list[str]:
    """All lines of a text file (gzip allowed), without line ends; errors name the file."""
    p = FsPath(path)
    if not p.exists():
        raise FileNotFoundError(f"no such dataset file: {p}")
    try:
        with _open_text(p) as fh:
            return [line.rstrip("\r\n") for line in fh]
    except UnicodeDecodeError as exc:
        raise DataFormatError(str(p), None, f"not UTF-8 text: {exc}") from exc
    except (OSError, EOFError) as exc:  # gzip.BadGzipFile is an OSError
        raise DataFormatError(str(p), None, f"cannot read: {exc}") from exc


def read_content_lines(path: str | FsPath) -> list[str]:
    """:func:`read_lines` without the blank lines that end the file."""
    lines = read_lines(path)
    while lines and not lines[-1].strip():
        lines.pop()
    return lines


def split_dataset(
    source: FsPath,
    rows: Sequence[Row],
    question: Callable[[int, Row], Question],
    *,
    name: str,
    kg: KGSpec | None,
    split: str,
    seed: int,
    limit: int | None,
) -> Dataset:
    """The dataset of the rows of ``source`` that :func:`split_indices` keeps, each made a question by
    ``question(its index, row)``; its meta names the file, the seed, the number of rows and the limit."""
    questions = [question(i, rows[i]) for i in split_indices(len(rows), split, seed=seed, limit=limit)]
    meta = {"source": str(source), "seed": seed, "lines": len(rows), "limit": limit}
    return Dataset(name=name, questions=questions, kg=kg, split=split, meta=meta)


def check_int(name: str, value: Any, allowed: Sequence[int]) -> int:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return int(value)


# ---------------------------------------------------------------------------- generic
def load_jsonl_questions(
    path: str | FsPath,
    *,
    kg: KGSpec | None,
    split: str = "dev",
    seed: int = 0,
    limit: int | None = None,
    name: str | None = None,
) -> Dataset:
    """Generic questions: one JSON object a line over a KG (e.g. a triples file).

    Each line: ``{"id": str, "question": str, "answers": [str, ...], "topic_entities": [str, ...]}``
    (``topic_entities`` optional or null; optional ``hops`` int, ``qtype`` str; other keys go to
    ``meta``). Ids must be unique.

    Args:
        path: the JSONL file (gzip allowed).
        kg: the KG spec for :func:`~kg_agents.kg.open_kg` (e.g. the triples file path), a KG or a
            factory.
        split, seed, limit: see :func:`split_indices`.
        name: dataset name (default: the file name).

    Raises:
        DataFormatError: invalid JSON, a missing or mistyped field, or a duplicate id.

    Example:
        >>> import json, tempfile, os
        >>> d = tempfile.mkdtemp()
        >>> _ = open(os.path.join(d, "kb.tsv"), "w").write("Splash\\twritten_by\\tBabaloo Mandel\\n")
        >>> q = {"id": "q1", "question": "who wrote Splash", "answers": ["Babaloo Mandel"]}
        >>> _ = open(os.path.join(d, "q.jsonl"), "w").write(json.dumps(q) + "\\n")
        >>> ds = load_jsonl_questions(os.path.join(d, "q.jsonl"), kg=os.path.join(d, "kb.tsv"))
        >>> ds[0].answers, len(ds.default_kg())
        (['Babaloo Mandel'], 1)
    """
    p = FsPath(path)
    name = name or p.name.split(".")[0]
    parsed: list[Question] = []
    seen: set[str] = set()
    known = {"id", "question", "answers", "topic_entities", "hops", "qtype"}
    for n, line in enumerate(read_lines(p), 1):
        if not line.strip():
            continue
        rec = json_object(line, p, n)
        qid = field_value(rec, "id", (str, int), p, n)
        qid = str(qid)
        if qid in seen:
            raise DataFormatError(str(p), n, f"duplicate id {qid!r}")
        seen.add(qid)
        topics = rec.get("topic_entities")
        hops = rec.get("hops")
        qtype = rec.get("qtype")
        if hops is not None and (not isinstance(hops, int) or isinstance(hops, bool) or hops < 0):
            raise DataFormatError(str(p), n, f"'hops' must be a non-negative int, got {hops!r}")
        if qtype is not None and not isinstance(qtype, str):
            raise DataFormatError(str(p), n, f"'qtype' must be a string, got {qtype!r}")
        parsed.append(
            Question(
                id=qid,
                question=field_value(rec, "question", str, p, n),
                answers=str_list(rec, "answers", p, n),
                topic_entities=None if topics is None else str_list(rec, "topic_entities", p, n),
                hops=hops,
                qtype=qtype,
                meta={"source": str(p), "line": n, **{k: v for k, v in rec.items() if k not in known}},
            )
        )
    return split_dataset(p, parsed, lambda _, q: q, name=name, kg=kg, split=split, seed=seed, limit=limit)


def json_object(line: str, p: FsPath, n: int) -> dict[str, Any]:
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataFormatError(str(p), n, f"invalid JSON: {exc.msg} at column {exc.colno}") from exc
    if not isinstance(rec, dict):
        raise DataFormatError(str(p), n, f"expected a JSON object, got {type(rec).__name__}")
    return rec


def field_value(rec: dict[str, Any], key: str, typ: type | tuple[type, ...], p: FsPath, n: int) -> Any:
    if key not in rec:
        raise DataFormatError(str(p), n, f"missing field {key!r}")
    value = rec[key]
    if (
        not isinstance(value, typ)
        or isinstance(value, bool)
        or (isinstance(value, str) and not value.strip())
    ):
        raise DataFormatError(str(p), n, f"field {key!r} has a bad value {str(value)[:80]!r}")
    return value


def str_list(rec: dict[str, Any], key: str, p: FsPath, n: int) -> list[str]:
    value = field_value(rec, key, list, p, n)
    if not all(isinstance(x, str) and x.strip() for x in value):
        raise DataFormatError(str(p), n, f"field {key!r} must be a list of non-empty strings")
    return [x.strip() for x in value]
