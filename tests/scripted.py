"""A scripted chat model for deterministic graph tests: replies chosen by a key in the prompt."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field


class KeyedChat(BaseChatModel):
    """Replies with ``script[key]`` for the first key found in the last message (else ``default``).

    A reply that is an exception instance is raised instead. ``calls`` counts the calls.
    """

    script: dict[str, Any]
    default: str = "Answer: nothing"
    calls: list[str] = Field(default_factory=list)
    resolved: list[str] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "keyed-scripted"

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        text = str(messages[-1].content)
        self.calls.append(text)
        reply: Any = self.default
        for key, value in self.script.items():
            if key in text:
                reply = value
                break
        if isinstance(reply, BaseException):
            raise reply
        n_in, n_out = len(text.split()), len(str(reply).split())
        usage = {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}
        msg = AIMessage(content=reply, usage_metadata=usage)
        return ChatResult(generations=[ChatGeneration(message=msg)])
