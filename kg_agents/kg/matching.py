"""The keys and scores of the entity index's matching tiers: the ``folded`` and ``loose`` keys of a
label, the spelling similarity and the score of a semantic candidate, the text embedded for a label, and
:class:`LinkedEntity`, one candidate as a tier found it."""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass

__all__ = [
    "STOPWORDS",
    "WORD",
    "LinkedEntity",
    "display_text",
    "fold",
    "loose_key",
    "match_score",
    "spelling_similarity",
]

#: A word: a run of word characters (what :func:`loose_key` keeps).
WORD = re.compile(r"\w+")

#: Words that never make an entity mention on their own (question words, function words).
_STOPWORDS_TEXT = """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours out over
    own same she should so some such than that the their theirs them themselves then there these they
    this those through to too under until up very was we were what when where which while who whom
    whose why will with would you your yours yourself s t also ever tell give list name find show
    share shared same type types kind kinds"""
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())


@dataclass(frozen=True, slots=True)
class LinkedEntity:
    """One candidate entity for a piece of text.

    Attributes:
        id: the entity id in the KG.
        label: its label.
        score: 1.0 for lexical matches; for semantic ones :func:`match_score` of the cosine
            similarity and the spelling similarity (0..1).
        method: ``"exact"``, ``"id"``, ``"folded"``, ``"loose"`` or ``"semantic"``.
    """

    id: str
    label: str
    score: float
    method: str


def fold(text: str) -> str:
    """Case-folded, whitespace-normalised form of a label (``_`` counts as a space).

    Example:
        >>> fold("  Babaloo_MANDEL ")
        'babaloo mandel'
    """
    return " ".join(unicodedata.normalize("NFKC", text).casefold().replace("_", " ").split())


def loose_key(text: str) -> str:
    """Word characters only, case-folded, accents dropped.

    Example:
        >>> loose_key("X-Men: The Last Stand"), loose_key("Amélie")
        ('x men the last stand', 'amelie')
    """
    decomposed = unicodedata.normalize("NFKD", text)
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(WORD.findall(unicodedata.normalize("NFKC", bare).casefold().replace("_", " ")))


def spelling_similarity(a: str, b: str) -> float:
    """Character similarity of two texts after :func:`loose_key` (difflib ratio, 0..1)."""
    return difflib.SequenceMatcher(None, loose_key(a), loose_key(b), autojunk=False).ratio()


def match_score(cosine: float, spelling: float) -> float:
    """The score of a semantic candidate: ``max(cosine, 0.3 * cosine + 0.7 * spelling)``.

    Sentence embeddings place a misspelt name (``tom hanx``: cosine 0.56 to ``Tom Hanks``) barely
    closer to the right label than to an unrelated one (``Steven Spielberg``: 0.62 to ``Tom Hanks``);
    mixing in the spelling similarity lifts typos without penalising matches that only the
    embedding sees (``sci-fi`` -> ``Science Fiction``).
    """
    return max(cosine, 0.3 * cosine + 0.7 * spelling)


def display_text(label: str) -> str:
    """The text embedded for a label (``_`` read as a space, whitespace collapsed)."""
    return " ".join(label.replace("_", " ").split())
