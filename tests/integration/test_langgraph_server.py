"""Every registered method served by ``langgraph dev`` and called through ``langgraph_sdk``.

One ``langgraph dev`` (langgraph-cli with the in-memory runtime) is started for the module on a free
127.0.0.1 port from the repository's ``langgraph.json``, in a temporary directory (the in-memory runtime
keeps its files in ``.langgraph_api`` there), and stopped with its whole process group afterwards, also
when a test fails. Each graph runs for real on the bundled MetaQA KG with the embedded model, through
``runs.wait`` and ``runs.stream(stream_mode="updates")``; the run's ``context`` carries the factory
choices (``options``, ``max_tokens``, ``kg``) and the per-run options, with settings that keep model calls
short (``dualr`` answers with its GNN alone).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path as FsPath
from typing import Any

import pytest

from kg_agents import langgraph_entry
from kg_agents.kg import Hop, Path, open_kg, verify_path
from kg_agents.kg.servers import free_port

pytestmark = [pytest.mark.server, pytest.mark.integration]

ROOT = FsPath(__file__).resolve().parents[2]
QUESTION = "who directed [Splash]"
STARTUP_TIMEOUT = 180.0
RUN_TIMEOUT = 300.0

#: Each method's run context: factory choices that keep it fast, and (graph_agent) a per-run option.
CONTEXTS: dict[str, dict[str, Any]] = {
    "llm_only": {"max_tokens": 16},
    "graph_rag": {"max_tokens": 16},
    "text_rag": {"max_tokens": 16},
    "gcr": {"max_tokens": 32, "options": {"num_beams": 2, "max_hops": 1}},
    "dualr": {"options": {"answer_with": "gnn"}},
    "graph_agent": {"max_tokens": 48, "max_steps": 2},
    "graph_explore": {"max_tokens": 32, "max_steps": 1},
    "knowledge_navigator": {"max_tokens": 16},
}
#: Exception records (``errors[].type``) that would mean the run itself failed.
RUN_FAILURES = {"ModelError", "EndpointError", "KGError", "ConfigError"}


def _set_parent_death_signal() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: the kernel sends SIGTERM to the server if this test process dies outright."""
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the server's process group, SIGKILL it after 20 s; raises if anything of it survives."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)  # anything left in the group?
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)
    raise AssertionError(f"langgraph dev left processes in group {proc.pid}")


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``langgraph dev`` serving ``langgraph.json``; yields its URL, then stops it (and checks it did)."""
    exe = FsPath(sys.executable).parent / "langgraph"
    if not exe.exists():
        pytest.fail(f"{exe} not found: install the dev extras (pip install -e '.[dev]')", pytrace=False)
    workdir = tmp_path_factory.mktemp("langgraph-dev")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "HF_HUB_OFFLINE": "1",
        "LANGGRAPH_CLI_NO_ANALYTICS": "1",
        "LANGSMITH_TRACING": "false",
    }
    argv = [str(exe), "dev", "--config", str(ROOT / "langgraph.json"), "--host", "127.0.0.1"]
    argv += ["--port", str(port), "--no-browser", "--no-reload", "--server-log-level", "WARNING"]
    log_path = workdir / "server.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            argv,
            cwd=workdir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_set_parent_death_signal if sys.platform.startswith("linux") else None,
        )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while True:
            if proc.poll() is not None:
                pytest.fail(f"langgraph dev exited ({proc.returncode}):\n{log_path.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{url}/ok", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                pytest.fail(
                    f"langgraph dev not ready after {STARTUP_TIMEOUT:g}s:\n{log_path.read_text()[-3000:]}"
                )
            time.sleep(0.5)
        yield url
    finally:
        _stop_group(proc)


@pytest.fixture(scope="module")
def client(server_url: str) -> Any:
    from langgraph_sdk import get_sync_client

    return get_sync_client(url=server_url, timeout=RUN_TIMEOUT)


@pytest.fixture(scope="module")
def metaqa() -> Any:
    return open_kg("metaqa")


def _paths(out: dict[str, Any]) -> list[Path]:
    """The output's paths, rebuilt from the JSON the server sends (``{"hops": [{source, ...}]}``)."""
    return [Path.from_hops(Hop(**h) for h in p["hops"]) for p in out.get("paths") or []]


