"""``python -m kg_agents.cli``: the ``kg-agents`` command."""

from kg_agents.cli.commands import main

raise SystemExit(main())
