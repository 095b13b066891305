"""A fault-injecting HTTP proxy on 127.0.0.1 for the SPARQL fault tests.

:class:`FaultProxy` forwards every request (GET or POST, path, query string, body, ``Accept`` and
``Content-Type``) to a real upstream endpoint and passes the answer back, unless a fault is switched
on. Faults (:attr:`FaultProxy.mode`):

- ``"pass"``: forward unchanged;
- ``"delay"``: wait :attr:`FaultProxy.delay` seconds, then forward;
- ``"http500"``: answer ``500 Internal Server Error`` without asking the upstream;
- ``"truncate"``: forward, then send the upstream's status and headers with a ``Content-Length``
  larger than the body, half the body, and close the connection;
- ``"close"``: close the connection without answering;
- ``"down"``: answer ``502 Bad Gateway``, as a reverse proxy does when the server behind it is stopped.

:meth:`FaultProxy.set_random` switches to ``"random"``: each request independently gets one of several
faults with the given probabilities (e.g. 5% ``"delay"``, 5% ``"http500"``, 5% ``"close"``), drawn from a
seeded generator (the sequence of draws is fixed by the seed; which query gets which draw depends on the
order in which concurrent requests arrive). :attr:`FaultProxy.counts` counts the requests by the fault
they got (``"pass"`` for none).

A fault can be limited to the requests whose decoded SPARQL query contains :attr:`FaultProxy.match`
(e.g. one entity's IRI), so one question of a run fails while the others pass. Every request is
logged in :attr:`FaultProxy.log` as ``(monotonic arrival time, faulted?, query)``.

Example:
    >>> with FaultProxy(server.endpoint) as proxy:                              # doctest: +SKIP
    ...     proxy.set("http500")
    ...     SparqlKG(proxy.endpoint).neighbors("x")   # EndpointError after the retries
    ...     proxy.set_random({"http500": 0.05, "close": 0.05}, seed=0)  # 10% of requests fail
"""

from __future__ import annotations

import contextlib
import http.client
import random
import socket
import threading
import time
import urllib.parse
from collections import Counter
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("pass", "delay", "http500", "truncate", "close", "down")
#: the mode :meth:`FaultProxy.set_random` switches to
RANDOM = "random"


