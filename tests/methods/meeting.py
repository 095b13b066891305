"""What every method's answer to the two-topic question over the contract graph must be: "which films
starring [Tom Hanks] did [Robert Zemeckis] direct"."""

from __future__ import annotations

from typing import Any

from kg_agents.kg.base import verify_path

#: The question's topic entities and the relation each walks from it to the answers.
WALKS = (("Tom Hanks", "~starred_actors"), ("Robert Zemeckis", "~directed_by"))
#: Where the two walks meet.
MET = ["Cast Away", "Forrest Gump"]


def assert_answered_where_they_meet(out: dict[str, Any], kg: Any) -> None:
    """No error, the answers where the walks meet, and for each answer one verified path from each topic
    entity."""
    assert out["errors"] == []
    assert sorted(out["answers"]) == MET
    assert sorted(p.to_text() for p in out["paths"]) == sorted(
        f"{t} -> {r} -> {a}" for a in MET for t, r in WALKS
    )
    assert all(verify_path(kg, p) for p in out["paths"])
