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

import gzip
import hashlib
import io
import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import IO, Any

from kg_agents.data import data_path
from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.kg.base import Hop, KnowledgeGraph, Path
from kg_agents.kg.text import BRACKETED, unbracket

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
    "load_pathquestion",
    "load_pathquestion_file",
    "load_webqsp_sample",
    "parse_metaqa_line",
    "parse_pathquestion_answer",
    "parse_pathquestion_path",
    "read_lines",
    "split_indices",
]

KGSpec = str | KnowledgeGraph | Callable[[], KnowledgeGraph]

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


def _check_int(name: str, value: Any, allowed: Sequence[int]) -> int:
    if value not in allowed:
        raise ConfigError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return int(value)


# ---------------------------------------------------------------------------- MetaQA
def parse_metaqa_line(
    line: str, *, path: str = "<string>", lineno: int | None = None
) -> tuple[str, str, list[str]]:
    """Parse one MetaQA line ``question with [topic]<TAB>ans1|ans2`` into (question, topic, answers).

    Raises:
        DataFormatError: no tab, not exactly one bracketed topic, or an empty answer.

    Example:
        >>> parse_metaqa_line("what movies did [Babaloo Mandel] write\\tSplash|Parenthood")
        ('what movies did [Babaloo Mandel] write', 'Babaloo Mandel', ['Splash', 'Parenthood'])
    """
    parts = line.split("\t")
    if len(parts) != 2:
        raise DataFormatError(path, lineno, f"expected 'question<TAB>answers', got {line[:80]!r}")
    question, answer_text = parts[0].strip(), parts[1].strip()
    topics = BRACKETED.findall(question)
    if len(topics) != 1 or not topics[0].strip():
        raise DataFormatError(path, lineno, f"expected one [bracketed] topic entity in {question[:80]!r}")
    answers = [a.strip() for a in answer_text.split("|")]
    if not answer_text or any(not a for a in answers):
        raise DataFormatError(path, lineno, f"empty answer in {answer_text[:80]!r}")
    return question, topics[0].strip(), answers


def load_metaqa_file(
    path: str | FsPath,
    *,
    qtype_path: str | FsPath | None = None,
    hops: int | None = None,
    split: str = "dev",
    seed: int = 0,
    limit: int | None = None,
    kg: KGSpec | None = "metaqa",
    name: str | None = None,
) -> Dataset:
    """Load a MetaQA-format questions file (``question with [topic]<TAB>a1|a2``, gzip allowed).

    Args:
        path: the questions file.
        qtype_path: an optional file with one question type a line, aligned with ``path``.
        hops: hop count stored on every question.
        split, seed, limit: see :func:`split_indices`.
        kg: the KG the questions are asked over (default: the bundled MetaQA KG).
        name: dataset name (default: the file name).

    Raises:
        DataFormatError: a malformed line, or a qtype file of another length.
        FileNotFoundError: a file does not exist.
    """
    p = FsPath(path)
    name = name or p.name.split(".")[0]
    lines = read_lines(p)
    while lines and not lines[-1].strip():
        lines.pop()
    parsed = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            raise DataFormatError(str(p), n, "blank line inside the file")
        parsed.append(parse_metaqa_line(line, path=str(p), lineno=n))
    qtypes: list[str | None] = [None] * len(parsed)
    if qtype_path is not None:
        qlines = read_lines(qtype_path)
        while qlines and not qlines[-1].strip():
            qlines.pop()
        if len(qlines) != len(parsed):
            raise DataFormatError(
                str(qtype_path), None, f"{len(qlines)} question types for {len(parsed)} questions in {p.name}"
            )
        for n, qt in enumerate(qlines, 1):
            if not qt.strip():
                raise DataFormatError(str(qtype_path), n, "empty question type")
        qtypes = [q.strip() for q in qlines]
    keep = split_indices(len(parsed), split, seed=seed, limit=limit)
    questions = []
    for i in keep:
        text, topic, answers = parsed[i]
        questions.append(
            Question(
                id=f"{name}-{i}",
                question=text,
                answers=answers,
                topic_entities=[topic],
                hops=hops,
                qtype=qtypes[i],
                meta={"source": str(p), "line": i + 1},
            )
        )
    meta = {"source": str(p), "seed": seed, "lines": len(parsed), "limit": limit}
    return Dataset(name=name, questions=questions, kg=kg, split=split, meta=meta)