class FaultProxy:
    """A threading HTTP proxy to ``upstream`` that injects faults on demand.

    Args:
        upstream: the real endpoint URL (``http://127.0.0.1:PORT/query``).

    Attributes:
        endpoint: the proxy's URL for the same path (point ``SparqlKG`` at it).
        mode: the current fault (one of :data:`MODES`, or :data:`RANDOM`).
        delay: seconds the ``"delay"`` fault waits.
        match: when set, only requests whose query contains it get the fault.
        rates: in ``"random"`` mode, the probability of each fault per request.
        log: ``(arrival time, faulted, query)`` per request.
        counts: requests by the fault they got (``"pass"``: none).
    """

    def __init__(self, upstream: str) -> None:
        parts = urllib.parse.urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.mode = "pass"
        self.delay = 0.0
        self.match: str | None = None
        self.rates: dict[str, float] = {}
        self.log: list[tuple[float, bool, str]] = []
        self.counts: Counter[str] = Counter()
        self._rng = random.Random(0)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        port = self._server.server_address[1]
        self.endpoint = f"http://127.0.0.1:{port}{parts.path}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="FaultProxy", daemon=True)

    def __enter__(self) -> FaultProxy:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving and close the listening socket."""
        self._server.shutdown()
        self._server.server_close()

    def set(self, mode: str, *, delay: float = 0.0, match: str | None = None) -> None:
        """Switch to ``mode`` (for every request, or for those whose query contains ``match``)."""
        if mode not in MODES:
            raise ValueError(f"unknown fault mode {mode!r}; valid: {MODES}")
        with self._lock:
            self.mode, self.delay, self.match, self.rates = mode, float(delay), match, {}

    def set_random(
        self, rates: Mapping[str, float], *, seed: int = 0, delay: float = 0.0, match: str | None = None
    ) -> None:
        """Give each request (or each whose query contains ``match``) a fault drawn at random.

        Args:
            rates: the probability of each fault per request, e.g. ``{"delay": 0.05, "http500": 0.05,
                "close": 0.05}``; the rest of the requests pass. Faults are any of :data:`MODES` but
                ``"pass"``; the probabilities must be in [0, 1] and sum to at most 1.
            seed: seeds the draws (the same seed gives the same sequence of faults).
            delay: seconds the ``"delay"`` fault waits (make it longer than the client's timeout).
            match: as for :meth:`set`.

        Raises:
            ValueError: an unknown fault, or probabilities out of range.
        """
        bad = [m for m in rates if m not in MODES or m == "pass"]
        if bad:
            raise ValueError(f"unknown random faults {bad}; valid: {MODES[1:]}")
        if any(not 0.0 <= p <= 1.0 for p in rates.values()) or sum(rates.values()) > 1.0 + 1e-9:
            raise ValueError(f"fault probabilities must be in [0, 1] and sum to at most 1, got {dict(rates)}")
        ordered = {m: float(rates[m]) for m in MODES if m in rates}  # a fixed order: draws map the same way
        with self._lock:
            self.mode, self.delay, self.match, self.rates = RANDOM, float(delay), match, ordered
            self._rng = random.Random(seed)

    def fault_counts(self) -> dict[str, int]:
        """A copy of :attr:`counts`: requests so far by the fault they got (``"pass"``: none)."""
        with self._lock:
            return dict(self.counts)

    def _pick(self, query: str) -> str:
        """The fault this request gets (``"pass"``: none); logged and counted."""
        with self._lock:
            mode = self.mode
            if mode == RANDOM:
                u, mode, acc = self._rng.random(), "pass", 0.0
                for m, p in self.rates.items():
                    acc += p
                    if u < acc:
                        mode = m
                        break
            hit = mode != "pass" and (self.match is None or self.match in query)
            self.log.append((time.monotonic(), hit, query))
            mode = mode if hit else "pass"
            self.counts[mode] += 1
        return mode

    def faulted(self) -> list[float]:
        """Arrival times of the requests that got the fault."""
        with self._lock:
            return [t for t, f, _ in self.log if f]

    # ------------------------------------------------------------------ handler
    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._handle(b"")

            def do_POST(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                self._handle(self.rfile.read(n) if n else b"")

            def _query_text(self, body: bytes) -> str:
                qs = urllib.parse.urlsplit(self.path).query
                fields = urllib.parse.parse_qs(qs) | urllib.parse.parse_qs(body.decode("utf-8", "replace"))
                return "\n".join(fields.get("query", []))

            def _handle(self, body: bytes) -> None:
                try:
                    self._respond(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (its timeout): what the "delay" fault is for
                    self.close_connection = True

            def _respond(self, body: bytes) -> None:
                mode = proxy._pick(self._query_text(body))
                if mode == "close":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if mode in ("http500", "down"):
                    code, text = (500, b"injected fault") if mode == "http500" else (502, b"upstream down")
                    self.send_response(code)
                    self.send_header("Content-Type", "text/plain")
                    self.send_header("Content-Length", str(len(text)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.wfile.write(text)
                    self.close_connection = True
                    return
                if mode == "delay":
                    time.sleep(proxy.delay)
                status, headers, data = self._forward(body)
                if mode == "truncate":
                    self.send_response(status)
                    self.send_header("Content-Type", headers.get("Content-Type", "application/json"))
                    self.send_header("Content-Length", str(len(data) + 1000))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                self.send_response(status)
                self.send_header("Content-Type", headers.get("Content-Type", "application/octet-stream"))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _forward(self, body: bytes) -> tuple[int, dict[str, str], bytes]:
                conn = http.client.HTTPConnection(proxy.upstream_host, proxy.upstream_port, timeout=60)
                try:
                    headers = {k: v for k in ("Accept", "Content-Type") if (v := self.headers.get(k))}
                    conn.request(self.command, self.path, body=body or None, headers=headers)
                    resp = conn.getresponse()
                    return resp.status, dict(resp.getheaders()), resp.read()
                except OSError as exc:
                    text = f"upstream unreachable: {exc}".encode()
                    return 502, {"Content-Type": "text/plain"}, text
                finally:
                    conn.close()

        return Handler


class FaultProxyProcess:
    """A :class:`FaultProxy` in a child process, driven from this one.

    The proxy's handler threads, its sockets and its log then do not count in this process's threads,
    open file descriptors and memory, so a client measured here (a soak benchmark) is measured alone.
    Same controls as :class:`FaultProxy`: :meth:`set`, :meth:`set_random`, :meth:`fault_counts`.

    Args:
        upstream: the real endpoint URL.
        start_timeout: seconds to wait for the child to listen.
    """

    def __init__(self, upstream: str, *, start_timeout: float = 60.0) -> None:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")  # no fork of a process that may hold threads
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_serve, args=(upstream, child), name="FaultProxy", daemon=True)
        self._proc.start()
        child.close()
        if not self._conn.poll(start_timeout):  # the child sends its endpoint once it listens
            self._proc.kill()
            raise RuntimeError(f"the fault proxy did not start within {start_timeout:g}s")
        self.endpoint: str = self._conn.recv()
        self.pid = self._proc.pid

    def __enter__(self) -> FaultProxyProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, what: str, *args: Any, **kw: Any) -> Any:
        self._conn.send((what, args, kw))
        status, value = self._conn.recv()
        if status == "err":
            raise value
        return value

    def set(self, mode: str, *, delay: float = 0.0, match: str | None = None) -> None:
        """As :meth:`FaultProxy.set`."""
        self._call("set", mode, delay=delay, match=match)

    def set_random(
        self, rates: Mapping[str, float], *, seed: int = 0, delay: float = 0.0, match: str | None = None
    ) -> None:
        """As :meth:`FaultProxy.set_random`."""
        self._call("set_random", dict(rates), seed=seed, delay=delay, match=match)

    def fault_counts(self) -> dict[str, int]:
        """As :meth:`FaultProxy.fault_counts`."""
        return dict(self._call("fault_counts"))

    def close(self) -> None:
        """Stop the proxy and its process."""
        if self._proc.is_alive():
            with contextlib.suppress(EOFError, OSError):  # the child is gone already
                self._call("close")
            self._proc.join(10)
            if self._proc.is_alive():
                self._proc.kill()
                self._proc.join(10)
        self._conn.close()


def _serve(upstream: str, conn: Any) -> None:
    """The child process of :class:`FaultProxyProcess`: serve, and answer commands until ``close``."""
    with FaultProxy(upstream) as proxy:
        conn.send(proxy.endpoint)
        while True:
            try:
                what, args, kw = conn.recv()
            except EOFError:  # the parent went away
                return
            try:
                if what == "close":
                    conn.send(("ok", None))
                    return
                value: Any = None
                if what == "fault_counts":
                    value = proxy.fault_counts()
                elif what in ("set", "set_random"):
                    value = getattr(proxy, what)(*args, **kw)
                else:
                    raise ValueError(f"unknown command {what!r}")
            except Exception as exc:  # sent back and raised in the parent
                conn.send(("err", exc))
            else:
                conn.send(("ok", value))
