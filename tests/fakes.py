"""The one fake chat model of the test suite: deterministic replies at the model boundary.

:class:`FakeChat` answers each call by the first rule whose key occurs in the last message (so replies
do not depend on the order in which parallel branches call the model), else with the next of its
``replies`` (in turn, cycling unless ``cycle=False``, which repeats the last), else with ``default``.
A reply is text, an ``AIMessage`` (tool calls included), an exception (raised), or a function of the
last message's text returning one of those. With none of them for a prompt it raises, so a test cannot
pass on a prompt it did not expect. ``bind_tools`` is accepted (``tools=False`` refuses it, as a model
without tool calling does). With ``logprobs`` (``{option: log-probability}``, or a function of the last
message's text and the options returning one score per option) it also scores options for option
ranking (:func:`kg_agents.llm.ranking.rank_options`), as a logprob-capable engine does; without it,
ranking falls back to structured output / generate-and-match on its replies. Every call is recorded
(``prompts``, ``messages``, ``calls`` per rule key or ``"replies"``/``"default"``/``"logprobs"``) and
carries ``usage_metadata`` (words in and out); each call's options (``max_tokens``, ``temperature``, ...) are
recorded in ``options``.

Example:
    >>> llm = FakeChat(rules=[("Question", "Answer: Ron Howard")])
    >>> llm.invoke("Question: who directed Splash?").content
    'Answer: Ron Howard'
    >>> llm.calls["Question"]
    1
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, PrivateAttr

__all__ = ["FakeChat", "FakeHops"]

Reply = str | AIMessage | BaseException | Callable[[str], Any]
_NONE = object()


class FakeChat(BaseChatModel):
    """Scripted chat model: ``rules`` by key, then ``replies`` in turn, then ``default`` (see the module)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    rules: Sequence[tuple[str, Any]] | Mapping[str, Any] = ()
    replies: Sequence[Any] = ()
    cycle: bool = True
    default: Any = _NONE
    tools: bool = True
    logprobs: Mapping[str, float] | Callable[[str, list[str]], list[float]] | None = None
    _calls: Counter[str] = PrivateAttr(default_factory=Counter)
    _prompts: list[str] = PrivateAttr(default_factory=list)
    _messages: list[list[BaseMessage]] = PrivateAttr(default_factory=list)
    _options: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _i: int = PrivateAttr(default=0)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "fake-chat"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> FakeChat:
        if not self.tools:
            raise NotImplementedError("this fake model has no tool calling (tools=False)")
        return self

    def score_options(self, messages: Sequence[BaseMessage], options: Sequence[str]) -> list[float]:
        """Scripted option log-probabilities (unknown options score -100); declines without ``logprobs``."""
        if self.logprobs is None:
            raise NotImplementedError("no scripted log-probabilities")
        text = str(messages[-1].content) if messages else ""
        with self._lock:
            self._calls["logprobs"] += 1
            self._prompts.append(text)
            self._messages.append(list(messages))
            self._options.append({})
        if callable(self.logprobs):
            return [float(x) for x in self.logprobs(text, list(options))]
        return [float(self.logprobs.get(o, -100.0)) for o in options]

    def _pick(self, text: str) -> tuple[str, Any]:
        items = self.rules.items() if isinstance(self.rules, Mapping) else self.rules
        for key, reply in items:
            if key in text:
                return key, reply
        if self.replies:
            with self._lock:
                i = self._i
                self._i += 1
            n = len(self.replies)
            return "replies", self.replies[i % n if self.cycle else min(i, n - 1)]
        if self.default is not _NONE:
            return "default", self.default
        raise AssertionError(f"FakeChat has no reply for prompt: {text[-300:]!r}")

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        text = str(messages[-1].content) if messages else ""
        key, reply = self._pick(text)
        with self._lock:
            self._calls[key] += 1
            self._prompts.append(text)
            self._messages.append(list(messages))
            self._options.append(dict(kwargs))
        if callable(reply) and not isinstance(reply, BaseException):
            reply = reply(text)
        if isinstance(reply, BaseException):
            raise reply
        msg = reply if isinstance(reply, AIMessage) else AIMessage(content=str(reply))
        n_in, n_out = len(text.split()), len(str(msg.content).split())
        usage = {"input_tokens": n_in, "output_tokens": n_out, "total_tokens": n_in + n_out}
        msg = msg.model_copy(update={"usage_metadata": usage})
        return ChatResult(generations=[ChatGeneration(message=msg)])

    @property
    def calls(self) -> Counter[str]:
        """Calls per rule key (``"replies"`` and ``"default"`` for the others)."""
        return self._calls

    @property
    def prompts(self) -> list[str]:
        """The last message's text of every call, in order."""
        return self._prompts

    @property
    def messages(self) -> list[list[BaseMessage]]:
        """The messages of every call, in order."""
        return self._messages

    @property
    def options(self) -> list[dict[str, Any]]:
        """The call options of every call, in order, as ``prompts`` (empty for scored options)."""
        return self._options


class FakeHops:
    """A scripted hop classifier (``predict(questions, entities)``): every question has ``h`` hops; the
    questions it saw are kept in ``seen``."""

    def __init__(self, h: int) -> None:
        self.h = h
        self.seen: list[tuple[str, list[str]]] = []

    def predict(self, questions: Sequence[str], entities: Sequence[list[str]]) -> list[int]:
        self.seen += list(zip(questions, entities, strict=True))
        return [self.h] * len(questions)
