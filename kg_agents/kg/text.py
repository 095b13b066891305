"""Text that every method derives from KG ids and questions: readable relations, bracketed entities.

Example:
    >>> relation_words("directed_by"), relation_words("http://example.org/rel/has_genre")
    ('directed by', 'has genre')
    >>> bracketed("what movies did [Babaloo Mandel] write")
    ['Babaloo Mandel']
    >>> unbracket("what movies did [Babaloo Mandel] write")
    'what movies did Babaloo Mandel write'
    >>> bracket_mentions("who directed splash", ["Splash"])
    'who directed [splash]'
"""

from __future__ import annotations

import re

__all__ = ["BRACKETED", "bracket_mentions", "bracketed", "relation_words", "unbracket"]

#: A ``[bracketed]`` span: how MetaQA marks a question's topic entity.
BRACKETED = re.compile(r"\[([^\[\]]+)\]")


def relation_words(relation: str) -> str:
    """A relation id made readable: an IRI's last segment, ``_`` and ``.`` read as spaces.

    Freebase ``people.person.place_of_birth`` gives ``"people person place of birth"``. A composite
    relation through a mediator (:mod:`kg_agents.kg.mediators`) reads as its two parts, ``reverse of``
    before a part walked backwards.

    Example:
        >>> relation_words("^film.performance.actor / film.performance.film")
        'reverse of film performance actor / film performance film'
    """
    from kg_agents.kg.mediators import split_composite

    parts = split_composite(relation)
    if parts is not None:
        return " / ".join(("reverse of " if inv else "") + relation_words(rel) for rel, inv in parts)
    rel = re.split(r"[/#]", relation.rstrip("/#>"))[-1] if "/" in relation or "#" in relation else relation
    return re.sub(r"[._\s]+", " ", rel).strip() or relation


def bracketed(question: str) -> list[str]:
    """The ``[bracketed]`` spans of ``question``, stripped, in order."""
    return [s.strip() for s in BRACKETED.findall(question) if s.strip()]


def unbracket(question: str) -> str:
    """``question`` with its brackets removed (the text inside is kept)."""
    return BRACKETED.sub(r"\1", question)


def bracket_mentions(text: str, names: list[str]) -> str:
    """``text`` with the first mention of each name (case-insensitive, whole words) put in brackets, as
    MetaQA marks topic entities; text that already has brackets is returned unchanged."""
    if BRACKETED.search(text):
        return text
    for name in sorted({n for n in names if n and n.strip()}, key=lambda n: (-len(n), n)):
        m = re.search(rf"(?<![\w\[]){re.escape(name)}(?![\w\]])", text, re.IGNORECASE)
        if m:
            text = f"{text[: m.start()]}[{m.group(0)}]{text[m.end() :]}"
    return text
