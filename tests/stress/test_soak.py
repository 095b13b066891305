"""The soak check's core at a small size against a real Virtuoso 7 (markers ``stress``, ``server``, ``slow``).

:mod:`tests.stress.soak_faults` (``python -m tests.stress.soak_faults`` at full size) runs questions
through the evaluation runner while a fault proxy (in a child process) times out, fails with HTTP 500 or
drops a share of the requests at random, then runs the same run directory again with the faults off.
Expected: every question recorded once in the first pass (answered or with its error), the rerun runs
exactly the questions recorded with an error and leaves none, no question is answered twice, faults of
every kind were injected, and the run's sockets and threads are gone once it is over. No time is asserted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kg_agents.errors import ConfigError
from kg_agents.eval.datasets import metaqa_all_hops
from tests.faultproxy import FaultProxyProcess
from tests.servers import METAQA_GRAPH
from tests.stress.soak_faults import FAULTS, soak

pytestmark = [pytest.mark.stress, pytest.mark.server, pytest.mark.slow]


@pytest.mark.parametrize(("method", "n"), [("graph_rag", 60), ("dualr", 24)])
def test_soak_records_every_question_once_and_the_rerun_clears_the_errors(
    virtuoso_server: Any, tmp_path: Path, method: str, n: int
) -> None:
    qs = metaqa_all_hops(n, seed=0)
    with FaultProxyProcess(virtuoso_server.endpoint) as proxy:
        row = soak(
            virtuoso_server.endpoint,
            METAQA_GRAPH,
            qs,
            method,
            tmp_path / "run",
            proxy,
            concurrency=16,
            rate=0.1,
            seed=0,
            timeout=1.0,
            max_endpoint_failures=n,  # 30% of requests fail: never stop, so every question is recorded
        )
        with pytest.raises(ConfigError, match="already holds a run"):
            soak(virtuoso_server.endpoint, METAQA_GRAPH, qs, method, tmp_path / "run", proxy)
    # first pass: each question recorded once, answered or with its error
    assert row["stopped"] is None and row["recorded"] == n
    assert row["answered"] + row["errors"] == n
    # the rerun (faults off) ran exactly the questions recorded with an error, and left none
    assert row["rerun_stopped"] is None and row["rerun_questions"] == row["errors"]
    assert row["lines"] == n + row["errors"]
    assert row["distinct"] == n and row["missing"] == 0 and row["errors_left"] == 0
    assert row["duplicates"] == 0
    # faults of every kind reached the client
    assert all(row["faulted"][f] > 0 for f in FAULTS), row["faulted"]
    assert row["proxy_requests"] > sum(row["faulted"].values())
    # nothing of the run is left open: its sockets closed, its threads ended
    assert row["end"]["sockets"] <= row["before"]["sockets"], (row["before"], row["end"])
    assert not [t for t in row["new_threads"] if t.startswith(("kg-agents-eval", "SparqlKG-request"))]


def test_soak_refuses_bad_settings(tmp_path: Path) -> None:
    """Typed errors before anything runs (the proxy is never touched)."""
    qs = metaqa_all_hops(3, seed=0)
    for kw in ({"method": "gcr"}, {"rate": 0.5}, {"rate": -0.1}, {"concurrency": 0}, {"timeout": 0.0}):
        opts: dict[str, Any] = {"method": "graph_rag", **kw}
        with pytest.raises(ConfigError):
            soak("http://127.0.0.1:1/sparql", None, qs, out=tmp_path / "run", proxy=None, **opts)
    with pytest.raises(ConfigError, match="no questions"):
        soak("http://127.0.0.1:1/sparql", None, [], "graph_rag", tmp_path / "run", None)


@pytest.mark.parametrize(
    "argv",
    [["--methods", "gcr"], ["--rate", "0.4"], ["--n", "0"], ["--concurrency", "0"], ["--timeout", "0"]],
)
def test_soak_command_line_refuses_bad_arguments(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from tests.stress.soak_faults import main

    assert main(argv) == 2  # one line, before any server starts
    assert capsys.readouterr().err.startswith("soak_faults: ")
