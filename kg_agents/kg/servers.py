"""Start a local SPARQL server loaded with RDF files: :class:`OxigraphServer`, :class:`VirtuosoServer`.

For tests, benchmarks and trying kg-agents on your own KG. Each is a context manager that loads the
files, starts the server on a free ``127.0.0.1`` port, waits until it answers a query, and stops it
(terminate, then kill) on ``__exit__``, on :meth:`stop`, or at interpreter exit; on Linux the
kernel also terminates it if the starting process is killed outright::

    with OxigraphServer(["kg.nt.gz"]) as srv:
        kg = SparqlKG(srv.endpoint, profile="metaqa")

Needs the ``oxigraph`` command (``pip install oxigraph``) or Virtuoso 7 (``virtuoso-t`` and
``isql-vt`` from Debian's ``virtuoso-opensource``; ``scripts/install_virtuoso.sh``).
A server that cannot start raises :class:`~kg_agents.errors.EndpointError` with the reason and the
tail of its log; a missing program raises :class:`~kg_agents.errors.ConfigError`.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path as FsPath
from typing import Any

from kg_agents.errors import ConfigError, EndpointError

__all__ = ["Files", "OxigraphServer", "VirtuosoServer", "free_port"]

_LIVE: weakref.WeakSet[_Server] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:  # pragma: no cover - runs at exit
    for srv in list(_LIVE):
        srv.stop()


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _find(program: str, hint: str) -> str:
    found = shutil.which(program)
    if found is None:
        # the venv's bin directory (oxigraph installed with pip) even when it is not on PATH
        cand = FsPath(sys.executable).parent / program
        if cand.exists():
            return str(cand)
        raise ConfigError(f"{program!r} not found on PATH; {hint}")
    return found


def _die_with_parent() -> None:  # pragma: no cover - runs in the child before exec
    """Linux: have the kernel send SIGTERM to the server when the process that started it dies."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _tail(path: FsPath, n: int = 2000) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")[-n:].strip()
    except OSError:
        return ""


Files = (
    Sequence[str | os.PathLike[str]]
    | str
    | os.PathLike[str]
    | Mapping[str | None, Sequence[str | os.PathLike[str]]]
)


def _normalize(files: Files, graph: str | None) -> list[tuple[str | None, list[FsPath]]]:
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    groups = files.items() if isinstance(files, Mapping) else [(graph, files)]
    out: list[tuple[str | None, list[FsPath]]] = []
    for g, fs in groups:
        if isinstance(fs, (str, os.PathLike)):
            fs = [fs]
        paths = [FsPath(f).resolve() for f in fs]
        for f in paths:
            if not f.exists():
                raise FileNotFoundError(f"no such RDF file: {f}")
        out.append((g, paths))
    return out


