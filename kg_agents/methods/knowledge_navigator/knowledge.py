"""KnowledgeNavigator's pure helpers: relations as the LLM sees them, parsing its choices, the weighted
vote (eq. 3-4), and retrieved triples aggregated (eq. 5-6) and verbalised in the formats of table 3.

Nothing here calls a model or a knowledge graph; the nodes (:mod:`.nodes`) do.

Example:
    >>> candidate_text("directed_by", "in", "Ron Howard")
    '? directed by Ron Howard'
    >>> weighted_vote([[0], [1], [1]], [2, 1, 1], 3, 1)
    ([2.0, 2.0, 0.0], [0])
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Literal

from kg_agents.errors import ConfigError
from kg_agents.kg.base import Direction, Triple
from kg_agents.kg.text import relation_words

__all__ = [
    "HEAD_TEMPLATE",
    "KNOWLEDGE_FORMATS",
    "TAIL_TEMPLATE",
    "KnowledgeFormat",
    "aggregate_triples",
    "candidate_text",
    "ground_answers",
    "parse_selection",
    "parse_variants",
    "verbalise",
    "weighted_vote",
]

KnowledgeFormat = Literal["single_triples", "joined_triples", "single_sentences", "joined_sentences"]
KNOWLEDGE_FORMATS: tuple[str, ...] = (
    "single_triples",
    "joined_triples",
    "single_sentences",
    "joined_sentences",
)
#: Template of an aggregated ``(head, relation, [tails])`` group (eq. 5) as a sentence.
HEAD_TEMPLATE = "{head} {relation} {tails}."
#: Template of an aggregated ``([heads], relation, tail)`` group (eq. 6) as a sentence.
TAIL_TEMPLATE = "{heads} {relation} {tail}."


def candidate_text(relation: str, direction: Direction, entity: str) -> str:
    """A candidate relation as the LLM sees it, direction explicit.

    Example:
        >>> candidate_text("directed_by", "out", "Splash")
        'Splash directed by ?'
        >>> candidate_text("directed_by", "in", "Ron Howard")
        '? directed by Ron Howard'
    """
    phrase = relation_words(relation)
    return f"{entity} {phrase} ?" if direction == "out" else f"? {phrase} {entity}"


def parse_selection(
    text: str, options: Sequence[str], k: int, phrases: Sequence[str] | None = None
) -> list[int]:
    """The option indices (0-based, at most ``k``) an LLM reply picks.

    Numbers ``1..len(options)`` after the last ``Answer:`` marker (or anywhere when there is none)
    are read first; when there are none, options whose text occurs in the reply are taken, then
    options whose relation phrase (``phrases``, e.g. ``"directed by"``) occurs, in order of appearance.

    Example:
        >>> parse_selection("Answer: 2", ["a b ?", "? c d"], 1)
        [1]
        >>> parse_selection("the best is ? c d", ["a b ?", "? c d"], 1)
        [1]
        >>> parse_selection("c d", ["a b ?", "? c d"], 1, ["b", "c d"])
        [1]
    """
    if not isinstance(text, str) or k <= 0:
        return []
    marker = list(re.finditer(r"(?i)answers?\s*[:：]", text))
    body = text[marker[-1].end() :] if marker else text
    picked: list[int] = []
    for m in re.finditer(r"(?<![\w.])(\d{1,3})(?!\w)", body):
        i = int(m.group(1)) - 1
        if 0 <= i < len(options) and i not in picked:
            picked.append(i)
        if len(picked) >= k:
            return picked
    if picked:
        return picked
    low = " ".join(text.lower().split())
    hits = [(low.find(o.lower()), i) for i, o in enumerate(options) if o.lower() in low]
    if not hits and phrases is not None:
        hits = [(low.find(p.lower()), i) for i, p in enumerate(phrases) if p and p.lower() in low]
    out: list[int] = []
    for _, i in sorted(hits):
        if i not in out:
            out.append(i)
    return out[:k]


def weighted_vote(
    choices: Sequence[Sequence[int]], weights: Sequence[float], n_options: int, m: int
) -> tuple[list[float], list[int]]:
    """Eq. 3: ``Score(r) = sum_s w(s) * I(r chosen for s)``; the top ``m`` options with a positive score.

    Ties are broken by the first voter's (the original question's) choice, then by option order.

    Args:
        choices: per voter (question variant), the option indices it picked.
        weights: per voter, its weight (eq. 4).
        n_options: number of candidate relations.
        m: how many to keep.

    Returns:
        ``(scores per option, kept option indices best first)``.

    Example:
        >>> weighted_vote([[0], [1], [1]], [2, 1, 1], 3, 1)
        ([2.0, 2.0, 0.0], [0])
    """
    if len(choices) != len(weights):
        raise ConfigError("one weight per voter is needed")
    scores = [0.0] * n_options
    for picked, w in zip(choices, weights, strict=True):
        for i in set(picked):
            if 0 <= i < n_options:
                scores[i] += float(w)
    first = set(choices[0]) if choices else set()
    order = sorted(range(n_options), key=lambda i: (-scores[i], i not in first, i))
    return scores, [i for i in order if scores[i] > 0][: max(m, 0)]


def aggregate_triples(triples: Iterable[Triple]) -> list[tuple[str, str, str, list[str]]]:
    """Eq. 5-6: merge triples sharing ``(head, relation)`` or ``(relation, tail)``.

    Each triple joins the larger of its two groups (the head group on a tie). Returns
    ``(kind, relation, pivot, others)`` in order of first appearance: kind ``"head"`` is
    ``(pivot, relation, [others])``; kind ``"tail"`` is ``([others], relation, pivot)``.

    Example:
        >>> ts = [Triple("Splash", "written_by", "Babaloo Mandel"),
        ...       Triple("Parenthood", "written_by", "Babaloo Mandel"),
        ...       Triple("Splash", "directed_by", "Ron Howard")]
        >>> aggregate_triples(ts)
        [('tail', 'written_by', 'Babaloo Mandel', ['Splash', 'Parenthood']), \
('head', 'directed_by', 'Splash', ['Ron Howard'])]
    """
    unique = list(dict.fromkeys(triples))
    by_head: dict[tuple[str, str], list[Triple]] = {}
    by_tail: dict[tuple[str, str], list[Triple]] = {}
    for t in unique:
        by_head.setdefault((t.head, t.relation), []).append(t)
        by_tail.setdefault((t.relation, t.tail), []).append(t)
    groups: dict[tuple[str, str, str], list[str]] = {}
    for t in unique:
        if len(by_tail[(t.relation, t.tail)]) > len(by_head[(t.head, t.relation)]):
            groups.setdefault(("tail", t.relation, t.tail), []).append(t.head)
        else:
            groups.setdefault(("head", t.relation, t.head), []).append(t.tail)
    return [(kind, rel, pivot, others) for (kind, rel, pivot), others in groups.items()]


def verbalise(
    triples: Sequence[Triple],
    fmt: str = "joined_sentences",
    *,
    label: Callable[[str], str] = str,
    head_template: str = HEAD_TEMPLATE,
    tail_template: str = TAIL_TEMPLATE,
) -> list[str]:
    """Retrieved triples as knowledge lines in one of the four formats of table 3.

    Args:
        triples: the retrieved triples.
        fmt: ``single_triples`` (``[h, r, t]``), ``joined_triples`` (``[h, r, [t1, t2]]``),
            ``single_sentences`` (one templated sentence per triple) or ``joined_sentences``
            (aggregated, eq. 5-6, then templated).
        label: renders an entity id.
        head_template: sentence for ``(head, relation, [tails])``; fields ``head``, ``relation``, ``tails``.
        tail_template: sentence for ``([heads], relation, tail)``; fields ``heads``, ``relation``, ``tail``.

    Example:
        >>> verbalise([Triple("Splash", "directed_by", "Ron Howard")])
        ['Splash directed by Ron Howard.']
    """
    if fmt not in KNOWLEDGE_FORMATS:
        raise ConfigError(f"unknown knowledge_format {fmt!r}; valid: {', '.join(KNOWLEDGE_FORMATS)}")
    unique = list(dict.fromkeys(triples))
    if fmt == "single_triples":
        return [f"[{label(t.head)}, {t.relation}, {label(t.tail)}]" for t in unique]
    if fmt == "single_sentences":
        return [
            head_template.format(head=label(t.head), relation=relation_words(t.relation), tails=label(t.tail))
            for t in unique
        ]
    lines = []
    for kind, rel, pivot, others in aggregate_triples(unique):
        names = [label(o) for o in others]
        if fmt == "joined_triples":
            joined = names[0] if len(names) == 1 else "[" + ", ".join(names) + "]"
            lines.append(
                f"[{label(pivot)}, {rel}, {joined}]"
                if kind == "head"
                else f"[{joined}, {rel}, {label(pivot)}]"
            )
        elif kind == "head":
            lines.append(
                head_template.format(head=label(pivot), relation=relation_words(rel), tails=", ".join(names))
            )
        else:
            lines.append(
                tail_template.format(heads=", ".join(names), relation=relation_words(rel), tail=label(pivot))
            )
    return lines


def ground_answers(
    answers: Sequence[str], labels: dict[str, str], depth: dict[str, int], exclude: Iterable[str] = ()
) -> list[str]:
    """Map free-text answers onto retrieved entities.

    An answer equal (case-insensitively) to a retrieved entity's label is kept. Otherwise the labels of
    retrieved entities that occur in it as whole words (longest first, no overlaps; labels of up to
    3 characters only with matching case) replace it, keeping only those of the deepest hop among them;
    ``exclude`` (the topic entities) never count. An answer naming no retrieved entity is kept as is.

    Args:
        answers: parsed LLM answers.
        labels: entity id -> label, for the retrieved entities.
        depth: entity id -> the hop at which it was reached.
        exclude: entity ids never used (the topic entities).

    Example:
        >>> ground_answers(["Big starred actors Tom Hanks"], {"Big": "Big", "Tom Hanks": "Tom Hanks"},
        ...                {"Big": 1, "Tom Hanks": 2})
        ['Tom Hanks']
    """
    skip = set(exclude)
    known = {lab.lower() for e, lab in labels.items() if e not in skip}
    by_len = sorted(
        ((lab, e) for e, lab in labels.items() if e not in skip and lab), key=lambda p: -len(p[0])
    )
    out: list[str] = []
    for a in answers:
        if a.lower() in known:
            out.append(a)
            continue
        taken = [False] * len(a)
        found: list[tuple[int, str, str]] = []
        for lab, e in by_len:
            flags = 0 if len(lab) <= 3 else re.IGNORECASE
            for m in re.finditer(rf"(?<!\w){re.escape(lab)}(?!\w)", a, flags):
                if not any(taken[m.start() : m.end()]):
                    taken[m.start() : m.end()] = [True] * (m.end() - m.start())
                    found.append((m.start(), lab, e))
        if not found:
            out.append(a)
            continue
        deepest = max(depth.get(e, 0) for _, _, e in found)
        out.extend(lab for _, lab, e in sorted(found) if depth.get(e, 0) == deepest)
    return list(dict.fromkeys(out))


def parse_variants(text: str, question: str, m: int) -> list[str]:
    """Up to ``m`` similar questions out of an LLM reply (one a line; numbering and bullets stripped).

    Lines that equal the original question or an earlier line once case, brackets and punctuation are
    ignored are dropped (a copy of the question is no variant).

    Example:
        >>> parse_variants("1. which films did ENTITY write?\\n2. name the movies written by X", "q", 2)
        ['which films did ENTITY write?', 'name the movies written by X']
    """

    def norm(t: str) -> str:
        return " ".join(re.sub(r"[^\w\s]", " ", t.lower()).split())

    out: list[str] = []
    seen = {norm(question)}
    for line in (text or "").splitlines():
        s = (
            re.sub(
                r"^\s*(?:[-*•]+|\(?\d{1,2}[.):]|(?:similar )?questions?\s*\d*\s*[:.])\s*",
                "",
                line,
                flags=re.IGNORECASE,
            )
            .strip()
            .strip("\"'`“”")
            .strip()
        )
        key = norm(s)
        if len(s) < 8 or key in seen or s.endswith(":"):
            continue
        seen.add(key)
        out.append(s)
        if len(out) >= m:
            break
    return out
