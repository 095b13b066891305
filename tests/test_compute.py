"""The process's compute thread: model calls from many threads run on one, with their caller's autograd
mode; the batcher, option scoring, the sentence encoder and gcr's decoder send their model calls there."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
import torch

from kg_agents._compute import compute_thread_enabled, run_compute
from kg_agents.llm.batching import BatchRequest, BatchResult, GenerationBatcher

WORKER = "kg-agents-compute"


def _thread_name(*_: Any, **__: Any) -> str:
    return threading.current_thread().name


def test_calls_from_many_threads_run_on_one_thread_in_turn() -> None:
    active = [0]
    most = [0]
    guard = threading.Lock()

    def work(i: int) -> tuple[int, str]:
        with guard:
            active[0] += 1
            most[0] = max(most[0], active[0])
        time.sleep(0.005)
        with guard:
            active[0] -= 1
        return i * i, threading.current_thread().name

    with ThreadPoolExecutor(8) as pool:
        out = list(pool.map(lambda i: run_compute(work, i), range(32)))
    assert [v for v, _ in out] == [i * i for i in range(32)]
    assert {name for _, name in out} == {WORKER}
    assert most[0] == 1  # one at a time


def test_errors_reach_the_caller_and_nested_calls_run_at_once() -> None:
    def fail() -> None:
        raise KeyError("missing")

    with pytest.raises(KeyError, match="missing"):
        run_compute(fail)
    # a call made on the worker runs there at once (waiting for itself would never end)
    assert run_compute(lambda: run_compute(_thread_name)) == WORKER
    assert run_compute(_thread_name) == WORKER  # the worker survived the error


def test_the_callers_autograd_mode_goes_with_the_call() -> None:
    def modes() -> tuple[bool, bool]:
        return torch.is_grad_enabled(), torch.is_inference_mode_enabled()

    assert run_compute(modes) == (True, False)
    with torch.no_grad():
        assert run_compute(modes) == (False, False)
    with torch.inference_mode():
        assert run_compute(modes) == (False, True)
    x = torch.ones(2, requires_grad=True)
    y = run_compute(lambda: (x * 3).sum())
    y.backward()
    assert x.grad is not None and x.grad.tolist() == [3.0, 3.0]


def test_it_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert compute_thread_enabled()
    monkeypatch.setenv("KG_AGENTS_COMPUTE_THREAD", "0")
    assert not compute_thread_enabled()
    assert run_compute(_thread_name) == threading.current_thread().name


class _Tokenizer:
    pad_token_id = 0
    eos_token_id = 2

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return ""


class _Model:
    """Generates EOS at once, and notes which thread ran each call."""

    def __init__(self) -> None:
        self.threads: list[str] = []

    def generate(self, input_ids: torch.Tensor, **_: Any) -> torch.Tensor:
        self.threads.append(threading.current_thread().name)
        return torch.cat([input_ids, torch.full((input_ids.size(0), 1), 2)], 1)


def test_the_batcher_generates_on_the_compute_thread() -> None:
    model = _Model()
    batcher = GenerationBatcher(model, _Tokenizer(), threading.RLock(), max_batch=4)
    out = batcher.submit(BatchRequest([5, 6, 7], max_new_tokens=4)).result(timeout=30)
    assert out.token_ids == [2]
    assert model.threads == [WORKER]


class _RecordingBatcher(GenerationBatcher):
    """A batcher whose generate call only records the batch it was given."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(None, None, threading.Lock(), max_batch=16, **kwargs)
        self.sizes: list[int] = []

    def _run(self, requests: list[BatchRequest]) -> list[BatchResult]:
        self.sizes.append(len(requests))
        return [BatchResult([2], False, len(requests)) for _ in requests]


def _submit_spread(batcher: GenerationBatcher, n: int, gap: float) -> None:
    futs = []
    for _ in range(n):
        futs.append(batcher.submit(BatchRequest([1], max_new_tokens=1)))
        time.sleep(gap)
    for f in futs:
        f.result(timeout=30)


def test_calls_arriving_one_after_another_meet_in_one_batch() -> None:
    """Each arrival keeps the batch open ``window`` seconds more: 6 calls 0.1 s apart (0.5 s from first to
    last) meet in one batch with a window of 0.4 s, where waiting 0.4 s from the first call would have
    cut them in two; ``max_wait`` bounds how long a batch stays open in all."""
    batcher = _RecordingBatcher(window=0.4, max_wait=5.0)
    _submit_spread(batcher, 6, 0.1)
    assert batcher.sizes == [6]
    capped = _RecordingBatcher(window=0.4, max_wait=0.25)
    _submit_spread(capped, 6, 0.1)
    assert len(capped.sizes) >= 2 and sum(capped.sizes) == 6


def test_option_scoring_and_sentence_encoding_run_on_the_compute_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import numpy as np

    from kg_agents.kg.encoder import SentenceEncoder
    from kg_agents.llm import LocalChatModel, local_model, ranking

    seen: list[str] = []

    def score(model: Any, tok: Any, chat: Any, replies: list[str], **_: Any) -> tuple[list[float], int]:
        seen.append(threading.current_thread().name)
        return [-float(i) for i in range(len(replies))], 7

    monkeypatch.setattr(local_model, "load_local_model", lambda *a, **k: (object(), object()))
    monkeypatch.setattr(ranking, "score_local", score)
    got = ranking.rank_options(LocalChatModel(max_tokens=4, prefix_cache=False), "which?", ["a", "b"])
    assert got.order()[0] == 0 and seen == [WORKER]

    class _ST:
        def encode(self, texts: list[str], **_: Any) -> np.ndarray:
            seen.append(threading.current_thread().name)
            return np.zeros((len(texts), 3), np.float32)

    enc = SentenceEncoder()
    enc._model = _ST()
    assert enc(["x", "y"]).shape == (2, 3)
    assert seen == [WORKER, WORKER]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() in a process with threads
def test_a_forked_child_gets_a_worker_of_its_own_and_none_of_the_parents_calls(tmp_path: Any) -> None:
    """A child forked while the parent's worker is busy and a call waits in its queue runs its own calls
    on a worker of its own, and never the parent's waiting call."""
    release = threading.Event()
    marks = tmp_path / "marks"

    def mark() -> None:
        with open(marks, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")

    with ThreadPoolExecutor(2) as pool:
        busy = pool.submit(run_compute, release.wait, 30)
        time.sleep(0.2)  # the worker is in release.wait
        waiting = pool.submit(run_compute, mark)
        time.sleep(0.2)  # mark is in the queue
        pid = os.fork()
        if pid == 0:
            ok = run_compute(_thread_name) == WORKER and run_compute(sum, [2, 3]) == 5
            time.sleep(0.3)  # time for a worker that took the parent's call to run it
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        release.set()
        busy.result(timeout=30)
        waiting.result(timeout=30)
    assert os.waitstatus_to_exitcode(status) == 0
    assert marks.read_text(encoding="utf-8").split() == [str(os.getpid())]