class _Server:
    """Shared process handling: start, readiness polling, stop."""

    host = "127.0.0.1"
    endpoint: str
    _proc: subprocess.Popen[bytes] | None = None

    def __init__(
        self,
        files: Files,
        *,
        graph: str | None,
        directory: str | os.PathLike[str] | None = None,
        startup_timeout: float = 60.0,
    ) -> None:
        #: (graph IRI or None for the default graph, files) to load
        self.loads: list[tuple[str | None, list[FsPath]]] = _normalize(files, graph)
        self.files = [f for _, fs in self.loads for f in fs]
        self._own_dir = directory is None
        self.directory = FsPath(directory) if directory else FsPath(tempfile.mkdtemp(prefix="kg-agents-srv-"))
        self.startup_timeout = float(startup_timeout)
        self.load_seconds: float | None = None
        self.log_path = self.directory / "server.log"

    # -- lifecycle ---------------------------------------------------------
    def __enter__(self) -> Any:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def _spawn(self, argv: list[str], cwd: FsPath) -> None:
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps it
        try:
            self._proc = subprocess.Popen(
                argv,
                cwd=cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
            )
        finally:
            log.close()
        _LIVE.add(self)

    def _wait_ready(self, url: str) -> None:
        """Poll ``url`` with ``ASK {}`` until it answers 200, the process dies, or time runs out."""
        deadline = time.monotonic() + self.startup_timeout
        q = urllib.parse.urlencode({"query": "ASK { }"})
        last = "no answer"
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise EndpointError(
                    url, f"server exited with code {self._proc.returncode}; log:\n{_tail(self.log_path)}"
                )
            try:
                req = urllib.request.Request(
                    f"{url}?{q}", headers={"Accept": "application/sparql-results+json"}
                )
                with urllib.request.urlopen(req, timeout=2) as resp:
                    if resp.status == 200:
                        return
                    last = f"HTTP {resp.status}"
            except (urllib.error.URLError, OSError) as exc:
                last = str(exc)
            time.sleep(0.2)
        self.stop()
        raise EndpointError(
            url, f"not ready after {self.startup_timeout:g}s ({last}); log:\n{_tail(self.log_path)}"
        )

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout`` s) and remove its temporary dir."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                proc.wait(5)
        _LIVE.discard(self)
        if self._own_dir and self.directory.exists():
            shutil.rmtree(self.directory, ignore_errors=True)

    @staticmethod
    def _run(argv: list[str], what: str, timeout: float, url: str, cwd: FsPath | None = None) -> str:
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, check=False)
        except subprocess.TimeoutExpired as exc:
            raise EndpointError(url, f"{what} timed out after {timeout:g}s") from exc
        out = (res.stdout or "") + (res.stderr or "")
        if res.returncode != 0:
            raise EndpointError(url, f"{what} failed (exit {res.returncode}): {out[-2000:].strip()}")
        return out


class OxigraphServer(_Server):
    """An Oxigraph SPARQL server (``oxigraph serve-read-only``) over files loaded with ``oxigraph load``.

    Args:
        files: RDF files (``.nt``, ``.ttl``; ``.gz`` allowed), or ``{graph IRI: files}`` to load
            several named graphs (then pass ``graph=`` to ``SparqlKG``).
        graph: the graph to load a plain list of files into (default: the default graph).
        directory: where the database and log live (default: a temporary dir removed on stop).
        port: the HTTP port (default: a free one).
        read_only: serve with ``serve-read-only`` (default) or ``serve``.
        startup_timeout: seconds to wait for the server to answer.
        load_timeout: seconds ``oxigraph load`` may take.

    Attributes:
        endpoint: the query URL ``http://127.0.0.1:PORT/query``.
        load_seconds: how long the bulk load took.

    Example:
        >>> with OxigraphServer(["kg.nt"]) as srv:  # doctest: +SKIP
        ...     kg = SparqlKG(srv.endpoint, profile="metaqa")
    """

    def __init__(
        self,
        files: Files,
        *,
        graph: str | None = None,
        directory: str | os.PathLike[str] | None = None,
        port: int | None = None,
        read_only: bool = True,
        startup_timeout: float = 60.0,
        load_timeout: float = 1800.0,
    ) -> None:
        super().__init__(files, graph=graph, directory=directory, startup_timeout=startup_timeout)
        self.binary = _find("oxigraph", "install it with `pip install oxigraph` (kg-agents[server])")
        self.port = port
        self.read_only = read_only
        self.load_timeout = load_timeout
        self.location = self.directory / "db"

    def start(self) -> OxigraphServer:
        """Load the files (first start only), start the server, wait until it answers."""
        if self._proc is not None:
            return self
        if not self.location.exists():
            t0 = time.perf_counter()
            self.location.mkdir(parents=True)
            for g, fs in self.loads:
                if fs:
                    argv = [self.binary, "load", "--location", str(self.location), "--file", *map(str, fs)]
                    self._run(
                        argv + (["--graph", g] if g else []),
                        "oxigraph load",
                        self.load_timeout,
                        f"oxigraph:{self.location}",
                    )
            self.load_seconds = time.perf_counter() - t0
        tries = 1 if self.port else 3
        for attempt in range(tries):
            port = self.port or free_port(self.host)
            self.endpoint = f"http://{self.host}:{port}/query"
            cmd = "serve-read-only" if self.read_only else "serve"
            self._spawn(
                [self.binary, cmd, "--location", str(self.location), "--bind", f"{self.host}:{port}"],
                self.directory,
            )
            try:
                self._wait_ready(self.endpoint)
                self.bound_port = port
                return self
            except EndpointError:
                if attempt == tries - 1 or "in use" not in _tail(self.log_path).lower():
                    raise
        return self  # pragma: no cover


