"""Whole-answer questions: conjunctions and constraints with their logical forms, executed on the KG.

``metaqa-whole`` is a hand-written development set over the bundled MetaQA graph: questions phrased as a
user would ask them, each stored with its *logical form* in ``kg_agents/data/metaqa/whole/forms.jsonl``:

- ``topics``: the topic entities (in ``[brackets]`` in the question, as MetaQA writes them);
- ``paths``: one relation path per topic, in the synthesiser's path syntax
  (:func:`kg_agents.synth.schemas.format_relation_path`: ``~directed_by``,
  ``starred_actors ~starred_actors``);
- ``constraint`` (a constraint question): ``{"relation": STEP, "value": VALUE}``, the attribute step from
  an answer to the literal (``release_year`` to ``1994``).

The kinds are those of :data:`kg_agents.synth.questions.QUESTION_KINDS`: a ``conjunction`` has two or
more topics whose chains end on the same answers (the answers are the intersection of the chains' answer
sets), a ``constraint`` one topic whose chain's answers are kept when they have the attribute value.

:func:`execute_form` runs a form on the KG (:func:`kg_agents.synth.schemas.walk`) and checks it: every
topic exists, the answer set is not empty and holds at most ``max_answers``, a conjunction's answer set is
strictly smaller than each of its chains' (else one topic would do), and a constraint strictly narrows its
chain. ``scripts/metaqa_whole.py`` executes every form and writes ``questions.jsonl`` next to the forms
(answers, one gold path from each topic to each answer, the constraint's triple); :func:`load_metaqa_whole`
reads that file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path as FsPath
from typing import Any

from kg_agents.data import data_path
from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.eval.data_core import Dataset, Question, json_object, read_lines, split_indices
from kg_agents.kg.base import Hop, KnowledgeGraph, Path
from kg_agents.kg.text import BRACKETED

__all__ = [
    "WHOLE_FORMS",
    "WHOLE_KINDS",
    "WHOLE_QUESTIONS",
    "WholeForm",
    "execute_form",
    "load_metaqa_whole",
    "read_forms",
    "whole_record",
]

#: The hand-written forms (the source) and the file the script computes from them.
WHOLE_FORMS = "metaqa/whole/forms.jsonl"
WHOLE_QUESTIONS = "metaqa/whole/questions.jsonl"
#: The kinds a whole-answer question has.
WHOLE_KINDS = ("conjunction", "constraint")
#: Execution bound: a chain step with a larger frontier gives no answer set (MetaQA's largest
#: neighbour lists, a popular genre's films, stay below it).
WHOLE_CAP = 20_000


@dataclass(frozen=True)
class WholeForm:
    """One question and its logical form (see the module docstring)."""

    id: str
    question: str
    kind: str
    topics: tuple[str, ...]
    paths: tuple[str, ...]
    constraint: tuple[str, str] | None = None

    @property
    def hops(self) -> int:
        """The longest chain's hop count (the constraint's step not counted)."""
        from kg_agents.synth.schemas import parse_relation_path

        return max(len(parse_relation_path(p)) for p in self.paths)


def _form(rec: dict[str, Any], where: str, n: int) -> WholeForm:
    from kg_agents.synth.schemas import parse_relation_path

    def bad(msg: str) -> DataFormatError:
        return DataFormatError(where, n, msg)

    for key in ("id", "question", "kind", "topics", "paths"):
        if key not in rec:
            raise bad(f"missing field {key!r}")
    qid, question, kind = rec["id"], rec["question"], rec["kind"]
    if not (isinstance(qid, str) and qid and isinstance(question, str) and question.strip()):
        raise bad("'id' and 'question' must be non-empty strings")
    if kind not in WHOLE_KINDS:
        raise bad(f"'kind' must be one of {WHOLE_KINDS}, got {kind!r}")
    topics, paths = rec["topics"], rec["paths"]
    if not (isinstance(topics, list) and isinstance(paths, list) and all(isinstance(x, str) for x in topics)):
        raise bad("'topics' and 'paths' must be lists of strings")
    if len(topics) != len(paths) or not topics:
        raise bad(f"one relation path per topic: {len(topics)} topics, {len(paths)} paths")
    try:
        for p in paths:
            parse_relation_path(p)
    except ConfigError as exc:
        raise bad(str(exc)) from exc
    if BRACKETED.findall(question) != topics:
        raise bad(
            f"the question's [bracketed] entities {BRACKETED.findall(question)} are not its topics {topics}"
        )
    constraint = rec.get("constraint")
    if kind == "conjunction" and (len(topics) < 2 or constraint is not None):
        raise bad("a conjunction has two or more topics and no constraint")
    if kind == "constraint":
        ok = isinstance(constraint, dict) and all(
            isinstance(constraint.get(k), str) and constraint[k] for k in ("relation", "value")
        )
        if len(topics) != 1 or not ok:
            raise bad("a constraint has one topic and a constraint {'relation': STEP, 'value': VALUE}")
        assert isinstance(constraint, dict)
        try:
            if len(parse_relation_path(constraint["relation"])) != 1:
                raise bad("a constraint's relation is one step")
        except ConfigError as exc:
            raise bad(str(exc)) from exc
        return WholeForm(
            qid, question, kind, tuple(topics), tuple(paths), (constraint["relation"], constraint["value"])
        )
    return WholeForm(qid, question, kind, tuple(topics), tuple(paths))


def read_forms(path: str | FsPath | None = None) -> list[WholeForm]:
    """The forms of a forms file (default: the bundled MetaQA one); ids must be unique.

    Raises:
        DataFormatError: a line that is not a form (file and line named), or a repeated id.
    """
    p = FsPath(path) if path is not None else data_path(WHOLE_FORMS)
    out: list[WholeForm] = []
    seen: set[str] = set()
    for n, line in enumerate(read_lines(p), 1):
        if not line.strip():
            continue
        form = _form(json_object(line, p, n), str(p), n)
        if form.id in seen:
            raise DataFormatError(str(p), n, f"duplicate id {form.id!r}")
        seen.add(form.id)
        out.append(form)
    return out


def execute_form(kg: KnowledgeGraph, form: WholeForm, *, max_answers: int = 30) -> dict[str, Any]:
    """Execute ``form`` on ``kg`` and check it (see the module docstring).

    Returns:
        ``answers`` (sorted), ``gold_paths`` (per answer: one path text from each topic, then the
        constraint's triple), ``chain_answers`` (each chain's answer-set size) and ``hops``.

    Raises:
        DataFormatError: a check failed (the message says which), naming the form's id.
    """
    from kg_agents.synth.schemas import gold_path, parse_relation_path, walk

    def bad(msg: str) -> DataFormatError:
        return DataFormatError(WHOLE_FORMS, None, f"{form.id}: {msg}")

    walks = []
    for topic, path in zip(form.topics, form.paths, strict=True):
        if kg.degree(topic, direction="both") == 0:
            raise bad(f"topic {topic!r} is not in the KG")
        w = walk(kg, topic, path, WHOLE_CAP)
        if w is None:
            raise bad(f"{path!r} from {topic!r} exceeds the execution bound")
        if not w.answers:
            raise bad(f"{path!r} from {topic!r} reaches nothing")
        walks.append(w)
    answers = frozenset.intersection(*(w.answers for w in walks))
    constraint_hops: dict[str, Hop] = {}
    if form.kind == "conjunction":
        for w in walks:
            if len(answers) >= len(w.answers):
                raise bad(f"not a conjunction: the answers are all of {w.topic!r}'s {len(w.answers)}")
    else:
        assert form.constraint is not None
        (rel, direction), value = parse_relation_path(form.constraint[0])[0], form.constraint[1]
        for a in sorted(answers):
            tl = kg.neighbors(a, rel, "in" if direction == "in" else "out", limit=WHOLE_CAP)
            if any(t.other(a) == value for t in tl):
                constraint_hops[a] = Hop(a, rel, value, direction == "in")
        if len(constraint_hops) >= len(answers):
            raise bad(f"the constraint keeps all {len(answers)} answers of the chain")
        answers = frozenset(constraint_hops)
    if not answers:
        raise bad("no answer")
    if len(answers) > max_answers:
        raise bad(f"{len(answers)} answers, more than {max_answers}")
    gold: dict[str, list[str]] = {}
    for a in sorted(answers):
        paths: list[Path] = [gold_path(w, a) for w in walks]
        if a in constraint_hops:
            paths.append(Path((constraint_hops[a],)))
        gold[a] = [p.to_text() for p in paths]
    return {
        "answers": sorted(answers),
        "gold_paths": gold,
        "chain_answers": [len(w.answers) for w in walks],
        "hops": form.hops,
    }


def whole_record(form: WholeForm, executed: dict[str, Any]) -> dict[str, Any]:
    """The line of ``questions.jsonl`` for a form and its execution."""
    rec: dict[str, Any] = {
        "id": form.id,
        "question": form.question,
        "kind": form.kind,
        "topics": list(form.topics),
        "paths": list(form.paths),
    }
    if form.constraint is not None:
        rec["constraint"] = {"relation": form.constraint[0], "value": form.constraint[1]}
    return rec | executed


def load_metaqa_whole(
    split: str = "dev", *, seed: int = 0, limit: int | None = None, path: str | FsPath | None = None
) -> Dataset:
    """``metaqa-whole``: the hand-written conjunction and constraint questions over the MetaQA KG.

    Each question's ``qtype`` and ``meta["kind"]`` are its kind; ``hops`` its longest chain;
    ``topic_entities`` its topics; ``meta`` keeps its logical form (``paths``, ``constraint``), its gold
    paths per answer and its chains' answer-set sizes. ``train``/``validation`` are the seeded 80/20 split
    of :func:`~kg_agents.eval.data_core.split_indices`.

    Raises:
        DataFormatError: a line that is not a computed question.
    """
    p = FsPath(path) if path is not None else data_path(WHOLE_QUESTIONS)
    parsed: list[Question] = []
    for n, line in enumerate(read_lines(p), 1):
        if not line.strip():
            continue
        rec = json_object(line, p, n)
        form = _form(rec, str(p), n)
        answers = rec.get("answers")
        gold = rec.get("gold_paths")
        if not (isinstance(answers, list) and answers and all(isinstance(a, str) and a for a in answers)):
            raise DataFormatError(str(p), n, "'answers' must be a non-empty list of strings")
        if not isinstance(gold, dict) or sorted(gold) != sorted(answers):
            raise DataFormatError(str(p), n, "'gold_paths' must give paths for each answer")
        meta = {
            "source": str(p),
            "line": n,
            "kind": form.kind,
            "paths": list(form.paths),
            "gold_paths": gold,
            "chain_answers": rec.get("chain_answers"),
        }
        if form.constraint is not None:
            meta["constraint"] = {"relation": form.constraint[0], "value": form.constraint[1]}
        parsed.append(
            Question(
                id=form.id,
                question=form.question,
                answers=list(answers),
                topic_entities=list(form.topics),
                hops=form.hops,
                qtype=form.kind,
                meta=meta,
            )
        )
    questions = [parsed[i] for i in split_indices(len(parsed), split, seed=seed, limit=limit)]
    meta = {"source": str(p), "seed": seed, "lines": len(parsed), "limit": limit}
    return Dataset(name="metaqa-whole", questions=questions, kg="metaqa", split=split, meta=meta)
