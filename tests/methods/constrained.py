"""What every method's answer to a constraint question over the contract graph must be: "which [Tom Hanks]
films came out in 1988" (the chain ``~starred_actors`` from Tom Hanks, narrowed by ``release_year``)."""

from __future__ import annotations

from typing import Any

from kg_agents.kg.base import verify_path

#: The question, its topic entity given.
IN_1988 = {"question": "which [Tom Hanks] films came out in 1988", "topic_entities": ["Tom Hanks"]}
#: The chain's answers (the constraint off), and the one of them that came out in 1988.
FILMS = ["Big", "Cast Away", "Forrest Gump", "Splash"]


def assert_narrowed(out: dict[str, Any], off: dict[str, Any], kg: Any, *, exact_set: bool = True) -> None:
    """With the constraint (``out``): Big alone, with its chain and its constraint path, both verified,
    and the trace's step; without (``off``): the whole chain, no constraint path, no step.

    ``exact_set=False`` lets the set without the constraint hold more than the chain's films (a small
    trained explorer's set may take in a near entity): the step then drops every other one of it."""
    assert out["errors"] == [] and out["answers"] == ["Big"]
    assert sorted(p.to_text() for p in out["paths"]) == [
        "Big -> release_year -> 1988",
        "Tom Hanks -> ~starred_actors -> Big",
    ]
    assert all(verify_path(kg, p) for p in out["paths"])
    step = next(t for t in out["trace"] if t["node"] == "constrain")
    dropped = 3 if exact_set else len(off["answers"]) - 1
    assert (step["value"], step["relation"], step["kept"], step["dropped"]) == (
        "1988",
        "release_year",
        1,
        dropped,
    )
    if exact_set:
        assert sorted(off["answers"]) == FILMS
    else:
        assert set(FILMS) <= set(off["answers"])
    assert off["errors"] == []
    assert not [p for p in off["paths"] if "release_year" in p.to_text()]
    assert not [t for t in off["trace"] if t["node"] == "constrain"]
