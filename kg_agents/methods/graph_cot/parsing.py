"""Reading Graph-CoT's model outputs: ReAct steps, bracketed lists, scores, Selection votes, Yes/No.

Every parser accepts whatever a model wrote (markdown, missing labels, trailing chatter) and never
raises: what cannot be read comes back as ``None``, an empty list or a :class:`ParsedAction` with
``error`` set, which the graph turns into an observation or a default.

Example:
    >>> parse_action("Thought 1: find it.\\nAction 1: NeighborCheck[Splash, directed_by]").actions
    [('NeighborCheck', ['Splash', 'directed_by'])]
    >>> parse_bracket_list("Relevant Entities: [Tom Hanks, Splash]")
    ['Tom Hanks', 'Splash']
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kg_agents.kg.base import INVERSE_PREFIX

__all__ = [
    "ACTION_NAMES",
    "ParsedAction",
    "match_relations",
    "parse_action",
    "parse_bracket_list",
    "parse_score",
    "parse_selection",
    "parse_thought",
    "parse_yes",
    "strip_label",
]

#: The action names a text step may use (``NeighbourCheck`` is read as ``NeighborCheck``'s spelling).
ACTION_NAMES = ("RetrieveNode", "NodeFeature", "NeighborCheck", "NeighbourCheck", "NodeDegree", "Finish")
_ACTION_RE = re.compile(r"\b(" + "|".join(ACTION_NAMES) + r")\s*[\[\(]([^\]\)\n]*)[\]\)]", re.IGNORECASE)
_LABEL_RE = re.compile(
    r"^\s*(?:\*\*)?\s*(thought|action)\s*\d*\s*(?:\*\*)?\s*[:：]\s*(?:\*\*)?\s*", re.IGNORECASE
)
_FINISH_RE = re.compile(r"(?i)\b(?:action\s*\d*\s*:\s*)?finish\s*[\[\(]")


@dataclass
class ParsedAction:
    """A text step, parsed: the thought, the actions ``(name, args)`` or the finish answers, or an error."""

    thought: str
    actions: list[tuple[str, list[str]]]
    finish: list[str] | None = None
    error: str | None = None


def strip_label(line: str) -> str:
    """``line`` without a leading ``Thought n:`` / ``Action n:`` label (markdown bold included).

    Example:
        >>> strip_label("**Thought 2:** look it up")
        'look it up'
    """
    return _LABEL_RE.sub("", line)


def _split_args(name: str, raw: str) -> list[str]:
    raw = raw.strip()
    if name.casefold() in ("retrievenode", "finish"):
        return [raw.strip().strip("'\"")]
    # Node names may contain commas; features and relations do not: split on the last comma.
    head, sep, tail = raw.rpartition(",")
    if not sep:
        return [raw.strip().strip("'\"")]
    return [head.strip().strip("'\""), tail.strip().strip("'\"")]


def parse_action(text: str, *, max_actions: int = 3) -> ParsedAction:
    """Parse a ReAct step ``Thought n: ... Action n: Name[args]`` written by any model.

    Robust to a missing ``Thought``/``Action`` label, parentheses instead of brackets, markdown bold,
    several actions on one line (at most ``max_actions`` are kept), and an imagined continuation
    (everything from ``Observation`` on is dropped). No action gives ``error`` set.

    Example:
        >>> p = parse_action("Thought 1: find it.\\nAction 1: NeighborCheck[Splash, directed_by]")
        >>> p.thought, p.actions
        ('find it.', [('NeighborCheck', ['Splash', 'directed_by'])])
        >>> parse_action("Action: Finish[Ron Howard]").finish
        ['Ron Howard']
    """
    text = str(text or "")
    cut = re.search(r"\n\s*(?:\*\*)?\s*observation\b", text, re.IGNORECASE)
    if cut:
        text = text[: cut.start()]
    matches = list(_ACTION_RE.finditer(text))
    first_action = re.search(r"(?im)^\s*(?:\*\*)?\s*action\s*\d*\s*(?:\*\*)?\s*[:：]", text)
    starts = [m.start() for m in matches[:1]] + ([first_action.start()] if first_action else [])
    stop = min([*starts, len(text)])
    thought = " ".join(strip_label(line).strip() for line in text[:stop].splitlines()).strip()
    if not matches:
        if first_action:
            line = text[first_action.start() :].splitlines()[0].strip()
            return ParsedAction(thought, [], error=f"Invalid action {line!r}.")
        return ParsedAction(thought, [], error="No action found.")
    name0 = matches[0].group(1)
    if name0.casefold() == "finish":
        raw = matches[0].group(2)
        answers = [a.strip().strip("'\"") for a in re.split(r"\s*\|\s*|\s*;\s*", raw) if a.strip()]
        return ParsedAction(thought, [], finish=answers)
    actions = [
        (m.group(1), _split_args(m.group(1), m.group(2)))
        for m in matches
        if m.group(1).casefold() != "finish"
    ][:max_actions]
    return ParsedAction(thought, actions)


def parse_thought(text: str) -> str:
    """The thought of an exploration step: the text before any ``Finish[``, its label removed
    (the whole text when nothing is left).

    Example:
        >>> parse_thought("Thought: Splash was directed by Ron Howard. Finish[Ron Howard]")
        'Splash was directed by Ron Howard.'
    """
    thought = _FINISH_RE.split(text)[0].strip()
    return strip_label(thought).strip() or text


def parse_bracket_list(text: str) -> list[str]:
    """The comma-separated items of the last ``[...]`` in ``text`` (else of its last non-empty line).

    Example:
        >>> parse_bracket_list("Relevant Entities: [Tom Hanks, Splash]")
        ['Tom Hanks', 'Splash']
    """
    text = str(text or "")
    found = re.findall(r"\[([^\[\]]*)\]", text)
    if found:
        raw = found[-1]
    else:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        raw = re.sub(r"^[^:]*:\s*", "", lines[-1]) if lines else ""
    out = [p.strip().strip("'\"").strip() for p in re.split(r"[,|;]", raw)]
    return list(dict.fromkeys(p for p in out if p))


def parse_score(text: str) -> float | None:
    """The first number of ``text`` as a probability (``80%`` is 0.8; clipped to [0, 1]); None if none.

    Example:
        >>> parse_score("Score: 0.75"), parse_score("80%"), parse_score("no idea")
        (0.75, 0.8, None)
    """
    m = re.search(r"(\d+(?:\.\d+)?|\.\d+)\s*(%?)", str(text or ""))
    if not m:
        return None
    v = float(m.group(1))
    if m.group(2) or v > 1.0:
        v = v / 100.0 if v <= 100.0 else 1.0
    return max(0.0, min(1.0, v))


def parse_selection(text: str, n: int) -> list[int]:
    """Choice ids (1-based) ranked by a Selection vote: the id after "best choice is" first, then the other
    ids the text names, in order; ids outside ``1..n`` are ignored.

    Example:
        >>> parse_selection("Choice 2 looks good. The best choice is 3", 3)
        [3, 2]
    """
    text = str(text or "")
    ranked: list[int] = []
    best = re.findall(r"best choice is\D{0,5}(\d+)", text, re.IGNORECASE)
    if best:
        ranked.append(int(best[-1]))
    ranked += [int(x) for x in re.findall(r"\b(\d+)\b", text)]
    return list(dict.fromkeys(i for i in ranked if 1 <= i <= n))


def parse_yes(text: str) -> bool:
    """True when the answer to a Yes/No question (``End?``) starts with yes (``[Yes]``, ``yes.``).

    Example:
        >>> parse_yes("[Yes] the triples answer it"), parse_yes("No")
        (True, False)
    """
    return bool(re.match(r"\W*yes", str(text), re.IGNORECASE))


def match_relations(names: list[str], rels: list[str]) -> list[str]:
    """The relations of ``rels`` that ``names`` (as a model wrote them) denote, in order, once each.

    A name matches case-folded with spaces read as ``_``; a plain name matches its inverse
    ``~relation`` when only the inverse is among ``rels``.

    Example:
        >>> match_relations(["Directed By", "starred_actors"], ["directed_by", "~starred_actors"])
        ['directed_by', '~starred_actors']
    """
    norm = {r.casefold(): r for r in rels}
    out = []
    for n in names:
        key = n.strip().casefold().replace(" ", "_")
        if key in norm:
            out.append(norm[key])
        elif INVERSE_PREFIX + key in norm and key not in norm:
            out.append(norm[INVERSE_PREFIX + key])
    return list(dict.fromkeys(out))
