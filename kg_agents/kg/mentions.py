"""Finding the entities a question mentions, for :meth:`~kg_agents.kg.index.EntityIndex.topic_entities`:
label n-grams matched on their ``loose`` key and ranked, and the candidate spans searched semantically.

The functions read the index's tables as arguments: ``loose`` (loose key -> ids), ``labels``
(id -> label) and, for the semantic side, its ``search_many``.

Example:
    >>> labels = {"Babaloo Mandel": "Babaloo Mandel", "film": "film"}
    >>> loose = {"babaloo mandel": ["Babaloo Mandel"], "film": ["film"]}
    >>> ngram_mentions("which film did Babaloo Mandel write", 3, loose, labels, max_ngram=2)
    (['Babaloo Mandel'], True, (3, 5))
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Mapping

from kg_agents.kg.matching import STOPWORDS, WORD, LinkedEntity, loose_key

__all__ = [
    "SearchMany",
    "capitalised",
    "exact_at",
    "is_proper",
    "ngram_mentions",
    "question_tokens",
    "semantic_mentions",
]

#: ``search_many(texts, k=...)``: the semantic candidates of each text, best first.
SearchMany = Callable[..., list[list[LinkedEntity]]]


def capitalised(text: str, start: int) -> bool:
    """Whether the word at ``start`` of ``text`` starts with an upper-case letter or a digit."""
    return text[start].isupper() or text[start].isdigit()


def is_proper(label: str) -> bool:
    """A label that looks like a name: it has an upper-case letter or a digit."""
    return any(c.isupper() or c.isdigit() for c in label)


def question_tokens(question: str) -> list[tuple[str, int, int]]:
    """Word tokens as :func:`~kg_agents.kg.matching.loose_key` writes them, with their offsets in the
    NFKC text."""
    text = unicodedata.normalize("NFKC", question).replace("_", " ")
    return [(loose_key(m.group()) or m.group().casefold(), m.start(), m.end()) for m in WORD.finditer(text)]


def ngram_mentions(
    question: str,
    max_entities: int,
    loose: Mapping[str, list[str]],
    labels: Mapping[str, str],
    max_ngram: int,
) -> tuple[list[str], bool, tuple[int, int] | None]:
    """The ids of the label n-grams of ``question`` (at most ``max_ngram`` words), non-overlapping and
    ranked (see :meth:`~kg_agents.kg.index.EntityIndex.topic_entities`); whether the best one is strong;
    and its span in tokens (None when none matched)."""
    toks = question_tokens(question)
    text = unicodedata.normalize("NFKC", question).replace("_", " ")
    n = len(toks)
    # (rank key, start, end, ids); see the ranking rules in EntityIndex.topic_entities().
    cands: list[tuple[tuple[int, int, int, int], int, int, list[str]]] = []
    for size in range(min(max_ngram, n), 0, -1):
        for i in range(n - size + 1):
            words = [t[0] for t in toks[i : i + size]]
            only_stop = all(w in STOPWORDS for w in words)
            if only_stop and size == 1 and (i == 0 or words[0] == "i"):
                continue  # a capitalised first word or the pronoun "I" is not a name
            ids = loose.get(" ".join(words))
            if not ids:
                continue
            start = toks[i][1]
            surface = WORD.findall(text[start : toks[i + size - 1][2]])
            norm = {e: unicodedata.normalize("NFKC", labels[e]).replace("_", " ") for e in ids}
            exact = {e for e, lab in norm.items() if WORD.findall(lab) == surface}
            proper = {e for e, lab in norm.items() if is_proper(lab)}
            verbatim = {e for e, lab in norm.items() if text[start : start + len(lab)] == lab}
            ranked = sorted(ids, key=lambda e: (e not in proper, e not in exact, e not in verbatim))
            if only_stop and not exact & proper:
                continue  # "You and Me", "Them" only when written as the label is
            key = (-int(bool(exact & proper)), -size, -int(bool(proper)), -i)
            cands.append((key, i, i + size, ranked))
    cands.sort(key=lambda c: c[0])
    any_proper = any(c[0][2] for c in cands)
    all_lower = not any(c.isupper() for c in question)
    taken = [False] * n
    out: list[str] = []
    mentions = 0
    best: tuple[int, int] | None = None
    strong = False
    for key, a, b, ids in cands:
        if any(taken[a:b]) or (any_proper and not key[2]):
            continue
        taken[a:b] = [True] * (b - a)
        out.extend(i for i in ids if i not in out)
        if best is None:
            best = (a, b)
            # strong: a name written exactly as its label, with no capitalised word glued to it
            # (a misspelt "Simon Winecr" matches the label "Simon" exactly, but "Winecr" is left)
            glued = [j for j in (a - 1, b) if 0 < j < n and capitalised(text, toks[j][1])]
            # an all-lower-case question cannot match case: a name-like label found loosely counts
            strong = (key[0] == -1 or (key[2] == -1 and all_lower)) and not glued
        mentions += 1
        if mentions >= max_entities:
            break
    return out, strong, best


def exact_at(
    question: str, span: tuple[int, int], loose: Mapping[str, list[str]], labels: Mapping[str, str]
) -> bool:
    """True when the words of ``span`` (in tokens) are, case included, the words of some label."""
    text = unicodedata.normalize("NFKC", question).replace("_", " ")
    toks = question_tokens(question)
    a, b = span
    surface = WORD.findall(text[toks[a][1] : toks[b - 1][2]])
    ids = loose.get(" ".join(t[0] for t in toks[a:b]), [])
    return any(WORD.findall(labels[e].replace("_", " ")) == surface for e in ids)


def semantic_mentions(
    question: str,
    max_entities: int,
    min_score: float,
    search_many: SearchMany,
    labels: Mapping[str, str],
) -> list[tuple[str, tuple[int, int]]]:
    """The best non-overlapping semantic hits of the question's candidate spans (and of the whole
    question) with a score of at least ``min_score``: ``(id, span in tokens)``, best first, at most
    ``max_entities``."""
    toks = question_tokens(question)
    text = unicodedata.normalize("NFKC", question).replace("_", " ")
    spans: list[tuple[int, int]] = []
    # In a mixed-case question names are capitalised: spans without a capitalised word are not
    # candidates ("movies" would match the film "Movie Movie").
    cased = any(c.isupper() for c in question)
    for size in range(1, min(len(toks), 8) + 1):
        for i in range(len(toks) - size + 1):
            if toks[i][0] in STOPWORDS or toks[i + size - 1][0] in STOPWORDS:
                continue
            if cased and not any(capitalised(text, toks[j][1]) for j in range(i, i + size)):
                continue
            # nor spans that cut a run of capitalised words ("Simon" out of "Simon Winecr")
            glued = [j for j in (i - 1, i + size) if 0 < j < len(toks) and capitalised(text, toks[j][1])]
            if cased and glued:
                continue
            spans.append((i, i + size))
    if not toks:
        return []
    texts = [text[toks[a][1] : toks[b - 1][2]] for a, b in spans] + [question]
    spans.append((0, len(toks)))
    results = search_many(texts, k=1)
    scored = [
        (hits[0].score, span, hits[0].id)
        for span, hits in zip(spans, results, strict=True)
        if hits and hits[0].score >= min_score
    ]
    # as for n-grams: when a name matched, lower-case labels ("film" for "movies") give way
    if any(is_proper(labels[eid]) for _, _, eid in scored):
        scored = [c for c in scored if is_proper(labels[c[2]])]
    scored.sort(key=lambda x: -x[0])
    taken = [False] * len(toks)
    out: list[tuple[str, tuple[int, int]]] = []
    for _, (a, b), eid in scored:
        if len(out) >= max_entities:
            break
        if any(taken[a:b]) or any(eid == e for e, _ in out):
            continue
        taken[a:b] = [True] * (b - a)
        out.append((eid, (a, b)))
    return out
