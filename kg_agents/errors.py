"""The one error hierarchy of kg-agents.

::

    KGAgentsError
     ├── KGError                 a knowledge-graph operation failed
     │    ├── EntityNotFound     an entity id or label is not in the KG (names the closest labels)
     │    ├── InvalidTermError   a term cannot be rendered safely into a query (bad IRI, bad id)
     │    └── EndpointError      a SPARQL endpoint was unreachable, slow, or answered garbage
     ├── ModelError              a language model could not be loaded or called
     ├── DataFormatError         an input file is malformed (names the file and the line)
     └── ConfigError             an unknown method, dataset or option, or a bad option value

Backend exceptions are mapped to the most specific class with ``raise ... from exc``.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = [
    "ConfigError",
    "DataFormatError",
    "EndpointError",
    "EntityNotFound",
    "InvalidTermError",
    "KGAgentsError",
    "KGError",
    "ModelError",
]


class KGAgentsError(Exception):
    """Base class of every error kg-agents raises on purpose."""


class KGError(KGAgentsError):
    """A knowledge-graph operation failed."""


class EntityNotFound(KGError, LookupError):
    """An entity id or label is not in the knowledge graph.

    Attributes:
        entity: what was looked up.
        suggestions: the closest labels the KG has, best first (may be empty).
    """

    def __init__(self, entity: str, suggestions: Sequence[str] = ()) -> None:
        self.entity = entity
        self.suggestions = list(suggestions)
        msg = f"entity not found: {entity!r}"
        if self.suggestions:
            msg += "; closest: " + ", ".join(repr(s) for s in self.suggestions)
        super().__init__(msg)


class InvalidTermError(KGError, ValueError):
    """A term (IRI, entity id, relation) cannot be rendered safely into a query."""


class EndpointError(KGError):
    """A SPARQL endpoint failed: unreachable, timed out, HTTP error, or unparseable answer.

    Attributes:
        endpoint: the URL of the endpoint.
    """

    def __init__(self, endpoint: str, reason: str) -> None:
        self.endpoint = endpoint
        self.reason = reason
        super().__init__(f"SPARQL endpoint {endpoint} failed: {reason}")


class ModelError(KGAgentsError):
    """A language model could not be loaded, reached or called."""


class DataFormatError(KGAgentsError, ValueError):
    """An input file is malformed.

    Attributes:
        path: the file.
        line: 1-based line number, or None when the error is not tied to one line.
    """

    def __init__(self, path: str, line: int | None, reason: str) -> None:
        self.path = str(path)
        self.line = line
        self.reason = reason
        where = f"{self.path}:{line}" if line is not None else self.path
        super().__init__(f"{where}: {reason}")


class ConfigError(KGAgentsError, ValueError):
    """An unknown name (method, dataset, option) or an invalid option value."""
