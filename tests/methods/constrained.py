"""What every method's answer to a constraint question over the contract graph must be: "which [Tom Hanks]
films came out in 1988" (the chain ``~starred_actors`` from Tom Hanks, narrowed by ``release_year``)."""

from __future__ import annotations

from typing import Any

from kg_agents.kg.base import verify_path

#: The question, its topic entity given.
IN_1988 = {"question": "which [Tom Hanks] films came out in 1988", "topic_entities": ["Tom Hanks"]}
#: The chain's answers (the constraint off), and the one of them that came out in 1988.
FILMS = ["Big", "Cast Away", "Forrest Gump", "Splash"]


def assert_narrowed(out: dict[str, Any], off: dict[str, Any], kg: Any) -> None:
    """With the constraint (``out``): Big alone, with its chain and its constraint path, both verified,
    and the trace's step; without (``off``): the whole chain, no constraint path, no step."""
    assert out["errors"] == [] and out["answers"] == ["Big"]
    assert sorted(p.to_text() for p in out["paths"]) == [
        "Big -> release_year -> 1988",
        "Tom Hanks -> ~starred_actors -> Big",
    ]
    assert all(verify_path(kg, p) for p in out["paths"])
    step = next(t for t in out["trace"] if t["node"] == "constrain")
    assert (step["value"], step["relation"], step["kept"], step["dropped"]) == ("1988", "release_year", 1, 3)
    assert sorted(off["answers"]) == FILMS and off["errors"] == []
    assert not [p for p in off["paths"] if "release_year" in p.to_text()]
    assert not [t for t in off["trace"] if t["node"] == "constrain"]