_VIRTUOSO_INI = """\
[Database]
DatabaseFile       = {d}/virtuoso.db
ErrorLogFile       = {d}/virtuoso.log
LockFile           = {d}/virtuoso.lck
TransactionFile    = {d}/virtuoso.trx
xa_persistent_file = {d}/virtuoso.pxa
ErrorLogLevel      = 7
FileExtend         = 200
MaxCheckpointRemap = 2000
Striping           = 0
TempStorage        = TempDatabase

[TempDatabase]
DatabaseFile       = {d}/virtuoso-temp.db
TransactionFile    = {d}/virtuoso-temp.trx
MaxCheckpointRemap = 2000
Striping           = 0

[Parameters]
ServerPort            = {host}:{sql_port}
DisableUnixSocket     = 1
DisableTcpSocket      = 0
MaxClientConnections  = 10
CheckpointInterval    = 60
CaseMode              = 2
DirsAllowed           = ., {load_dir}
NumberOfBuffers       = {buffers}
MaxDirtyBuffers       = {dirty}
ThreadsPerQuery       = 2
AsyncQueueMaxThreads  = 4
MaxQueryMem           = 1G
MaxSortedTopRows      = 1000000
VADInstallDir         = /usr/share/virtuoso-opensource-7/vad/

[HTTPServer]
ServerPort            = {host}:{http_port}
ServerRoot            = {d}
MaxClientConnections  = 10
ServerThreads         = 6
MaxKeepAlives         = 10
KeepAliveTimeout      = 10
Charset               = UTF-8
EnabledDavVSP         = 0

[SPARQL]
ResultSetMaxRows           = 1000000
MaxQueryCostEstimationTime = 0
MaxQueryExecutionTime      = 0
MaxSortedTopRows           = 1000000
"""


