"""The one answer parser: answers out of a model's free text.

Used where a method lets the model write its answer (the papers' free-generation prompts).
"""

from __future__ import annotations

import re

__all__ = ["parse_answers"]

_PREFIX = re.compile(
    r"^\s*(?:#+\s*)?(?:final\s+)?(?:answers?|the answers? (?:is|are)|ans)\s*[:：\-]\s*", re.IGNORECASE
)
_BULLET = re.compile(r"^\s*(?:[-*•]+|\(?\d{1,2}[.)]|[A-Z][.)](?=\s))\s*")
_QUOTES = "\"'`“”‘’"


def parse_answers(text: str, *, max_answers: int = 50) -> list[str]:
    """Answers out of free LLM text.

    One documented procedure: take the text after the last ``Answer:``-style marker if there is one
    (else the whole text); split it into lines and on ``|`` and ``;``; strip bullets, numbering,
    quotes, trailing punctuation and a leading "the answer is"; drop empties and duplicates
    (case-insensitively), keeping order. Commas are NOT split on (names contain commas).

    Example:
        >>> parse_answers("Reasoning...\\nAnswer: Ron Howard | Penny Marshall")
        ['Ron Howard', 'Penny Marshall']
    """
    if not isinstance(text, str) or not text.strip():
        return []
    marker = list(re.finditer(r"(?im)^\s*(?:#+\s*)?(?:final\s+)?answers?\s*[:：]", text))
    if marker:
        text = text[marker[-1].start() :]
    out: list[str] = []
    seen: set[str] = set()
    for line in re.split(r"[\n|;]", text):
        s = _PREFIX.sub("", line)
        s = _BULLET.sub("", s).strip().strip(_QUOTES).strip()
        s = re.sub(r"[\s.。!]+$", "", s).strip().strip(_QUOTES).strip()
        if not s or s.lower() in seen or len(s) > 200:
            continue
        seen.add(s.lower())
        out.append(s)
        if len(out) >= max_answers:
            break
    return out
