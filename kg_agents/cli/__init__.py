"""The ``kg-agents`` command line: ``ask``, ``eval``, ``report``, ``train``, ``build-tries``, ``demo``,
``methods`` and the rest (:mod:`kg_agents.cli.commands`)."""

from __future__ import annotations

from kg_agents.cli.commands import main

__all__ = ["main"]
