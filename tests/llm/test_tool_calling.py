"""Tool calling by constrained decoding: tool_choice forms, the grammars (checked token by token with the real
tokenizer and llguidance; no weights), parsing replies, repeated calls, streaming."""

from __future__ import annotations

import json

import pytest
import torch
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGenerationChunk
from langchain_core.tools import tool

from kg_agents.errors import ConfigError, ModelError
from kg_agents.llm.local_model import load_local_tokenizer
from kg_agents.llm.tool_calling import (
    MAX_STRING_CHARS,
    GrammarLogitsProcessor,
    ToolConstraint,
    normalize_tool_choice,
)


@tool
def magic_function(input: int) -> int:
    """Apply a magic function to an input."""
    return input + 2


@tool
def get_weather(location: str) -> str:
    """Get the weather at a location."""
    return "sunny"


def _constraint(choice: object = None, tools: list | None = None) -> ToolConstraint:
    c = ToolConstraint.from_options({"tools": tools or [magic_function, get_weather], "tool_choice": choice})
    assert c is not None
    return c


def _accepts(c: ToolConstraint, text: str) -> bool:
    """Whether the grammar lets the model write ``text`` then stop (EOS), token by token."""
    tok = load_local_tokenizer()
    ids = [*tok.encode(text, add_special_tokens=False), tok.eos_token_id]
    proc = c.processor(tok, 0)
    assert isinstance(proc, GrammarLogitsProcessor)
    for i, t in enumerate(ids):
        scores = proc(torch.tensor([ids[:i]], dtype=torch.long), torch.zeros(1, len(tok)))
        if scores[0, t] == float("-inf"):
            return False
    return True


def test_tool_choice_forms() -> None:
    names = ["a", "b"]
    assert normalize_tool_choice(None, names) == "auto"
    assert normalize_tool_choice("any", names) == normalize_tool_choice(True, names) == "required"
    assert normalize_tool_choice({"type": "function", "function": {"name": "b"}}, names) == "b"
    assert normalize_tool_choice("none", names) == "none"
    with pytest.raises(ConfigError, match="not a bound tool"):
        normalize_tool_choice("c", names)
    with pytest.raises(ConfigError, match="unsupported tool_choice"):
        normalize_tool_choice(3, names)
    with pytest.raises(ConfigError, match="needs bound tools"):
        ToolConstraint.from_options({"tool_choice": "any"})
    assert ToolConstraint.from_options({"tool_choice": "auto"}) is None
    with pytest.raises(ConfigError, match="response_format"):
        ToolConstraint.from_options({"response_format": {"type": "xml"}})
    with pytest.raises(ConfigError, match="no function name"):
        ToolConstraint.from_options({"tools": [{"type": "function"}]})


def test_grammar_admits_valid_calls_only() -> None:
    call = '{"tool_call": {"name": "magic_function", "arguments": {"input": 3}}}'
    weather = '{"tool_call": {"name": "get_weather", "arguments": {"location": "Paris"}}}'
    answer = '{"response": "It is sunny."}'
    auto, required, named, none = (_constraint(c) for c in ("auto", "any", "get_weather", "none"))
    assert _accepts(auto, call) and _accepts(auto, weather) and _accepts(auto, answer)
    assert _accepts(required, call) and not _accepts(required, answer)
    assert _accepts(named, weather) and not _accepts(named, call)
    assert _accepts(none, answer) and not _accepts(none, call)
    for bad in [
        '{"tool_call": {"name": "multiply", "arguments": {"input": 3}}}',  # not a bound tool
        '{"tool_call": {"name": "magic_function", "arguments": {"input": "3"}}}',  # wrong type
        '{"tool_call": {"name": "magic_function", "arguments": {}}}',  # missing argument
        '{"tool_call": {"name": "magic_function", "arguments": {"input": 3, "x": 1}}}',  # invented one
        "Sunny.",  # free text
    ]:
        assert not _accepts(auto, bad), bad


def _weather(location: str) -> str:
    return json.dumps({"tool_call": {"name": "get_weather", "arguments": {"location": location}}})


