"""Session fixtures that start real SPARQL servers for the tests (a pytest plugin).

Enable with ``pytest_plugins = ["tests.servers"]`` in ``tests/conftest.py``. Each server is
started once per session on 127.0.0.1, loaded with two named graphs: the conformance data
(:data:`CONTRACT_GRAPH`, ids under the contract namespaces) and MetaQA exported as N-Triples
(:data:`METAQA_GRAPH`, ``metaqa`` profile). A server that cannot start fails the tests that use it,
with the reason; it is never skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kg_agents.errors import KGAgentsError
from kg_agents.kg.profiles import Profile
from kg_agents.kg.testing import CONTRACT_ENTITY_NS, CONTRACT_RELATION_NS, write_contract_ntriples

CONTRACT_GRAPH = "http://kg-agents.test/graph/contract"
METAQA_GRAPH = "http://kg-agents.test/graph/metaqa"
#: ids of the contract data as written by write_contract_ntriples
CONTRACT_PROFILE = Profile.namespaced(CONTRACT_ENTITY_NS, CONTRACT_RELATION_NS, name="contract")


@pytest.fixture(scope="session")
def rdf_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The contract data and MetaQA as N-Triples files, by graph IRI."""
    from kg_agents.kg import open_kg
    from kg_agents.kg.export import write_ntriples

    d = tmp_path_factory.mktemp("rdf-data")
    contract = write_contract_ntriples(d / "contract.nt")
    metaqa = write_ntriples(open_kg("metaqa"), d / "metaqa.nt.gz", profile="metaqa").path
    return {CONTRACT_GRAPH: contract, METAQA_GRAPH: metaqa}


def _start(server_cls: type, rdf_files: dict[str, Path], tmp: Path) -> object:
    try:
        srv = server_cls({g: [p] for g, p in rdf_files.items()}, directory=tmp)
        return srv.start()
    except (KGAgentsError, OSError) as exc:
        pytest.fail(f"{server_cls.__name__} could not start: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def oxigraph_server(rdf_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real Oxigraph server (``oxigraph serve-read-only``) with both graphs loaded."""
    from kg_agents.kg.servers import OxigraphServer

    srv = _start(OxigraphServer, rdf_files, tmp_path_factory.mktemp("oxigraph"))
    try:
        yield srv
    finally:
        srv.stop()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def virtuoso_server(rdf_files: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """A real Virtuoso 7 server (own ini, own ports) with both graphs bulk-loaded."""
    from kg_agents.kg.servers import VirtuosoServer

    srv = _start(VirtuosoServer, rdf_files, tmp_path_factory.mktemp("virtuoso"))
    try:
        yield srv
    finally:
        srv.stop()  # type: ignore[attr-defined]


@pytest.fixture(scope="session", params=["oxigraph", "virtuoso"])
def sparql_server(request: pytest.FixtureRequest) -> object:
    """Each real server in turn."""
    return request.getfixturevalue(f"{request.param}_server")
