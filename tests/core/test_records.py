"""Errors inside graphs are records; the CLI and runner read their fields, not their text."""

from __future__ import annotations

import asyncio

from kg_agents.core.records import (
    end_on_error,
    error_record,
    error_text,
    error_update,
    guarded,
    halted,
    no_answer_error,
    run_level_errors,
)
from kg_agents.errors import EndpointError, KGError, ModelError


def test_an_exception_becomes_a_record_naming_its_type_and_endpoint():
    rec = error_record("explore", EndpointError("http://127.0.0.1:9/sparql", "timed out"))
    assert rec == {
        "node": "explore",
        "type": "EndpointError",
        "message": "SPARQL endpoint http://127.0.0.1:9/sparql failed: timed out",
        "endpoint": "http://127.0.0.1:9/sparql",
        "halted": False,
    }
    assert (
        error_text(rec)
        == "explore: EndpointError: SPARQL endpoint http://127.0.0.1:9/sparql failed: timed out"
    )
    assert error_record("answer", "nothing usable", type="NoAnswer")["type"] == "NoAnswer"
    assert error_record("answer", "nothing usable")["type"] == "ReasoningError"


def test_update_puts_the_record_in_errors_and_a_step_in_the_trace():
    up = error_update("decode", ModelError("server down"), halted=True)
    assert up["errors"][0]["halted"] and up["errors"][0]["type"] == "ModelError"
    assert up["trace"] == [
        {"node": "decode", "error": "ModelError: server down", "error_type": "ModelError", "halted": True}
    ]
    assert no_answer_error("answer", "xy")[0]["message"] == "no answer in the model's output (2 characters)"


def test_run_level_errors_are_endpoint_and_model_failures():
    errors = [
        error_record("a", "x", type="NoAnswer"),
        error_record("b", ModelError("down")),
        error_record("c", EndpointError("http://e/q", "500")),
    ]
    assert [e["node"] for e in run_level_errors(errors)] == ["b", "c"]


def test_guarded_ends_the_question_and_the_router_sees_it():
    @guarded("retrieve")
    def retrieve(state):
        raise KGError("store closed")

    @guarded("aretrieve")
    async def aretrieve(state):
        raise KGError("store closed")

    out = retrieve({})
    assert out["answers"] == [] and out["paths"] == [] and halted(out)
    assert halted(asyncio.run(aretrieve({})))
    route = end_on_error("next")
    assert route(out) == "end" and route({"errors": []}) == "next"
    assert end_on_error("next", on_answers=True)({"errors": [error_record("x", "y")], "answers": []}) == "end"