def test_free_strings_are_capped_but_answers_are_not() -> None:
    c = _constraint("auto")
    ok = "Paris " * (MAX_STRING_CHARS // 6)
    long = "Paris " * (MAX_STRING_CHARS // 6 + 1)
    assert _accepts(c, _weather(ok)) and not _accepts(c, _weather(long))
    assert _accepts(c, json.dumps({"response": long}))
    own = {"type": "object", "properties": {"s": {"type": "string", "maxLength": 400}}, "required": ["s"]}
    fmt = ToolConstraint.from_options(
        {"response_format": {"type": "json_schema", "json_schema": {"schema": own}}}
    )
    assert fmt is not None and _accepts(fmt, json.dumps({"s": long}))  # the schema's own maxLength wins


def test_response_format_grammars() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    c = ToolConstraint.from_options(
        {"response_format": {"type": "json_schema", "json_schema": {"schema": schema}}}
    )
    assert c is not None and _accepts(c, '{"n": 4}') and not _accepts(c, '{"n": "4"}')
    any_json = ToolConstraint.from_options({"response_format": {"type": "json_object"}})
    assert any_json is not None and _accepts(any_json, '{"x": [1, 2]}') and not _accepts(any_json, "x")


def test_processor_fails_loudly_on_a_rejected_token() -> None:
    tok = load_local_tokenizer()
    proc = _constraint("any").processor(tok, 0)
    bad = tok.encode("Hello", add_special_tokens=False)
    with pytest.raises(ModelError, match="constrained decoding failed"):
        proc(torch.tensor([bad]), torch.zeros(1, len(tok)))


def test_finish_parses_calls_responses_and_cut_calls() -> None:
    c = _constraint()
    msg = c.finish(AIMessage('{"tool_call": {"name": "get_weather", "arguments": {"location": "Paris"}}}'))
    assert msg.content == "" and msg.response_metadata["finish_reason"] == "tool_calls"
    [call] = msg.tool_calls
    assert call["name"] == "get_weather" and call["args"] == {"location": "Paris"}
    assert call["id"].startswith("call_") and call["type"] == "tool_call"
    assert c.finish(AIMessage('{"response": "Sunny."}')).content == "Sunny."
    cut = c.finish(
        AIMessage('{"tool_call": {"name": "get_wea', response_metadata={"finish_reason": "length"})
    )
    assert cut.tool_calls == [] and "incomplete tool call (length)" in cut.invalid_tool_calls[0]["error"]
    assert c.finish(AIMessage('{"response": "Sun')).content == "Sun"


def test_render_writes_history_in_the_reply_format() -> None:
    c = _constraint()
    msgs = c.render(
        [
            SystemMessage("Be brief."),
            HumanMessage("Weather in Paris?"),
            AIMessage("", tool_calls=[{"name": "get_weather", "args": {"location": "Paris"}, "id": "1"}]),
            ToolMessage("boom", tool_call_id="1", name="get_weather", status="error"),
            AIMessage("Sunny."),
        ]
    )
    assert msgs[0].content.startswith("Be brief.\n\nYou can call these tools:")
    assert '"name": "get_weather"' in msgs[0].content and '{"response":' in msgs[0].content
    assert json.loads(msgs[2].content) == {
        "tool_call": {"name": "get_weather", "arguments": {"location": "Paris"}}
    }
    assert msgs[3].content == "Error: boom" and msgs[4].content == '{"response": "Sunny."}'
    assert isinstance(c.render([HumanMessage("hi")])[0], SystemMessage)


def test_repeated_calls_are_asked_again_without_the_tool() -> None:
    c = _constraint()
    past = AIMessage("", tool_calls=[{"name": "get_weather", "args": {"location": "Paris"}, "id": "1"}])
    c.render([HumanMessage("q"), past, ToolMessage("sunny", tool_call_id="1")])
    again = AIMessage("", tool_calls=[{"name": "get_weather", "args": {"location": "Paris"}, "id": "2"}])
    retry = c.retry_options(again)
    assert retry is not None and retry["tool_choice"] == "auto"
    assert [t["function"]["name"] for t in retry["tools"]] == ["magic_function"]
    fresh = AIMessage("", tool_calls=[{"name": "get_weather", "args": {"location": "Rome"}, "id": "3"}])
    assert c.retry_options(fresh) is None
    only = _constraint(tools=[get_weather])
    only.render([past])
    assert only.retry_options(again) == {"tool_choice": "none"}
    forced = _constraint("any")
    forced.render([past])
    assert forced.retry_options(again) is None  # a forced call is never second-guessed


def test_stream_yields_one_tool_call_chunk_with_the_usage() -> None:
    usage = {"input_tokens": 5, "output_tokens": 3, "total_tokens": 8}
    raw = ['{"tool_call": {"name": "magic_', 'function", "arguments": {"input": 3}}}']
    chunks = [ChatGenerationChunk(message=AIMessageChunk(content=t)) for t in raw]
    chunks.append(ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=usage)))

    def never(_: dict) -> list:
        raise AssertionError("no retry expected")

    out = list(_constraint().stream(iter(chunks), never))
    assert len(out) == 1
    msg = out[0].message
    assert isinstance(msg, AIMessageChunk) and msg.usage_metadata == usage
    assert msg.tool_calls[0]["name"] == "magic_function" and msg.tool_calls[0]["args"] == {"input": 3}
    assert msg.tool_call_chunks[0]["args"] == '{"input": 3}'
