"""PathQuestion: the bundled PQ/PQL sets of 2 and 3 hops, each over its own small KB."""

from __future__ import annotations

from pathlib import Path as FsPath

from kg_agents.data import data_path
from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.eval.data_core import Dataset, KGSpec, Question, read_content_lines, split_dataset
from kg_agents.kg.base import Hop, Path

__all__ = [
    "PATHQUESTION_SETS",
    "load_pathquestion",
    "load_pathquestion_file",
    "parse_pathquestion_answer",
    "parse_pathquestion_path",
]


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
    lines = read_content_lines(p)
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

    def make_question(i: int, row: tuple[str, list[str], Path]) -> Question:
        text, answers, gold = row
        return Question(
            id=f"{name}-{i}",
            question=text,
            answers=answers,
            topic_entities=[gold.start] if gold.start else None,
            hops=hops if hops is not None else len(gold),
            qtype=None,
            meta={"source": str(p), "line": i + 1, "gold_path": gold, "answer": answers[0]},
        )

    return split_dataset(p, parsed, make_question, name=name, kg=kg, split=split, seed=seed, limit=limit)