def load_metaqa(hops: int, split: str = "dev", *, seed: int = 0, limit: int | None = None) -> Dataset:
    """The bundled MetaQA (vanilla) dev questions of ``hops`` hops, over the bundled MetaQA KG.

    ``train``/``validation`` are the seeded 80/20 split of the dev file described in this module's
    docstring. Topic entities come from the brackets, answers from the ``|``-separated list, and
    ``qtype`` from the aligned ``_qtype`` file.

    Args:
        hops: 1, 2 or 3.
        split: ``dev`` (all 9,992 / 14,872 / 14,274 lines), ``train`` or ``validation``.
        seed: split seed.
        limit: at most this many questions (a seeded sample of the split).

    Example:
        >>> ds = load_metaqa(1, limit=2)
        >>> [q.qtype is not None for q in ds]
        [True, True]
    """
    hops = _check_int("hops", hops, (1, 2, 3))
    return load_metaqa_file(
        data_path(f"metaqa/qa_dev_{hops}hop.txt.gz"),
        qtype_path=data_path(f"metaqa/qa_dev_{hops}hop_qtype.txt.gz"),
        hops=hops,
        split=split,
        seed=seed,
        limit=limit,
        kg="metaqa",
        name=f"metaqa-{hops}hop",
    )


# ---------------------------------------------------------------------------- PathQuestion
#: PathQuestion sets: registry suffix -> (questions file, bundled KG, hops).
PATHQUESTION_SETS: dict[str, tuple[str, str, int]] = {
    "pq-2h": ("pathquestion/PQ-2H.txt.gz", "pq-2h", 2),
    "pq-3h": ("pathquestion/PQ-3H.txt.gz", "pq-3h", 3),
    "pql-2h": ("pathquestion/PQL-2H.txt.gz", "pql-2h", 2),
    "pql-3h": ("pathquestion/PQL-3H.txt.gz", "pql-3h", 3),
    "pql-3h-more": ("pathquestion/PQL-3H_more.txt.gz", "pql-3h", 3),
}


def parse_pathquestion_answer(field_text: str) -> tuple[str, list[str]]:
    """Split ``answer(alias1/alias2/)`` into the answer and its aliases.

    The alias group is the last balanced parenthesised group, so answers that contain
    parentheses themselves (``PG_(USA)(PG_(USA)/)``) parse.

    Raises:
        ValueError: no balanced ``(...)`` group at the end.

    Example:
        >>> parse_pathquestion_answer("PG_(USA)(PG_(USA)/)")
        ('PG_(USA)', ['PG_(USA)'])
        >>> parse_pathquestion_answer("female(male/female/)")
        ('female', ['male', 'female'])
    """
    text = field_text.strip()
    if not text.endswith(")"):
        raise ValueError(f"answer field does not end with '(aliases)': {text[:80]!r}")
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        if text[i] == ")":
            depth += 1
        elif text[i] == "(":
            depth -= 1
            if depth == 0:
                break
    else:
        raise ValueError(f"unbalanced parentheses in answer field {text[:80]!r}")
    main = text[:i].strip()
    aliases = [a.strip() for a in text[i + 1 : -1].split("/") if a.strip()]
    if not main:
        raise ValueError(f"empty answer in {text[:80]!r}")
    return main, aliases


def parse_pathquestion_path(field_text: str) -> Path:
    """Parse ``e0#r1#e1#...#en`` (PQ adds ``#<end>#en``) into a :class:`Path`.

    Raises:
        ValueError: an even number of elements or an empty element.

    Example:
        >>> parse_pathquestion_path("a#r#b#<end>#b").to_text()
        'a -> r -> b'
    """
    parts = [p.strip() for p in field_text.strip().split("#")]
    if "<end>" in parts:
        k = parts.index("<end>")
        if k == 0 or parts[k + 1 :] != [parts[k - 1]]:
            raise ValueError(f"malformed '#<end>#answer' tail in {field_text[:80]!r}")
        parts = parts[:k]
    if len(parts) < 3 or len(parts) % 2 == 0 or any(not p for p in parts):
        raise ValueError(f"expected entity#relation#entity..., got {field_text[:80]!r}")
    return Path(tuple(Hop(parts[i], parts[i + 1], parts[i + 2]) for i in range(0, len(parts) - 2, 2)))


