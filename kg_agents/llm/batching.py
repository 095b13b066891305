"""Dynamic batching of concurrent greedy generations on one local checkpoint.

Questions evaluated concurrently (``abatch``, ``kg-agents eval --concurrency C``) each call the local model
one prompt at a time. Run one after another, a 135M model on a CPU spends most of each decoding step on
fixed per-step overhead, so a batch of 8 prompts decodes several times faster than 8 single calls.
:class:`GenerationBatcher` collects the requests that arrive within ``window`` seconds of each other (up
to ``max_batch``; each arrival keeps the batch open ``window`` seconds more, at most ``max_wait`` seconds
from the first), left-pads them into one ``generate`` call and hands each caller its own result, with
its own stop strings, token limit and usage. A lone request waits at most ``window`` seconds extra. The
``generate`` call runs on the process's compute thread (:mod:`kg_agents._compute`).

Greedy requests and unseeded sampling requests are batched (a seeded sample must stay reproducible per call,
so it is generated alone); requests with different sampling settings go to separate generate calls. The worker
holds the checkpoint's :func:`~kg_agents.llm.chat.generation_lock` while it generates, so constrained
decoders that use the same weights never run at the same time.

Example:
    >>> batcher = GenerationBatcher(model, tokenizer, lock, max_batch=8)       # doctest: +SKIP
    >>> fut = batcher.submit(BatchRequest([1, 2, 3], max_new_tokens=16, stops=["\\n"]))   # doctest: +SKIP
    >>> fut.result().token_ids                                                   # doctest: +SKIP
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from kg_agents._compute import run_compute
from kg_agents.errors import ModelError

__all__ = ["BatchRequest", "BatchResult", "GenerationBatcher"]


@dataclass
class BatchRequest:
    """One generation: prompt token ids, token limit, stop strings and sampling settings (0: greedy)."""

    prompt_ids: list[int]
    max_new_tokens: int
    stops: list[str] = field(default_factory=list)
    max_time: float | None = None
    temperature: float = 0.0
    top_p: float = 1.0


@dataclass
class BatchResult:
    """The generated token ids (up to and including EOS) and whether a stop string ended them."""

    token_ids: list[int]
    stopped: bool
    batch_size: int


def _stop_index(text: str, stops: Sequence[str]) -> int:
    hits = [i for i in (text.find(s) for s in stops if s) if i >= 0]
    return min(hits) if hits else -1


class _RowCriteria:
    """Per-row stopping: each row's own token limit and stop strings (a StoppingCriteria callable)."""

    def __init__(self, tokenizer: Any, prompt_len: int, requests: Sequence[BatchRequest]) -> None:
        self.tokenizer = tokenizer
        self.prompt_len = prompt_len
        self.requests = requests
        self.ended_at: list[int | None] = [None] * len(requests)  # generated length when a row ended
        self.by_stop = [False] * len(requests)
        self.windows = [max((len(s) for s in r.stops), default=0) + 8 for r in requests]

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        import torch

        n = int(input_ids.shape[1]) - self.prompt_len
        done = []
        for i, req in enumerate(self.requests):
            if self.ended_at[i] is not None:
                done.append(True)
                continue
            hit = n >= req.max_new_tokens
            if not hit and req.stops and n > 0:
                tail = input_ids[i, max(self.prompt_len, input_ids.shape[1] - self.windows[i]) :]
                if _stop_index(self.tokenizer.decode(tail, skip_special_tokens=True), req.stops) >= 0:
                    hit = True
                    self.by_stop[i] = True
            if hit:
                self.ended_at[i] = n
            done.append(hit)
        return torch.tensor(done, dtype=torch.bool, device=input_ids.device)


