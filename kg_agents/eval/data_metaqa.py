"""MetaQA: the bundled dev questions of 1, 2 and 3 hops over the bundled MetaQA KG."""

from __future__ import annotations

from pathlib import Path as FsPath

from kg_agents.data import data_path
from kg_agents.errors import DataFormatError
from kg_agents.eval.data_core import Dataset, KGSpec, Question, check_int, read_content_lines, split_dataset
from kg_agents.kg.text import BRACKETED

__all__ = ["load_metaqa", "load_metaqa_file", "metaqa_all_hops", "parse_metaqa_line"]


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
    lines = read_content_lines(p)
    parsed = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            raise DataFormatError(str(p), n, "blank line inside the file")
        parsed.append(parse_metaqa_line(line, path=str(p), lineno=n))
    qtypes: list[str | None] = [None] * len(parsed)
    if qtype_path is not None:
        qlines = read_content_lines(qtype_path)
        if len(qlines) != len(parsed):
            raise DataFormatError(
                str(qtype_path), None, f"{len(qlines)} question types for {len(parsed)} questions in {p.name}"
            )
        for n, qt in enumerate(qlines, 1):
            if not qt.strip():
                raise DataFormatError(str(qtype_path), n, "empty question type")
        qtypes = [q.strip() for q in qlines]

    def make_question(i: int, row: tuple[str, str, list[str]]) -> Question:
        text, topic, answers = row
        return Question(
            id=f"{name}-{i}",
            question=text,
            answers=answers,
            topic_entities=[topic],
            hops=hops,
            qtype=qtypes[i],
            meta={"source": str(p), "line": i + 1},
        )

    return split_dataset(p, parsed, make_question, name=name, kg=kg, split=split, seed=seed, limit=limit)


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
    hops = check_int("hops", hops, (1, 2, 3))
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


def metaqa_all_hops(n: int, split: str = "validation", *, seed: int = 0) -> list[Question]:
    """``n`` MetaQA questions spread over 1, 2 and 3 hops (the first hop sets get the remainder), each
    hop's a seeded sample of ``split`` (:func:`load_metaqa`).

    Example:
        >>> [q.hops for q in metaqa_all_hops(4)]
        [1, 1, 2, 3]
    """
    per = [n // 3 + (1 if i < n % 3 else 0) for i in range(3)]
    out: list[Question] = []
    for hops, k in zip((1, 2, 3), per, strict=True):
        out += list(load_metaqa(hops, split, seed=seed, limit=k))
    return out
