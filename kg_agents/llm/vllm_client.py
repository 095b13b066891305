"""``VLLMClient``: the raw completions API of a vLLM server, for token-level work (constrained decoding).

A chat model (``resolve_chat_model("openai:...")``) covers chat; this client exposes what a constrained
decoder needs and ``ChatOpenAI`` does not: token ids in and out, prompt log-probabilities, ``echo`` and
``allowed_token_ids``. What vLLM 0.32 (CPU) accepts, checked against the running server by
``tests/test_llm_vllm.py``:

- ``POST /tokenize`` ``{"model", "prompt", "add_special_tokens"}`` -> ``{"tokens": [...]}`` and
  ``POST /detokenize`` ``{"model", "tokens"}`` -> ``{"prompt": str}`` (the same tokenizer as the local model).
- ``POST /v1/completions`` with ``prompt`` as a string, a list of token ids, or a list of either (a batch);
  ``logprobs: k`` (top-k per generated token), ``echo: true`` (prompt returned in the text),
  ``prompt_logprobs: k`` (vLLM extension: per-prompt-token log-probabilities; the first is ``null``),
  ``allowed_token_ids: [...]`` (vLLM extension: sampling restricted to these ids at every step),
  ``structured_outputs: {"choice": [...]}`` (also ``regex``, ``json``, ``grammar``); ``usage`` in every
  answer.
- Not usable: ``guided_choice`` (HTTP 200 but ignored), ``n > 1`` with greedy decoding (HTTP 400), beam
  search together with ``structured_outputs`` (the constraint is silently ignored).

For K constrained paths a decoder can therefore (a) score every candidate path of the trie exactly in one
batched request with :meth:`VLLMClient.score_continuations` (prompt log-probabilities), or (b) run a step-wise
beam loop calling :meth:`VLLMClient.completions` with ``max_tokens=1, logprobs=k,
allowed_token_ids=<trie children>``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kg_agents.errors import ModelError

__all__ = ["Prompt", "VLLMClient"]

Prompt = str | Sequence[int]


class VLLMClient:
    """Thin synchronous client of a vLLM server's completion and tokenizer endpoints.

    Args:
        base_url: the OpenAI-compatible base URL, ``http://HOST:PORT/v1``.
        model: the served model name (``--served-model-name``).
        api_key: bearer token; local servers accept anything.
        timeout: seconds per request.

    Raises:
        ModelError: on every connection error or HTTP error, naming the URL and the server's message.

    Examples:
        >>> client = VLLMClient("http://127.0.0.1:8000/v1", "smollm2")  # doctest: +SKIP
        >>> client.complete_text("The capital of France is", max_tokens=3)  # doctest: +SKIP
        ' Paris.'
        >>> prefix = client.tokenize("Splash -> directed_by ->")  # doctest: +SKIP
        >>> client.score_continuations(prefix, [client.tokenize(" Ron Howard")])  # doctest: +SKIP
        [-3.21]
    """

    def __init__(
        self, base_url: str, model: str = "smollm2", api_key: str = "EMPTY", timeout: float = 120.0
    ) -> None:
        import httpx

        self.base_url = base_url.rstrip("/")
        self.root_url = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        self.model = model
        self._http = httpx.Client(headers={"Authorization": f"Bearer {api_key}"}, timeout=timeout)

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._http.close()

    def __enter__(self) -> VLLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _post(self, url: str, payload: dict[str, Any]) -> dict[str, Any]:
        import httpx

        try:
            resp = self._http.post(url, json=payload)
        except httpx.HTTPError as exc:
            raise ModelError(f"the vLLM server at {url} is unreachable: {exc}") from exc
        if resp.status_code != 200:
            raise ModelError(f"the vLLM server at {url} answered HTTP {resp.status_code}: {resp.text[:500]}")
        try:
            data: dict[str, Any] = resp.json()
        except ValueError as exc:
            raise ModelError(f"the vLLM server at {url} answered non-JSON: {resp.text[:200]!r}") from exc
        return data

    # ------------------------------------------------------------------ tokenizer
    def tokenize(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """Token ids of ``text`` with the served model's tokenizer."""
        data = self._post(
            f"{self.root_url}/tokenize",
            {"model": self.model, "prompt": text, "add_special_tokens": add_special_tokens},
        )
        return [int(t) for t in data["tokens"]]

    def tokenize_chat(
        self, messages: Sequence[dict[str, str]], *, add_generation_prompt: bool = True
    ) -> list[int]:
        """Token ids of a conversation under the served chat template (``/tokenize`` with messages)."""
        data = self._post(
            f"{self.root_url}/tokenize",
            {
                "model": self.model,
                "messages": [dict(m) for m in messages],
                "add_generation_prompt": add_generation_prompt,
                "add_special_tokens": False,
            },
        )
        return [int(t) for t in data["tokens"]]

    def detokenize(self, tokens: Sequence[int]) -> str:
        """Text of token ids."""
        data = self._post(f"{self.root_url}/detokenize", {"model": self.model, "tokens": list(tokens)})
        return str(data["prompt"])

    # ------------------------------------------------------------------ completions
    def completions(
        self,
        prompt: Prompt | Sequence[Prompt],
        *,
        max_tokens: int = 16,
        temperature: float = 0.0,
        n: int = 1,
        logprobs: int | None = None,
        echo: bool = False,
        prompt_logprobs: int | None = None,
        allowed_token_ids: Sequence[int] | None = None,
        structured_outputs: dict[str, Any] | None = None,
        stop: Sequence[str] | None = None,
        seed: int | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        """``POST /v1/completions``; returns the server's JSON (``choices``, ``usage``).

        Args:
            prompt: text, token ids, or a list of those (one choice per prompt, ``choices[i].index``).
            max_tokens: new tokens per prompt (0 is rejected by vLLM; use 1 and ignore it to score a prompt).
            temperature: 0 is greedy.
            n: samples per prompt (needs ``temperature > 0`` when > 1).
            logprobs: top-k log-probabilities of each generated token.
            echo: include the prompt in the returned text (and its logprobs when ``logprobs`` is set).
            prompt_logprobs: top-k log-probabilities of each prompt token (``choices[i].prompt_logprobs``).
            allowed_token_ids: restrict every generated token to these ids.
            structured_outputs: e.g. ``{"choice": ["yes", "no"]}`` or ``{"regex": "..."}``.
            stop: stop strings.
            seed: sampling seed.
            **extra: any other field vLLM accepts, passed as is.
        """
        payload: dict[str, Any] = {
            "model": self.model,
            "prompt": _jsonable_prompt(prompt),
            "max_tokens": max_tokens,
            "temperature": temperature,
            "n": n,
            "echo": echo,
        }
        optional = {
            "logprobs": logprobs,
            "prompt_logprobs": prompt_logprobs,
            "allowed_token_ids": list(allowed_token_ids) if allowed_token_ids is not None else None,
            "structured_outputs": structured_outputs,
            "stop": list(stop) if stop is not None else None,
            "seed": seed,
        }
        payload.update({k: v for k, v in optional.items() if v is not None})
        payload.update(extra)
        return self._post(f"{self.base_url}/completions", payload)

    def complete_text(self, prompt: Prompt, **kwargs: Any) -> str:
        """The text of the first choice of :meth:`completions`."""
        return str(self.completions(prompt, **kwargs)["choices"][0]["text"])

    def prompt_logprobs(self, prompts: Sequence[Sequence[int]]) -> list[list[float | None]]:
        """Log-probability of every token of each prompt given the tokens before it (first is None).

        One batched request; the token generated after each prompt is discarded.
        """
        if not prompts:
            return []
        data = self.completions([list(p) for p in prompts], max_tokens=1, prompt_logprobs=0)
        by_index = sorted(data["choices"], key=lambda c: c["index"])
        out: list[list[float | None]] = []
        for prompt, choice in zip(prompts, by_index, strict=True):
            row: list[float | None] = []
            for tok, entry in zip(prompt, choice["prompt_logprobs"], strict=True):
                row.append(None if entry is None else float(entry[str(tok)]["logprob"]))
            out.append(row)
        return out

    def score_continuations(
        self, prefix: Sequence[int], continuations: Sequence[Sequence[int]]
    ) -> list[float]:
        """Sum of log-probabilities of each continuation's tokens after ``prefix`` (exact, one request).

        Args:
            prefix: token ids of the prompt (non-empty).
            continuations: token ids of each candidate (e.g. every path of a KG-Trie).

        Returns:
            One score per continuation, in order (higher is better).
        """
        if not prefix:
            raise ValueError("score_continuations needs a non-empty prefix")
        rows = self.prompt_logprobs([[*prefix, *c] for c in continuations])
        return [float(sum(x for x in row[len(prefix) :] if x is not None)) for row in rows]


def _jsonable_prompt(prompt: Prompt | Sequence[Prompt]) -> Any:
    if isinstance(prompt, str):
        return prompt
    items: list[Any] = list(prompt)
    if items and all(isinstance(t, int) for t in items):
        return [int(t) for t in items]
    return [p if isinstance(p, str) else [int(t) for t in p] for p in items]
