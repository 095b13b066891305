"""A scripted chat model for deterministic graph tests: replies chosen by a key in the prompt."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class KeyedChat(BaseChatModel):
    """Replies with ``script[key]`` for the first key found in the last message (else ``default``).

    A reply that is an exception instance is raised instead. ``calls`` counts the calls.
    """

    script: dict[str, Any]
    default: str = "Answer: nothing"
    calls: list[str] = []
    resolved: list[str] = []

    @property
    def _llm_type(self) -> str:
        return "keyed-scripted"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        text = str(messages[-1].content)
        self.calls.append(text)
        reply: Any = self.default
        for key, value in self.script.items():
            if key in text:
                reply = value
                break
        if isinstance(reply, BaseException):
            raise reply
        msg = AIMessage(content=reply, usage_metadata={"input_tokens": len(text.split()),
                                                       "output_tokens": len(str(reply).split()),
                                                       "total_tokens": len(text.split()) + len(str(reply).split())})
        return ChatResult(generations=[ChatGeneration(message=msg)])