def _check_output(method: str, out: dict[str, Any], kg: Any, nodes: set[str]) -> None:
    failures = [e for e in out.get("errors") or [] if e.get("type") in RUN_FAILURES]
    assert not failures, failures
    assert out["question"] == QUESTION
    assert isinstance(out["answers"], list) and all(isinstance(a, str) and a for a in out["answers"])
    paths = _paths(out)
    for p in paths:  # every returned path is real and starts at the linked entity
        assert verify_path(kg, p) and p.hops[0].source == "Splash", p.to_text()
    usage = out["usage"]
    if method == "dualr":  # GNN alone: the right answer, its path, no model call
        assert out["answers"][:1] == ["Ron Howard"]
        assert "Splash -> directed_by -> Ron Howard" in [p.to_text() for p in paths]
        assert usage["llm_calls"] == 0
    else:  # ranked decisions read tokens and may write none
        assert usage["llm_calls"] >= 1 and usage["input_tokens"] >= 1
    if method == "llm_only":
        assert usage["kg_calls"] == 0 and not paths
    else:  # every answer is a KG node ending a returned path
        assert usage["kg_calls"] >= 1
        assert set(out["answers"]) <= {kg.label(p.end) for p in paths}, (out["answers"], paths)
    if "link_entities" in nodes:  # the graph links the bracketed entity first
        assert out["trace"][0] == {"node": "link_entities", "linked": ["Splash"]}


def test_server_serves_every_registered_method(client: Any) -> None:
    served = {a["graph_id"] for a in client.assistants.search(limit=100)}
    assert served == set(langgraph_entry.METHODS)
    assert set(CONTEXTS) == set(langgraph_entry.METHODS), "give every method a run context here"


@pytest.mark.parametrize("method", langgraph_entry.METHODS)
def test_graph_over_the_server(client: Any, metaqa: Any, method: str) -> None:
    """``runs.wait`` answers; ``runs.stream`` reports each node's update as it finishes, with the same
    answers and paths (decoding is greedy)."""
    context = CONTEXTS[method]
    drawn = {n["id"] for n in client.assistants.get_graph(method)["nodes"]}
    thread = client.threads.create()
    out = client.runs.wait(thread["thread_id"], method, input={"question": QUESTION}, context=context)
    _check_output(method, out, metaqa, drawn)

    thread = client.threads.create()
    updates: list[tuple[str, dict[str, Any]]] = []
    for part in client.runs.stream(
        thread["thread_id"], method, input={"question": QUESTION}, context=context, stream_mode="updates"
    ):
        assert part.event != "error", part.data
        if part.event == "updates":
            updates += [(node, value or {}) for node, value in part.data.items()]
    names = [n for n, _ in updates]
    assert names and set(names) <= drawn, (names, drawn)
    if "link_entities" in drawn:
        assert names[0] == "link_entities" and len(names) >= 3, names
    answers = [v["answers"] for _, v in updates if "answers" in v]
    paths = [v["paths"] for _, v in updates if "paths" in v]
    assert answers and answers[-1] == out["answers"], (answers, out["answers"])
    assert (paths[-1] if paths else []) == out["paths"]
    state = client.threads.get_state(thread["thread_id"])["values"]
    assert state["answers"] == out["answers"] and state["question"] == QUESTION


def test_per_run_option_and_kg_travel_in_the_context(client: Any, tmp_path: FsPath) -> None:
    """A context field (graph_agent's ``max_steps``) bounds the run; ``kg`` picks the KG the graph reads."""
    usage = {}
    for steps in (1, 2):
        out = client.runs.wait(
            client.threads.create()["thread_id"],
            "graph_agent",
            input={"question": QUESTION},
            context={"max_tokens": 32, "max_steps": steps},
        )
        usage[steps] = out["usage"]
    assert usage[1]["llm_calls"] < usage[2]["llm_calls"], usage

    kb = tmp_path / "kb.tsv"  # a KG where Splash has another director than in MetaQA
    kb.write_text("Splash\tdirected_by\tJane Doe\nSplash\tstarred_actors\tTom Hanks\n", encoding="utf-8")
    out = client.runs.wait(
        client.threads.create()["thread_id"],
        "dualr",
        input={"question": QUESTION},
        context={"kg": str(kb), "options": {"answer_with": "gnn"}},
    )
    assert out["answers"] == ["Jane Doe"], out
    assert [p.to_text() for p in _paths(out)] == ["Splash -> directed_by -> Jane Doe"]
