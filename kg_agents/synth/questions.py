"""Synthesised questions: the record, the result of a run, and their files.

A run writes ``train.jsonl``, ``validation.jsonl`` and ``stats.json`` into one folder, each atomically
(:func:`kg_agents.files.atomic_write`). Each line is :meth:`SynthQuestion.to_json`: the keys
:func:`kg_agents.eval.datasets.load_jsonl_questions` reads (``id``, ``question``, ``answers``,
``topic_entities``, ``hops``, ``qtype``; the others go to its ``meta``) and that
:func:`kg_agents.methods.dualr.train.read_questions` reads (``question``, ``answers``,
``topic_entities``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path as FsPath
from typing import Any

from kg_agents.errors import DataFormatError
from kg_agents.files import atomic_write, numbered_lines

__all__ = [
    "QUESTION_KINDS",
    "SPLITS",
    "STATS_FILE",
    "SynthQuestion",
    "SynthResult",
    "read_questions",
    "split_file",
    "write_questions",
]

#: The question kinds, one vocabulary for the synthesiser, the teacher, eval reports and docs:
#: ``chain`` (a relation path from one topic entity), ``conjunction`` (chains from several topic
#: entities that end on the same answers), ``constraint`` (a chain's answers filtered by a literal or a
#: type: the answers that have a value along an attribute step).
QUESTION_KINDS = ("chain", "conjunction", "constraint")
#: The splits a run writes, each to ``<split>.jsonl``.
SPLITS = ("train", "validation")
STATS_FILE = "stats.json"


@dataclass(frozen=True)
class SynthQuestion:
    """One question synthesised from the graph, with its complete answer set.

    Attributes:
        id: unique within a run.
        question: the text, each topic entity's label in ``[brackets]``.
        answers: the complete answer set (entity ids, sorted).
        topic_entities: the topic entity ids (one for a chain, two for a conjunction).
        hops: the relation path's length (a conjunction: its longer chain's).
        kind: one of :data:`QUESTION_KINDS`.
        relation_path: the relation path's text (``directed_by ~starred_actors``; a conjunction's two
            chains joined by ``" & "``).
        gold_path: the path text from the first topic to one answer (``answers[0]`` where it can).
        template: the form the question was made from (``[X]``, ``[Y]`` for the topics).
        split: ``train`` or ``validation``.
        answer_labels: each answer's label, in the order of ``answers`` (the evaluation accepts the id or
            the label).
        gold_paths: a path text from each topic to the same answer (a chain: ``[gold_path]``; a
            constraint: the chain's path, then the answer's attribute triple as a one-hop path).
        constraint: a constraint's ``(attribute step text, value id)`` (the step from an answer to the
            value, ``release_year``), else empty.
    """

    id: str
    question: str
    answers: tuple[str, ...]
    topic_entities: tuple[str, ...]
    hops: int
    kind: str
    relation_path: str
    gold_path: str
    template: str
    split: str
    answer_labels: tuple[str, ...] = ()
    gold_paths: tuple[str, ...] = ()
    constraint: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The JSONL record (see the module docstring); ``constraint`` (``{"relation", "value"}``) only
        on a constraint."""
        extra: dict[str, Any] = {}
        if self.constraint:
            extra["constraint"] = {"relation": self.constraint[0], "value": self.constraint[1]}
        return {
            "id": self.id,
            "question": self.question,
            "answers": list(self.answers),
            "topic_entities": list(self.topic_entities),
            "hops": self.hops,
            "qtype": self.kind,
            "relation_path": self.relation_path,
            "gold_path": self.gold_path,
            "gold_paths": list(self.gold_paths or (self.gold_path,)),
            "answer_labels": list(self.answer_labels),
            "template": self.template,
            "split": self.split,
        } | extra

    @classmethod
    def from_json(cls, rec: dict[str, Any]) -> SynthQuestion:
        """The question of a :meth:`to_json` record. Raises ``KeyError``/``TypeError`` when malformed."""
        answers = tuple(str(a) for a in rec["answers"])
        labels = tuple(str(a) for a in rec.get("answer_labels") or ())
        if labels and len(labels) != len(answers):
            raise TypeError("answer_labels must give one label per answer")
        constraint = rec.get("constraint")
        if constraint is not None and not (
            isinstance(constraint, dict)
            and all(isinstance(constraint.get(k), str) for k in ("relation", "value"))
        ):
            raise TypeError("constraint must be {'relation': str, 'value': str}")
        hops = rec["hops"]
        if not isinstance(hops, int) or isinstance(hops, bool):
            raise TypeError(f"hops must be an int, got {hops!r}")
        return cls(
            id=str(rec["id"]),
            question=str(rec["question"]),
            answers=answers,
            topic_entities=tuple(str(t) for t in rec["topic_entities"]),
            hops=hops,
            kind=str(rec["qtype"]),
            relation_path=str(rec["relation_path"]),
            gold_path=str(rec["gold_path"]),
            template=str(rec["template"]),
            split=str(rec["split"]),
            answer_labels=labels,
            gold_paths=tuple(str(p) for p in rec.get("gold_paths") or ()),
            constraint=(constraint["relation"], constraint["value"]) if constraint else (),
        )


@dataclass
class SynthResult:
    """What :func:`~kg_agents.synth.synthesise` made: the questions and its statistics."""

    questions: list[SynthQuestion] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    @property
    def train(self) -> list[SynthQuestion]:
        return [q for q in self.questions if q.split == "train"]

    @property
    def validation(self) -> list[SynthQuestion]:
        return [q for q in self.questions if q.split == "validation"]


def split_file(out_dir: str | FsPath, split: str) -> FsPath:
    """The file of ``split`` in a run's folder."""
    return FsPath(out_dir) / f"{split}.jsonl"


def _jsonl(questions: Sequence[SynthQuestion]) -> str:
    return "".join(json.dumps(q.to_json(), ensure_ascii=False) + "\n" for q in questions)


def write_questions(result: SynthResult, out_dir: str | FsPath) -> dict[str, FsPath]:
    """Write ``train.jsonl``, ``validation.jsonl`` and ``stats.json`` into ``out_dir``, each atomically
    (a reader sees the old file or the new one, never a part), ``stats.json`` last: its ``train`` and
    ``validation`` counts tell a finished folder. Returns ``{name: path}``."""
    out = FsPath(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, FsPath] = {}
    for split in SPLITS:
        path = split_file(out, split)
        atomic_write(path, _jsonl([q for q in result.questions if q.split == split]))
        written[split] = path
    atomic_write(out / STATS_FILE, json.dumps(result.stats, indent=2, sort_keys=True) + "\n")
    written["stats"] = out / STATS_FILE
    return written


def read_questions(path: str | FsPath) -> list[SynthQuestion]:
    """The questions of a ``train.jsonl`` / ``validation.jsonl`` file.

    Raises:
        FileNotFoundError: no such file.
        DataFormatError: a line that is not a synthesised question (file and line named).
    """
    p = FsPath(path)
    out: list[SynthQuestion] = []
    for n, line in numbered_lines(p):
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict):
                raise TypeError(f"expected a JSON object, got {type(rec).__name__}")
            out.append(SynthQuestion.from_json(rec))
        except json.JSONDecodeError as exc:
            raise DataFormatError(str(p), n, f"invalid JSON: {exc.msg} at column {exc.colno}") from exc
        except KeyError as exc:
            raise DataFormatError(str(p), n, f"missing field {exc.args[0]!r}") from exc
        except TypeError as exc:
            raise DataFormatError(str(p), n, f"bad synthesised question: {exc}") from exc
    return out