def load_pathquestion(
    variant: str, split: str = "dev", *, seed: int = 0, limit: int | None = None
) -> Dataset:
    """A bundled PathQuestion set over its own KB.

    Answers are the gold answer followed by its aliases (deduplicated); the topic entity is the
    first element of the gold path, which is kept as ``meta["gold_path"]`` (a :class:`Path`).
    PathQuestion has no official split: ``dev`` is the whole file, ``train``/``validation`` the
    seeded 80/20 split (see :func:`split_indices`).

    Args:
        variant: ``pq-2h``, ``pq-3h``, ``pql-2h``, ``pql-3h`` or ``pql-3h-more``.
        split, seed, limit: see :func:`split_indices`.

    Raises:
        ConfigError: an unknown variant.
        DataFormatError: a malformed line.
    """
    if variant not in PATHQUESTION_SETS:
        raise ConfigError(f"unknown PathQuestion set {variant!r}; valid: {', '.join(PATHQUESTION_SETS)}")
    rel, kg_name, hops = PATHQUESTION_SETS[variant]
    return load_pathquestion_file(
        data_path(rel),
        kg=kg_name,
        hops=hops,
        split=split,
        seed=seed,
        limit=limit,
        name=f"pathquestion-{variant}",
    )


def load_pathquestion_file(
    path: str | FsPath,
    *,
    kg: KGSpec | None,
    hops: int | None = None,
    split: str = "dev",
    seed: int = 0,
    limit: int | None = None,
    name: str | None = None,
) -> Dataset:
    """Load a PathQuestion-format file ``question<TAB>answer(aliases)<TAB>e#r#e...``.

    Raises:
        DataFormatError: a line without three fields, or a malformed answer or path.
    """
    p = FsPath(path)
    name = name or p.name.split(".")[0]
    lines = read_lines(p)
    while lines and not lines[-1].strip():
        lines.pop()
    parsed: list[tuple[str, list[str], Path]] = []
    for n, line in enumerate(lines, 1):
        parts = line.split("\t")
        if len(parts) != 3:
            raise DataFormatError(
                str(p), n, f"expected question<TAB>answer(aliases)<TAB>path, got {line[:80]!r}"
            )
        question = parts[0].strip()
        if not question:
            raise DataFormatError(str(p), n, "empty question")
        try:
            main, aliases = parse_pathquestion_answer(parts[1])
            gold = parse_pathquestion_path(parts[2])
        except ValueError as exc:
            raise DataFormatError(str(p), n, str(exc)) from exc
        if gold.end != main:
            raise DataFormatError(str(p), n, f"path ends at {gold.end!r}, answer is {main!r}")
        parsed.append((question, list(dict.fromkeys([main, *aliases])), gold))
    questions = []
    for i in split_indices(len(parsed), split, seed=seed, limit=limit):
        question, answers, gold = parsed[i]
        questions.append(
            Question(
                id=f"{name}-{i}",
                question=question,
                answers=answers,
                topic_entities=[gold.start] if gold.start else None,
                hops=hops if hops is not None else len(gold),
                qtype=None,
                meta={"source": str(p), "line": i + 1, "gold_path": gold, "answer": answers[0]},
            )
        )
    meta = {"source": str(p), "seed": seed, "lines": len(parsed), "limit": limit}
    return Dataset(name=name, questions=questions, kg=kg, split=split, meta=meta)


# ---------------------------------------------------------------------------- WebQSP sample
@dataclass(frozen=True)
class SubgraphFactory:
    """Builds a :class:`~kg_agents.kg.MemoryKG` from a question's own triples (picklable)."""

    triples: tuple[tuple[str, str, str], ...] = field(repr=False)
    name: str = "subgraph"

    def __call__(self) -> KnowledgeGraph:
        from kg_agents.kg.memory import MemoryKG

        return MemoryKG(self.triples, name=self.name)


