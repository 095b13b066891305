"""The shared fake chat model behaves as documented (the graph tests rely on it)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage

from tests.fakes import FakeChat


def test_rules_win_over_replies_and_are_counted():
    llm = FakeChat(rules=[("Select", "A"), ("Score", lambda t: str(len(t)))], replies=["x", "y"])
    assert llm.invoke("Select one").content == "A"
    assert llm.invoke("Score this").content == "10"
    assert [llm.invoke("other").content for _ in range(3)] == ["x", "y", "x"]
    assert llm.calls == {"Select": 1, "Score": 1, "replies": 3}
    assert llm.prompts[0] == "Select one"


def test_replies_without_cycle_repeat_the_last_and_carry_tool_calls():
    call = AIMessage(content="", tool_calls=[{"name": "RetrieveNode", "args": {"name": "Splash"}, "id": "1"}])
    llm = FakeChat(replies=[call, "done"], cycle=False)
    assert llm.bind_tools([]) is llm
    assert llm.invoke("q").tool_calls[0]["name"] == "RetrieveNode"
    assert [llm.invoke("q").content for _ in range(2)] == ["done", "done"]


def test_exceptions_raise_unknown_prompts_fail_and_usage_is_reported():
    llm = FakeChat(rules={"boom": RuntimeError("down")}, tools=False)
    with pytest.raises(RuntimeError, match="down"):
        llm.invoke("boom")
    with pytest.raises(AssertionError, match="no reply"):
        llm.invoke("unexpected")
    with pytest.raises(NotImplementedError):
        llm.bind_tools([])
    msg = FakeChat(default="two words").invoke("one two three")
    assert msg.usage_metadata == {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}
