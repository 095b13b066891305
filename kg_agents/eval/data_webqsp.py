"""The WebQSP sample: WebQSP test questions, each with its own Freebase subgraph."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path as FsPath

from kg_agents.data import data_path
from kg_agents.errors import DataFormatError
from kg_agents.eval.data_core import Dataset, Question, field_value, json_object, read_lines, str_list
from kg_agents.kg.base import KnowledgeGraph

__all__ = ["SubgraphFactory", "load_webqsp_sample"]


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
