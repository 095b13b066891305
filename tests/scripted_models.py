"""Scripted LangChain chat models for deterministic graph tests (fakes only at the model boundary).

- :class:`ScriptedToolModel` replays a list of ``AIMessage`` s (with ``tool_calls``) in order and accepts
  ``bind_tools``, for agents that call tools one step after another.
- :class:`RuleModel` answers each prompt by the first rule whose key occurs in the last message, so that
  answers do not depend on the order in which parallel branches (``Send``) call the model. It counts
  the calls per rule.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, PrivateAttr


class ScriptedToolModel(BaseChatModel):
    """Replays ``script`` (AIMessages, possibly with tool calls) in order; supports ``bind_tools``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    script: list[AIMessage]
    _i: int = PrivateAttr(default=0)
    _seen: list[list[BaseMessage]] = PrivateAttr(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-tools"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedToolModel:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        self._seen.append(list(messages))
        msg = self.script[min(self._i, len(self.script) - 1)]
        self._i += 1
        msg = msg.model_copy(
            update={"usage_metadata": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}
        )
        return ChatResult(generations=[ChatGeneration(message=msg)])

    @property
    def seen(self) -> list[list[BaseMessage]]:
        return self._seen


Rule = tuple[str, str | Callable[[str], str]]


class RuleModel(BaseChatModel):
    """Answers by rules ``(key, reply)``: the first key found in the last message wins.

    ``reply`` may be a function of the last message's text. Every call is counted under its key
    (``calls``); a prompt no rule matches raises, so a test cannot pass on an unexpected prompt.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    rules: list[Any]
    tools: bool = False
    _calls: Counter[str] = PrivateAttr(default_factory=Counter)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "rules"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> RuleModel:
        if not self.tools:
            raise NotImplementedError
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        last = str(messages[-1].content)
        for key, reply in self.rules:
            if key in last:
                with self._lock:
                    self._calls[key] += 1
                out = reply(last) if callable(reply) else reply
                msg = out if isinstance(out, AIMessage) else AIMessage(content=out)
                msg = msg.model_copy(
                    update={
                        "usage_metadata": {
                            "input_tokens": len(last.split()),
                            "output_tokens": 3,
                            "total_tokens": 0,
                        }
                    }
                )
                return ChatResult(generations=[ChatGeneration(message=msg)])
        raise AssertionError(f"no rule for prompt: {last[-300:]!r}")

    @property
    def calls(self) -> Counter[str]:
        return self._calls