def load_webqsp_sample(*, limit: int | None = None, path: str | FsPath | None = None) -> Dataset:
    """The bundled WebQSP sample: 18 test questions, each with its own Freebase subgraph.

    Each question's ``kg`` builds a :class:`~kg_agents.kg.MemoryKG` from its graph (use
    :meth:`Dataset.kg_for`). ``topic_entities`` are the ``q_entity`` names, ``answers`` the
    ``a_entity`` names; ``meta["answers_in_graph"]`` says whether any answer is in the subgraph
    (WebQTest-3 and -31 have none; WebQTest-12 has one of its three).

    Args:
        limit: at most this many questions (file order: the sample has no split).
        path: another file in the same JSONL format.

    Raises:
        DataFormatError: a line that is not a JSON object with the expected fields.
    """
    p = FsPath(path) if path is not None else data_path("webqsp/webqsp_sample.jsonl.gz")
    questions = []
    for n, line in enumerate(read_lines(p), 1):
        if not line.strip():
            continue
        rec = _json_object(line, p, n)
        qid = _field(rec, "id", str, p, n)
        graph = _field(rec, "graph", list, p, n)
        triples: list[tuple[str, str, str]] = []
        for t in graph:
            if not (isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) and x for x in t)):
                raise DataFormatError(str(p), n, f"graph triple is not [head, relation, tail]: {str(t)[:80]}")
            triples.append((t[0], t[1], t[2]))
        answers = _str_list(rec, "a_entity", p, n)
        entities = {x for t in triples for x in (t[0], t[2])}
        questions.append(
            Question(
                id=qid,
                question=_field(rec, "question", str, p, n),
                answers=answers,
                topic_entities=_str_list(rec, "q_entity", p, n),
                meta={
                    "source": str(p),
                    "line": n,
                    "triples": len(triples),
                    "answers_in_graph": any(a in entities for a in answers),
                },
                kg=SubgraphFactory(tuple(triples), f"webqsp-{qid}"),
            )
        )
    if limit is not None:
        questions = questions[:limit]
    return Dataset(name="webqsp-sample", questions=questions, kg=None, split=None, meta={"source": str(p)})


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
        rec = _json_object(line, p, n)
        qid = _field(rec, "id", (str, int), p, n)
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
                question=_field(rec, "question", str, p, n),
                answers=_str_list(rec, "answers", p, n),
                topic_entities=None if topics is None else _str_list(rec, "topic_entities", p, n),
                hops=hops,
                qtype=qtype,
                meta={"source": str(p), "line": n, **{k: v for k, v in rec.items() if k not in known}},
            )
        )
    questions = [parsed[i] for i in split_indices(len(parsed), split, seed=seed, limit=limit)]
    meta = {"source": str(p), "seed": seed, "lines": len(parsed), "limit": limit}
    return Dataset(name=name, questions=questions, kg=kg, split=split, meta=meta)


def _json_object(line: str, p: FsPath, n: int) -> dict[str, Any]:
    try:
        rec = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataFormatError(str(p), n, f"invalid JSON: {exc.msg} at column {exc.colno}") from exc
    if not isinstance(rec, dict):
        raise DataFormatError(str(p), n, f"expected a JSON object, got {type(rec).__name__}")
    return rec


def _field(rec: dict[str, Any], key: str, typ: type | tuple[type, ...], p: FsPath, n: int) -> Any:
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


def _str_list(rec: dict[str, Any], key: str, p: FsPath, n: int) -> list[str]:
    value = _field(rec, key, list, p, n)
    if not all(isinstance(x, str) and x.strip() for x in value):
        raise DataFormatError(str(p), n, f"field {key!r} must be a list of non-empty strings")
    return [x.strip() for x in value]


# ---------------------------------------------------------------------------- registry
def _registry() -> dict[str, Callable[..., Dataset]]:
    reg: dict[str, Callable[..., Dataset]] = {}
    for h in (1, 2, 3):
        reg[f"metaqa-{h}hop"] = lambda split, seed, limit, h=h: load_metaqa(h, split, seed=seed, limit=limit)
    for variant in PATHQUESTION_SETS:
        reg[f"pathquestion-{variant}"] = lambda split, seed, limit, v=variant: load_pathquestion(
            v, split, seed=seed, limit=limit
        )
    reg["webqsp-sample"] = _webqsp_entry
    return reg


def _webqsp_entry(split: str, seed: int, limit: int | None) -> Dataset:
    if split != "dev":
        raise ConfigError("webqsp-sample has no train/validation split; use split='dev'")
    return load_webqsp_sample(limit=limit)


DATASETS: tuple[str, ...] = tuple(_registry())


def get_dataset(name: str, split: str = "dev", *, seed: int = 0, limit: int | None = None) -> Dataset:
    """A bundled dataset by name.

    Names: ``metaqa-1hop``, ``metaqa-2hop``, ``metaqa-3hop``, ``pathquestion-pq-2h``,
    ``pathquestion-pq-3h``, ``pathquestion-pql-2h``, ``pathquestion-pql-3h``,
    ``pathquestion-pql-3h-more``, ``webqsp-sample``.

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
