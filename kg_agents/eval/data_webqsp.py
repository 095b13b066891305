"""The WebQSP sample: WebQSP test questions, each with its own Freebase subgraph."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path as FsPath

from kg_agents.data import data_path
from kg_agents.errors import DataFormatError
from kg_agents.eval.data_core import Dataset, Question, field_value, json_object, read_lines, str_list
from kg_agents.kg.base import KnowledgeGraph

__all__ = ["WEBQSP_WHOLE", "SubgraphFactory", "load_webqsp_sample", "load_webqsp_whole"]


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
        rec = json_object(line, p, n)
        qid = field_value(rec, "id", str, p, n)
        graph = field_value(rec, "graph", list, p, n)
        triples: list[tuple[str, str, str]] = []
        for t in graph:
            if not (isinstance(t, list) and len(t) == 3 and all(isinstance(x, str) and x for x in t)):
                raise DataFormatError(str(p), n, f"graph triple is not [head, relation, tail]: {str(t)[:80]}")
            triples.append((t[0], t[1], t[2]))
        answers = str_list(rec, "a_entity", p, n)
        entities = {x for t in triples for x in (t[0], t[2])}
        questions.append(
            Question(
                id=qid,
                question=field_value(rec, "question", str, p, n),
                answers=answers,
                topic_entities=str_list(rec, "q_entity", p, n),
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


#: The sample's questions that need more than one chain from one topic, read by hand (the sample keeps no
#: WebQSP parse): ``id -> (kind, topics added to q_entity, why)``.
WEBQSP_WHOLE: dict[str, tuple[str, tuple[str, ...], str]] = {
    "WebQTest-1": ("constraint", (), "positions held before a date: before he became president"),
    "WebQTest-3": (
        "conjunction",
        ("Ken Barlow",),
        "the actor of a character (Ken Barlow) in a series (Coronation Street): two topics",
    ),
    "WebQTest-12": ("constraint", (), "office holders filtered by a title (governor) and a year (2011)"),
    "WebQTest-21": ("constraint", (), "parents filtered by gender (dad)"),
}


def load_webqsp_whole(*, limit: int | None = None, path: str | FsPath | None = None) -> Dataset:
    """``webqsp-sample-whole``: the sample's questions with more than one topic or a constraint.

    The sample keeps no WebQSP parse, so each was read by hand (:data:`WEBQSP_WHOLE`): its kind goes to
    ``qtype`` and ``meta["kind"]``, the reason to ``meta["whole_note"]``; a conjunction's second topic,
    when the question names it and its subgraph holds it, is added to ``topic_entities``
    (``meta["added_topics"]``). Note the golds as given: WebQTest-12 lists a governor of two centuries
    ago, WebQTest-21 a mother, and WebQTest-3's answer is not in its subgraph.
    """
    base = load_webqsp_sample(path=path)
    questions = []
    for q in base.questions:
        if q.id not in WEBQSP_WHOLE:
            continue
        kind, added, note = WEBQSP_WHOLE[q.id]
        topics = list(dict.fromkeys([*(q.topic_entities or []), *added]))
        meta = {**q.meta, "kind": kind, "whole_note": note, "added_topics": list(added)}
        questions.append(replace(q, topic_entities=topics, qtype=kind, meta=meta))
    if limit is not None:
        questions = questions[:limit]
    return Dataset(name="webqsp-sample-whole", questions=questions, kg=None, split=None, meta=base.meta)
