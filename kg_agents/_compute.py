"""One thread for the process's model computations.

PyTorch runs its CPU kernels on OpenMP, and every Python thread that starts a parallel kernel gets an
OpenMP team of its own. Questions answered concurrently (``kg-agents eval --concurrency``, ``abatch``,
a LangGraph app serving several users) each run models in their own thread, so a process held one team
per thread on the same cores, and they slowed one another: on a 2-core CPU a greedy token of the
embedded model took 49-52 ms in a fresh process and 76-82 ms once the main thread had run one parallel
kernel (a matrix product, a GELU, a sentence encoding); the same kernel run in a thread that then ended
left no such cost.

:func:`run_compute` therefore runs a model call on one long-lived worker thread and waits for it: the
generation batcher's ``generate`` and unbatched generation, option scoring, the sentence encoder, the
entity index's FAISS searches, gcr's constrained decoder and dualr's exploration go through it, so the
process keeps one team for its models. (dualr's exploration reads the KG between its tensor steps, so
its reads run there too: on a remote store other questions' model calls wait for them.) Calls are run
one at a time in the order they come; a call made on the worker itself runs at once. The caller's
autograd mode (``no_grad``, ``inference_mode``) goes with the call, as those are per thread in PyTorch.

``KG_AGENTS_COMPUTE_THREAD=0`` runs every call in its caller's thread, as before (read at each call).

Example:
    >>> run_compute(sum, [1, 2, 3])
    6
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["compute_thread_enabled", "run_compute"]

T = TypeVar("T")

_ENV = "KG_AGENTS_COMPUTE_THREAD"
_queue: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
_worker: threading.Thread | None = None
_start_lock = threading.Lock()


def compute_thread_enabled() -> bool:
    """Whether model calls run on the one compute thread (``KG_AGENTS_COMPUTE_THREAD``, default on)."""
    return os.environ.get(_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def _loop() -> None:
    while True:
        call, fut = _queue.get()
        if not fut.set_running_or_notify_cancel():
            continue
        try:
            result = call()
        except BaseException as exc:  # the caller gets it, whatever it is
            fut.set_exception(exc)
        else:
            fut.set_result(result)


def _ensure_worker() -> None:
    global _worker
    with _start_lock:
        if _worker is None or not _worker.is_alive():
            _worker = threading.Thread(target=_loop, name="kg-agents-compute", daemon=True)
            _worker.start()


def _reset_in_child() -> None:
    """A forked child has no worker, and the parent's pending calls are not its own."""
    global _queue, _worker, _start_lock
    _queue = queue.SimpleQueue()
    _worker = None
    _start_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_in_child)


def _with_caller_modes(
    fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Callable[[], T]:
    """``fn(*args, **kwargs)`` under the calling thread's autograd mode (when torch is loaded)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return lambda: fn(*args, **kwargs)
    grad = torch.is_grad_enabled()
    inference = torch.is_inference_mode_enabled()

    def call() -> T:
        with torch.inference_mode(inference), torch.set_grad_enabled(grad):
            return fn(*args, **kwargs)

    return call


def run_compute(fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)`` on the process's compute thread and return its result (or raise
    its exception). On the compute thread itself, or with ``KG_AGENTS_COMPUTE_THREAD=0``, it is a plain
    call.

    Do not hold a lock the computation itself takes: the call waits for the worker, and the worker for
    the lock.
    """
    if not compute_thread_enabled() or threading.current_thread() is _worker:
        return fn(*args, **kwargs)
    fut: Future[T] = Future()
    call = _with_caller_modes(fn, args, kwargs)
    _ensure_worker()
    _queue.put((call, fut))
    return fut.result()
