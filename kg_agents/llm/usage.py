"""``UsageCallback``: count LLM calls and tokens of any LangChain chat model, per run.

Pass one per question through ``config={"callbacks": [cb]}``; it reads ``usage_metadata`` of each
generated message (or, failing that, ``llm_output["token_usage"]`` as OpenAI-style models report it).
Thread-safe: ``batch``/``abatch`` and parallel graph branches may report into the same callback.
"""

from __future__ import annotations

import threading
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.outputs import LLMResult

__all__ = ["UsageCallback"]


class UsageCallback(BaseCallbackHandler):
    """Counts LLM calls and input/output tokens reported by chat models.

    Attributes:
        llm_calls: chat-model/LLM calls started.
        input_tokens: prompt tokens over all finished calls.
        output_tokens: generated tokens over all finished calls.
        errors: calls that ended in an error.
        per_model: ``{model_name: {"llm_calls", "input_tokens", "output_tokens"}}``.

    Examples:
        >>> from kg_agents.llm import UsageCallback, resolve_chat_model
        >>> cb = UsageCallback()
        >>> resolve_chat_model("local").invoke("Hi", config={"callbacks": [cb]})  # doctest: +SKIP
        >>> cb.as_dict()  # doctest: +SKIP
        {'llm_calls': 1, 'input_tokens': 31, 'output_tokens': 9, 'total_tokens': 40, 'errors': 0}
    """

    raise_error = False

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self.llm_calls = 0
        self.input_tokens = 0
        self.output_tokens = 0
        self.errors = 0
        self.per_model: dict[str, dict[str, int]] = {}
        self._run_model: dict[UUID, str] = {}

    @property
    def total_tokens(self) -> int:
        """``input_tokens + output_tokens``."""
        return self.input_tokens + self.output_tokens

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain dict (``llm_calls``, ``input_tokens``, ``output_tokens``, ...)."""
        with self._lock:
            return {
                "llm_calls": self.llm_calls,
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "total_tokens": self.input_tokens + self.output_tokens,
                "errors": self.errors,
            }

    def reset(self) -> None:
        """Zero every counter."""
        with self._lock:
            self.llm_calls = self.input_tokens = self.output_tokens = self.errors = 0
            self.per_model.clear()
            self._run_model.clear()

    def _model_of(self, serialized: dict[str, Any] | None, kwargs: dict[str, Any]) -> str:
        meta = kwargs.get("metadata") or {}
        name = meta.get("ls_model_name")
        if not name and serialized:
            name = (serialized.get("kwargs") or {}).get("model_name") or serialized.get("name")
        return str(name or "unknown")

    def _start(self, run_id: UUID, model: str) -> None:
        with self._lock:
            self.llm_calls += 1
            self._run_model[run_id] = model
            self.per_model.setdefault(model, {"llm_calls": 0, "input_tokens": 0, "output_tokens": 0})
            self.per_model[model]["llm_calls"] += 1

    def on_chat_model_start(
        self, serialized: dict[str, Any], messages: list[list[Any]], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Count a chat-model call."""
        self._start(run_id, self._model_of(serialized, kwargs))

    def on_llm_start(
        self, serialized: dict[str, Any], prompts: list[str], *, run_id: UUID, **kwargs: Any
    ) -> None:
        """Count a (completion) LLM call."""
        self._start(run_id, self._model_of(serialized, kwargs))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """Add the tokens the finished call reports."""
        n_in = n_out = 0
        found = False
        for gens in response.generations:
            for gen in gens:
                usage = getattr(getattr(gen, "message", None), "usage_metadata", None)
                if usage:
                    found = True
                    n_in += int(usage.get("input_tokens", 0) or 0)
                    n_out += int(usage.get("output_tokens", 0) or 0)
        if not found and response.llm_output:
            tu = response.llm_output.get("token_usage") or response.llm_output.get("usage") or {}
            n_in = int(tu.get("prompt_tokens", tu.get("input_tokens", 0)) or 0)
            n_out = int(tu.get("completion_tokens", tu.get("output_tokens", 0)) or 0)
        with self._lock:
            self.input_tokens += n_in
            self.output_tokens += n_out
            model = self._run_model.pop(run_id, "unknown")
            stats = self.per_model.setdefault(model, {"llm_calls": 0, "input_tokens": 0, "output_tokens": 0})
            stats["input_tokens"] += n_in
            stats["output_tokens"] += n_out

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Count a failed call."""
        with self._lock:
            self.errors += 1
            self._run_model.pop(run_id, None)
