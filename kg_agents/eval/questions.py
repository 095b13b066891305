"""Evaluation question sets: the datasets ``kg-agents eval`` knows by name, and question files.

Datasets (``--dataset NAME``):

- ``metaqa-1hop``, ``metaqa-2hop``, ``metaqa-3hop``: the seeded 80/20 split of the bundled MetaQA dev
  files (:func:`kg_agents.eval.datasets.load_metaqa`), over the bundled ``metaqa`` KG;
- ``pathquestion-pq-2h``, ``pathquestion-pq-3h``, ``pathquestion-pql-2h``, ``pathquestion-pql-3h``:
  PathQuestion over its own KGs, with the same kind of seeded 80/20 split;
- ``webqsp-sample``: 18 WebQSP questions, each with its own Freebase subgraph (a per-question KG).

Question files (``--questions FILE``): MetaQA format (``question with [topic]<TAB>ans1|ans2``) or JSONL
with ``question`` and ``answers`` (or ``answer``/``a_entity``), optional ``id``, ``topic_entities``
(or ``q_entity``) and ``graph`` (``[[h, r, t], ...]``, making a per-question KG).
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from kg_agents.errors import ConfigError, DataFormatError

_BRACKET = re.compile(r"\[([^\[\]]+)\]")


@dataclass
class EvalQuestion:
    """One evaluation question.

    Attributes:
        id: a stable id (predictions are resumed by it).
        question: the question text.
        answers: gold answers (canonical names).
        topic_entities: gold topic entity ids, or None to let the method link them.
        aliases: per gold answer, its accepted surface forms (None: the answer itself).
        kg: a per-question knowledge graph (WebQSP subgraphs), or None for the run's KG.
        qtype: a question type for breakdowns, when the dataset has one.
    """

    id: str
    question: str
    answers: list[str]
    topic_entities: list[str] | None = None
    aliases: list[list[str]] | None = None
    kg: Any = field(default=None, repr=False)
    qtype: str | None = None


def gold_sets(q: Any) -> list[list[str]]:
    """The gold answers of ``q`` as alias lists (works for any object with ``answers``)."""
    aliases = getattr(q, "aliases", None)
    return [list(a) for a in aliases] if aliases else [[a] for a in q.answers]


@dataclass(frozen=True)
class DatasetSpec:
    """A named dataset: the KG it runs on (None: per-question KGs) and its loader."""

    name: str
    kg: str | None
    load: Callable[[str, int, int | None], list[Any]]
    description: str


def _open(path: Path) -> IO[str]:
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def seeded_split(items: Sequence[Any], split: str, seed: int, train_fraction: float = 0.8) -> list[Any]:
    """The ``"train"`` or ``"validation"`` part of a seeded shuffle of ``items`` (80/20 by default)."""
    if split not in ("train", "validation"):
        raise ConfigError(f"unknown split {split!r}; valid: train, validation")
    order = list(range(len(items)))
    random.Random(seed).shuffle(order)
    cut = round(len(items) * train_fraction)
    chosen = order[:cut] if split == "train" else order[cut:]
    return [items[i] for i in chosen]


# --------------------------------------------------------------------------- MetaQA
def _metaqa(hops: int) -> Callable[[str, int, int | None], list[Any]]:
    def load(split: str, seed: int, limit: int | None) -> list[Any]:
        from kg_agents.eval.datasets import load_metaqa

        return list(load_metaqa(hops, split=split, seed=seed, limit=limit))

    return load


# --------------------------------------------------------------------------- PathQuestion
_PQ_ANSWER = re.compile(r"^(.*?)\((.*)\)$")


def load_pathquestion_file(path: str | Path, *, prefix: str = "pq") -> list[EvalQuestion]:
    """Read a PathQuestion file: ``question<TAB>answer(alias1/alias2/)<TAB>e0#r1#e1#...``.

    The topic entity is the first element of the path; the answer's aliases are the parenthesised list.
    """
    path = Path(path)
    out: list[EvalQuestion] = []
    with _open(path) as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                raise DataFormatError(str(path), i, "expected question<TAB>answer<TAB>path")
            question, answer, chain = parts[0].strip(), parts[1].strip(), parts[2].strip()
            m = _PQ_ANSWER.match(answer)
            name = m.group(1) if m else answer
            aliases = [a for a in (m.group(2).split("/") if m else []) if a] or [name]
            out.append(EvalQuestion(
                id=f"{prefix}-{i}", question=question, answers=[name],
                topic_entities=[chain.split("#")[0]], aliases=[list(dict.fromkeys([name, *aliases]))],
            ))
    return out


def _pathquestion(file: str, prefix: str) -> Callable[[str, int, int | None], list[Any]]:
    def load(split: str, seed: int, limit: int | None) -> list[Any]:
        from kg_agents.data import data_path

        every = load_pathquestion_file(data_path(f"pathquestion/{file}"), prefix=prefix)
        qs = seeded_split(every, split, seed)
        return qs[:limit] if limit is not None else qs

    return load


# --------------------------------------------------------------------------- WebQSP sample
def _webqsp(split: str, seed: int, limit: int | None) -> list[Any]:
    from kg_agents.data import data_path

    qs = load_questions_file(data_path("webqsp/webqsp_sample.jsonl.gz"))
    return qs[:limit] if limit is not None else qs


DATASETS: dict[str, DatasetSpec] = {
    **{f"metaqa-{h}hop": DatasetSpec(f"metaqa-{h}hop", "metaqa", _metaqa(h),
                                     f"MetaQA {h}-hop (seeded 80/20 split of dev)") for h in (1, 2, 3)},
    **{f"pathquestion-{n}": DatasetSpec(f"pathquestion-{n}", n, _pathquestion(f, n),
                                        f"PathQuestion {f} (seeded 80/20 split)")
       for n, f in (("pq-2h", "PQ-2H.txt.gz"), ("pq-3h", "PQ-3H.txt.gz"),
                    ("pql-2h", "PQL-2H.txt.gz"), ("pql-3h", "PQL-3H.txt.gz"))},
    "webqsp-sample": DatasetSpec("webqsp-sample", None, _webqsp,
                                 "18 WebQSP test questions, each with its Freebase subgraph (no split)"),
}


def get_dataset_spec(name: str) -> DatasetSpec:
    """The dataset called ``name``; ``ConfigError`` listing the valid names otherwise."""
    try:
        return DATASETS[name]
    except KeyError:
        valid = ", ".join(sorted(DATASETS))
        raise ConfigError(f"unknown dataset {name!r}; valid datasets: {valid}") from None


def load_dataset(
    name: str, *, split: str = "validation", seed: int = 0, limit: int | None = None
) -> list[Any]:
    """The questions of dataset ``name`` (see the module docstring).

    Example:
        >>> qs = load_dataset("pathquestion-pq-2h", split="validation", seed=0, limit=2)
        >>> len(qs)
        2
    """
    return get_dataset_spec(name).load(split, seed, limit)


# --------------------------------------------------------------------------- files
def load_questions_file(path: str | Path) -> list[EvalQuestion]:
    """Questions from a MetaQA-format file or a JSONL file (``.gz`` allowed); see the module docstring.

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: a malformed line (names the file and line).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no such questions file: {path}")
    out: list[EvalQuestion] = []
    with _open(path) as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            out.append(_json_question(path, i, line) if line.lstrip().startswith("{")
                       else _metaqa_question(path, i, line))
    ids = [q.id for q in out]
    if len(set(ids)) != len(ids):
        raise DataFormatError(str(path), None, "question ids are not unique")
    return out


