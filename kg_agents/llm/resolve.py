"""``resolve_chat_model``: one place that turns a model spec into a LangChain chat model.

Valid specs:

- ``"local"`` (default, also ``None``): the bundled SmolLM2-135M-Instruct as a :class:`LocalChatModel`;
  the instance is cached per process (per set of keyword options).
- ``"local:/path/to/hf_dir"``: any local Hugging Face causal-LM checkpoint directory.
- ``"local:/path/to/adapter_dir"``: the embedded model with a LoRA adapter you trained (``kg-agents train
  specialist``); the adapter is merged once into a cached checkpoint (:mod:`kg_agents.llm.adapters`).
- ``"openai:<model>"``: an OpenAI-compatible server (vLLM, llama.cpp, OpenAI) through
  ``langchain_openai.ChatOpenAI``; ``base_url=`` or ``$OPENAI_BASE_URL``, ``api_key=`` or
  ``$OPENAI_API_KEY`` (default ``"EMPTY"``, what local servers expect).
- a ``BaseChatModel`` instance: returned unchanged.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

from langchain_core.language_models import BaseChatModel

from kg_agents.errors import ConfigError, ModelError
from kg_agents.llm.chat import LocalChatModel

__all__ = ["VALID_FORMS", "check_server", "resolve_chat_model"]

VALID_FORMS = (
    "'local' (bundled SmolLM2-135M-Instruct), "
    "'local:/path/to/hf_dir' (a checkpoint or a LoRA adapter folder), "
    "'openai:<model>' (with base_url= or $OPENAI_BASE_URL for vLLM and other servers), "
    "or a langchain BaseChatModel instance"
)

_CACHE: dict[tuple[Any, ...], BaseChatModel] = {}
_CACHE_LOCK = threading.Lock()


def _server_errors() -> tuple[type[BaseException], ...]:
    import openai

    return (openai.APIConnectionError, openai.APIStatusError)


@functools.cache
def _server_model_class() -> type[Any]:
    from langchain_openai import ChatOpenAI

    class ServerChatModel(ChatOpenAI):  # type: ignore[misc,valid-type]
        """``ChatOpenAI`` whose connection and HTTP errors become :class:`ModelError` naming the URL."""

        def _fail(self, exc: BaseException) -> ModelError:
            return ModelError(f"the model server at {self.openai_api_base} failed ({self.model_name}): {exc}")

        def _generate(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return super()._generate(*args, **kwargs)
            except _server_errors() as exc:
                raise self._fail(exc) from exc

        async def _agenerate(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super()._agenerate(*args, **kwargs)
            except _server_errors() as exc:
                raise self._fail(exc) from exc

        def _stream(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
            try:
                yield from super()._stream(*args, **kwargs)
            except _server_errors() as exc:
                raise self._fail(exc) from exc

        async def _astream(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
            try:
                async for chunk in super()._astream(*args, **kwargs):
                    yield chunk
            except _server_errors() as exc:
                raise self._fail(exc) from exc

    return ServerChatModel


def check_server(
    base_url: str, model: str | None = None, api_key: str = "EMPTY", timeout: float = 5.0
) -> list[str]:
    """GET ``<base_url>/models`` and return the served model names.

    Args:
        base_url: the OpenAI-compatible base URL, e.g. ``http://127.0.0.1:8000/v1``.
        model: when given, it must be among the served models.
        api_key: bearer token (local servers accept anything).
        timeout: seconds.

    Raises:
        ModelError: the server is unreachable, answers an HTTP error, or does not serve ``model``.

    Examples:
        >>> check_server("http://127.0.0.1:8000/v1", "smollm2")  # doctest: +SKIP
        ['smollm2']
    """
    import httpx

    url = base_url.rstrip("/") + "/models"
    try:
        resp = httpx.get(url, headers={"Authorization": f"Bearer {api_key}"}, timeout=timeout)
        resp.raise_for_status()
        names = [m["id"] for m in resp.json().get("data", [])]
    except (httpx.HTTPError, ValueError, KeyError, TypeError) as exc:
        raise ModelError(
            f"the model server at {base_url} is not reachable or not OpenAI-compatible: {exc}"
        ) from exc
    if model is not None and model not in names:
        raise ModelError(f"the model server at {base_url} does not serve {model!r}; it serves {names}")
    return names


def resolve_chat_model(
    spec: str | BaseChatModel | None = "local", *, check: bool = False, **kwargs: Any
) -> BaseChatModel:
    """Turn a model spec into a LangChain chat model.

    Args:
        spec: ``"local"`` / None, ``"local:/path/to/hf_dir"``, ``"openai:<model>"``, or a chat model instance.
        check: for ``openai:`` specs, GET ``/models`` now and fail early if the server is down or does
            not serve the model (otherwise an unreachable server fails on the first call, also as ModelError).
        **kwargs: options of the model class: :class:`LocalChatModel` fields (``max_tokens``,
            ``temperature``, ``stop``...) or ``ChatOpenAI`` ones (``base_url``, ``api_key``, ``max_tokens``,
            ``extra_body``...).

    Returns:
        A ``BaseChatModel``. Local models are cached per process per (path, options).

    Raises:
        ConfigError: an unknown spec form (the message lists the valid ones) or options for an instance.
        ModelError: ``check=True`` and the server is unreachable; langchain-openai missing.

    Examples:
        >>> llm = resolve_chat_model("local", max_tokens=32)  # doctest: +SKIP
        >>> llm = resolve_chat_model("openai:smollm2", base_url="http://127.0.0.1:8000/v1")  # doctest: +SKIP
    """
    if isinstance(spec, BaseChatModel):
        if kwargs or check:
            raise ConfigError("options cannot be applied to a chat model instance; configure it yourself")
        return spec
    if spec is None:
        spec = "local"
    if not isinstance(spec, str):
        raise ConfigError(
            f"model spec must be a string or a BaseChatModel, got {type(spec).__name__}; "
            f"valid forms: {VALID_FORMS}"
        )
    kind, sep, rest = spec.partition(":")
    if kind == "local":
        path = rest if sep else None
        if sep and not rest:
            raise ConfigError(f"'local:' needs a checkpoint directory; valid forms: {VALID_FORMS}")
        if path is not None and not os.path.isdir(path):
            raise ConfigError(f"no model directory at {path!r} (spec {spec!r})")
        named = None
        if path is not None:
            from kg_agents.llm.adapters import ADAPTED_PREFIX, is_adapter_dir, merged_model_dir

            if is_adapter_dir(path):
                named = ADAPTED_PREFIX + os.path.basename(os.path.normpath(path))
                path = str(merged_model_dir(path))
        key = ("local", path, tuple(sorted((k, repr(v)) for k, v in kwargs.items())))
        with _CACHE_LOCK:
            if key not in _CACHE:
                params: dict[str, Any] = dict(kwargs)
                if path is not None:
                    params.setdefault("model_path", path)
                    params.setdefault("model", named or os.path.basename(os.path.normpath(path)))
                try:
                    _CACHE[key] = LocalChatModel(**params)
                except ValueError as exc:
                    raise ConfigError(f"bad option for the local model: {exc}") from exc
            return _CACHE[key]
    if kind == "openai" and rest:
        try:
            cls = _server_model_class()
        except ImportError as exc:
            raise ModelError(
                "'openai:' models need langchain-openai: pip install 'kg-agents[openai]'"
            ) from exc
        base_url = kwargs.pop("base_url", None) or os.environ.get("OPENAI_BASE_URL")
        api_key = kwargs.pop("api_key", None) or os.environ.get("OPENAI_API_KEY") or "EMPTY"
        kwargs.setdefault("max_retries", 1)
        kwargs.setdefault("stream_usage", True)
        if check:
            check_server(base_url or "https://api.openai.com/v1", rest, api_key)
        try:
            return cls(model=rest, base_url=base_url, api_key=api_key, **kwargs)
        except ValueError as exc:
            raise ConfigError(f"bad option for {spec!r}: {exc}") from exc
    raise ConfigError(f"unknown model spec {spec!r}; valid forms: {VALID_FORMS}")
