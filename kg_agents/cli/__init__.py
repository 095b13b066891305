"""The ``kg-agents`` command line: ``ask``, ``eval``, ``train``, ``build-tries``, ``demo``, ``methods``."""

from __future__ import annotations

from kg_agents.cli.commands import main

__all__ = ["main"]