def _metaqa_question(path: Path, i: int, line: str) -> EvalQuestion:
    parts = line.rstrip("\n").split("\t")
    if len(parts) != 2 or not parts[0].strip():
        raise DataFormatError(str(path), i, "expected 'question<TAB>answer1|answer2' or a JSON object")
    question = parts[0].strip()
    answers = [a.strip() for a in parts[1].split("|") if a.strip()]
    topics = [m.strip() for m in _BRACKET.findall(question)] or None
    return EvalQuestion(id=f"{path.stem}-{i}", question=question, answers=answers, topic_entities=topics)


def _json_question(path: Path, i: int, line: str) -> EvalQuestion:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise DataFormatError(str(path), i, f"invalid JSON: {exc.msg}") from exc
    if not isinstance(obj, dict) or not isinstance(obj.get("question"), str) or not obj["question"].strip():
        raise DataFormatError(str(path), i, "a JSON line needs a non-empty 'question' string")
    answers = obj.get("answers", obj.get("a_entity", obj.get("answer")))
    if isinstance(answers, str):
        answers = [answers]
    if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
        raise DataFormatError(str(path), i, "'answers' must be a string or a list of strings")
    topics = obj.get("topic_entities", obj.get("q_entity"))
    if topics is not None and (not isinstance(topics, list) or not all(isinstance(t, str) for t in topics)):
        raise DataFormatError(str(path), i, "'topic_entities' must be a list of strings")
    kg = None
    if obj.get("graph") is not None:
        graph = obj["graph"]
        if not isinstance(graph, list) or not all(isinstance(t, list) and len(t) == 3 for t in graph):
            raise DataFormatError(str(path), i, "'graph' must be a list of [head, relation, tail]")
        from kg_agents.kg.memory import MemoryKG

        kg = MemoryKG([tuple(map(str, t)) for t in graph], name=str(obj.get("id", f"q{i}")))
    return EvalQuestion(id=str(obj.get("id", f"{path.stem}-{i}")), question=obj["question"].strip(),
                        answers=list(answers), topic_entities=topics or None, kg=kg, qtype=obj.get("qtype"))
