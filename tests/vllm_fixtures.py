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
    # langchain-tests' ChatModelUnitTests marks test_init_time with @pytest.mark.benchmark; pytest-benchmark
    # is disabled in this repo (-p no:benchmark), so register the marker for --strict-markers.
    config.addinivalue_line(
        "markers", "benchmark: langchain-tests timing test (pytest-benchmark is disabled)"
    )


@pytest.fixture
def benchmark() -> Callable[..., Any]:
    """Stand-in for pytest-benchmark's fixture (disabled here): runs the function once, no statistics.

    langchain-tests' ``test_init_time`` needs a ``benchmark`` fixture; timings are not asserted in this repo.
    """

    def run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return run


@pytest.fixture(scope="session")
def vllm_server() -> Iterator[VLLMServer]:
    """A running vLLM server with SmolLM2 served as ``smollm2``; stopped at the end of the session."""
    from kg_agents.llm.vllm_server import VLLMServer, vllm_python

    python = vllm_python()
    if not python.is_file():
        pytest.fail(f"vLLM tests need {python}: run `make setup-vllm` (scripts/setup_vllm.sh) first")
    with VLLMServer() as server:
        yield server