class VirtuosoServer(_Server):
    """A Virtuoso 7 server in its own directory, bulk-loaded into one named graph.

    Writes its own ``virtuoso.ini`` (database, log and both ports on ``127.0.0.1``, no system
    service involved), runs ``virtuoso-t +foreground +configfile virtuoso.ini``, then loads the files
    with ``isql-vt PORT dba PASSWORD exec="ld_dir(...); rdf_loader_run(); checkpoint;"``.
    The ini lifts Virtuoso's default result cap (``ResultSetMaxRows``) and anytime-query timeout,
    which would otherwise truncate answers silently.

    Args:
        files: RDF files (``.nt``, ``.ttl``, ``.gz`` allowed) loaded into ``graph``, or
            ``{graph IRI: files}`` to load several graphs.
        graph: the graph IRI to load a plain list of files into; pass it to
            ``SparqlKG(..., graph=srv.graph)``.
        directory: where the database, ini and log live (default: a temporary dir removed on stop).
        password: the ``dba`` password of this fresh database (Virtuoso's default is ``dba``;
            the server listens on ``127.0.0.1`` only).
        buffers: ``NumberOfBuffers`` (8 KiB pages of cache; ``MaxDirtyBuffers`` is three quarters of
            it). Virtuoso's guide: about 85,000 per GB of memory given to the server.
        loaders: bulk-loader threads: ``rdf_loader_run()`` runs in this many ``isql-vt`` sessions at
            once, each loading whole files (parallel only with several files; Virtuoso's guide: about
            one per 2.5 cores).
        startup_timeout: seconds to wait for the server to answer.
        load_timeout: seconds the bulk load may take.

    Attributes:
        endpoint: ``http://127.0.0.1:HTTPPORT/sparql``.
        load_seconds: how long the bulk load took.
    """

    def __init__(
        self,
        files: Files,
        *,
        graph: str = "urn:kg-agents:graph",
        directory: str | os.PathLike[str] | None = None,
        password: str = "dba",
        buffers: int = 20_000,
        loaders: int = 1,
        startup_timeout: float = 120.0,
        load_timeout: float = 1800.0,
    ) -> None:
        super().__init__(files, graph=graph, directory=directory, startup_timeout=startup_timeout)
        if not isinstance(loaders, int) or isinstance(loaders, bool) or loaders < 1:
            raise ConfigError(f"loaders must be a positive integer, got {loaders!r}")
        if any(g is None for g, _ in self.loads):
            raise ConfigError("Virtuoso loads into named graphs: give a graph IRI for every group of files")
        hint = "install Virtuoso 7 with scripts/install_virtuoso.sh (Debian: virtuoso-opensource)"
        self.server_binary = _find("virtuoso-t", hint)
        self.isql = _find("isql-vt", hint)
        self.graph = graph
        self.password = password
        self.buffers = int(buffers)
        self.loaders = loaders
        self.load_timeout = load_timeout
        self.db_dir = self.directory / "db"
        self.load_dir = self.directory / "load"

    def _isql(self, sql: str, timeout: float) -> str:
        return self._run(
            [self.isql, f"{self.host}:{self.sql_port}", "dba", self.password, f"exec={sql}"],
            "isql-vt",
            timeout,
            self.endpoint,
        )

    def _parallel_load(self) -> None:
        """``rdf_loader_run()`` in ``loaders`` concurrent sessions; the first failure is raised."""
        argv = [self.isql, f"{self.host}:{self.sql_port}", "dba", self.password, "exec=rdf_loader_run();"]
        procs = [
            subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            for _ in range(self.loaders)
        ]
        deadline = time.monotonic() + self.load_timeout
        failure = None
        for proc in procs:
            try:
                out, _ = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                failure = failure or f"rdf_loader_run timed out after {self.load_timeout:g}s"
                continue
            if proc.returncode != 0:
                failure = failure or f"rdf_loader_run failed (exit {proc.returncode}): {out[-2000:].strip()}"
        if failure:
            raise EndpointError(self.endpoint, failure)

    def start(self) -> VirtuosoServer:
        """Write the ini, start Virtuoso, wait until it answers, bulk-load the files (first start)."""
        if self._proc is not None:
            return self
        fresh = not self.db_dir.exists()
        self.db_dir.mkdir(parents=True, exist_ok=True)
        self.load_dir.mkdir(parents=True, exist_ok=True)
        self.sql_port, self.http_port = free_port(self.host), free_port(self.host)
        while self.http_port == self.sql_port:
            self.http_port = free_port(self.host)
        self.endpoint = f"http://{self.host}:{self.http_port}/sparql"
        ini = self.directory / "virtuoso.ini"
        ini.write_text(
            _VIRTUOSO_INI.format(
                d=self.db_dir,
                host=self.host,
                sql_port=self.sql_port,
                http_port=self.http_port,
                load_dir=self.load_dir,
                buffers=self.buffers,
                dirty=self.buffers * 3 // 4,
            ),
            encoding="utf-8",
        )
        self._spawn([self.server_binary, "+foreground", "+configfile", str(ini)], self.directory)
        self._wait_ready(self.endpoint)
        if fresh and self.files:
            sql = []
            for gi, (g, fs) in enumerate(self.loads):
                sub = self.load_dir / f"g{gi}"
                sub.mkdir(exist_ok=True)
                for i, f in enumerate(fs):
                    link = sub / f"{i:04d}-{f.name}"
                    if not link.exists():
                        try:
                            link.symlink_to(f)
                        except OSError:
                            shutil.copy2(f, link)
                graph_sql = str(g).replace("'", "''")
                dir_sql = str(sub).replace("'", "''")
                sql.append(f"ld_dir('{dir_sql}', '*', '{graph_sql}');")
            t0 = time.perf_counter()
            if self.loaders == 1:
                self._isql(" ".join(sql) + " rdf_loader_run(); checkpoint;", self.load_timeout)
            else:
                self._isql(" ".join(sql), 60)
                self._parallel_load()
                self._isql("checkpoint;", self.load_timeout)
            self.load_seconds = time.perf_counter() - t0
            errors = self._isql(
                "SELECT ll_file, ll_error FROM DB.DBA.LOAD_LIST WHERE ll_error IS NOT NULL;", 60
            )
            if "0 Rows." not in errors:
                self.stop()
                raise EndpointError(self.endpoint, f"bulk load reported errors: {errors[-2000:]}")
        return self
