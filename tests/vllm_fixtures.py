"""pytest plugin: the session-scoped ``vllm_server`` fixture (a real vLLM CPU server) and marker setup.

Load it from ``tests/conftest.py`` with ``pytest_plugins = ["tests.vllm_fixtures"]``.

If ``.venv-vllm`` (made by ``scripts/setup_vllm.sh``, or ``make setup-vllm``) is missing, tests that use
the fixture FAIL with that reason: they are never silently skipped.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from kg_agents.llm.vllm_server import VLLMServer


def pytest_configure(config: pytest.Config) -> None:
    # langchain-tests marks some tests with @pytest.mark.benchmark / @pytest.mark.vcr; their plugins are
    # disabled in this repo (-p no:benchmark -p no:recording), so register the markers for --strict-markers.
    config.addinivalue_line(
        "markers", "benchmark: langchain-tests timing test (pytest-benchmark is disabled)"
    )
    config.addinivalue_line("markers", "vcr: langchain-tests cassette test (pytest-recording is disabled)")


@pytest.fixture
def benchmark() -> Callable[..., Any]:
    """Stand-in for pytest-benchmark's fixture (disabled here): runs the function once, no statistics.

    langchain-tests' ``test_init_time`` needs a ``benchmark`` fixture; timings are not asserted in this repo.
    """

    def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return run


@pytest.fixture
def vcr() -> None:
    """Stand-in for pytest-recording's fixture (disabled here); the suite skips its VCR tests by default."""
    return None


@pytest.fixture(scope="session")
def vllm_server() -> Iterator[VLLMServer]:
    """A running vLLM server with SmolLM2 served as ``smollm2``; stopped at the end of the session."""
    from kg_agents.llm.vllm_server import VLLMServer, vllm_python

    python = vllm_python()
    if not python.is_file():
        pytest.fail(f"vLLM tests need {python}: run `make setup-vllm` (scripts/setup_vllm.sh) first")
    # generous: start-up took 35 s idle but 145 s on this shared 2-core machine under load (VLLM.md, report)
    with VLLMServer(startup_timeout=300) as server:
        yield server