class GenerationBatcher:
    """Coalesce concurrent greedy generation requests on one model into padded batches.

    Args:
        model: a Hugging Face causal LM.
        tokenizer: its tokenizer (``pad_token_id`` or ``eos_token_id`` is used for padding).
        lock: held while generating (the checkpoint's generation lock).
        max_batch: most requests per ``generate`` call.
        window: seconds to wait for another request after each one arrives.
        max_wait: seconds a batch stays open at most after its first request (at least ``window``).
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        lock: Any,
        *,
        max_batch: int = 8,
        window: float = 0.01,
        max_wait: float = 0.25,
    ) -> None:
        if max_batch < 1:
            raise ValueError(f"max_batch must be >= 1, got {max_batch}")
        self.model = model
        self.tokenizer = tokenizer
        self.lock = lock
        self.max_batch = int(max_batch)
        self.window = float(window)
        self.max_wait = max(float(max_wait), self.window)
        self.batches = 0  # generate calls made (for benchmarks and tests)
        self.requests = 0
        self._queue: queue.Queue[tuple[BatchRequest, Future[BatchResult]]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()

    def submit(self, request: BatchRequest) -> Future[BatchResult]:
        """Queue ``request``; the future resolves to its :class:`BatchResult` or raises ModelError."""
        if not request.prompt_ids:
            raise ModelError("cannot generate from an empty prompt")
        fut: Future[BatchResult] = Future()
        self._ensure_worker()
        self._queue.put((request, fut))
        return fut

    def _ensure_worker(self) -> None:
        with self._start_lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="kg-agents-batcher", daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        while True:
            batch = [self._queue.get()]
            now = time.monotonic()
            cap = now + self.max_wait
            while len(batch) < self.max_batch:
                # wait while calls keep coming: each arrival gives the next one ``window`` more seconds
                left = min(now + self.window, cap) - time.monotonic()
                try:
                    batch.append(self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait())
                except queue.Empty:
                    break
                now = time.monotonic()
            live = [(r, f) for r, f in batch if f.set_running_or_notify_cancel()]
            if not live:
                continue
            # requests with different time limits or sampling settings go in separate generate calls
            groups: dict[tuple[Any, ...], list[tuple[BatchRequest, Future[BatchResult]]]] = {}
            for r, f in live:
                groups.setdefault((r.max_time, r.temperature, r.top_p), []).append((r, f))
            for group in groups.values():
                try:
                    results = self._run([r for r, _ in group])
                except BaseException as exc:  # every caller of the batch gets the failure
                    err = (
                        exc
                        if isinstance(exc, ModelError)
                        else ModelError(f"batched generation failed: {exc}")
                    )
                    for _, f in group:
                        f.set_exception(err)
                    continue
                for (_, f), res in zip(group, results, strict=True):
                    f.set_result(res)

    def _run(self, requests: list[BatchRequest]) -> list[BatchResult]:
        import torch
        from transformers import GenerationConfig, StoppingCriteriaList

        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        width = max(len(r.prompt_ids) for r in requests)
        ids = torch.full((len(requests), width), pad, dtype=torch.long)
        mask = torch.zeros((len(requests), width), dtype=torch.long)
        for i, r in enumerate(requests):  # left padding: every prompt ends at the same column
            ids[i, width - len(r.prompt_ids) :] = torch.tensor(r.prompt_ids, dtype=torch.long)
            mask[i, width - len(r.prompt_ids) :] = 1
        criteria = _RowCriteria(tok, width, requests)
        cfg = GenerationConfig(
            max_new_tokens=max(r.max_new_tokens for r in requests),
            do_sample=requests[0].temperature > 0,
            temperature=requests[0].temperature if requests[0].temperature > 0 else None,
            top_p=requests[0].top_p if requests[0].temperature > 0 else None,
            top_k=None,
            max_time=requests[0].max_time,
            eos_token_id=tok.eos_token_id,
            pad_token_id=pad,
        )
        with self.lock, torch.inference_mode():
            seq = run_compute(
                self.model.generate,
                input_ids=ids,
                attention_mask=mask,
                generation_config=cfg,
                stopping_criteria=StoppingCriteriaList([criteria]),
            )
        self.batches += 1
        self.requests += len(requests)
        out = []
        for i, r in enumerate(requests):
            gen = seq[i, width:].tolist()
            end = criteria.ended_at[i]
            if tok.eos_token_id in gen and (end is None or gen.index(tok.eos_token_id) < end):
                gen = gen[: gen.index(tok.eos_token_id) + 1]
            elif end is not None:
                gen = gen[:end]
            gen = gen[: r.max_new_tokens]
            out.append(BatchResult(token_ids=gen, stopped=criteria.by_stop[i], batch_size=len(requests)))
        return out
