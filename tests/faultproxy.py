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

A fault can be limited to the requests whose decoded SPARQL query contains :attr:`FaultProxy.match`
(e.g. one entity's IRI), so one question of a run fails while the others pass. Every request is
logged in :attr:`FaultProxy.log` as ``(monotonic arrival time, faulted?, query)``.

Example:
    >>> with FaultProxy(server.endpoint) as proxy:                              # doctest: +SKIP
    ...     proxy.set("http500")
    ...     SparqlKG(proxy.endpoint).neighbors("x")   # EndpointError after the retries
"""

from __future__ import annotations

import http.client
import socket
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODES = ("pass", "delay", "http500", "truncate", "close", "down")


class FaultProxy:
    """A threading HTTP proxy to ``upstream`` that injects faults on demand.

    Args:
        upstream: the real endpoint URL (``http://127.0.0.1:PORT/query``).

    Attributes:
        endpoint: the proxy's URL for the same path (point ``SparqlKG`` at it).
        mode: the current fault (one of :data:`MODES`).
        delay: seconds the ``"delay"`` fault waits.
        match: when set, only requests whose query contains it get the fault.
        log: ``(arrival time, faulted, query)`` per request.
    """

    def __init__(self, upstream: str) -> None:
        parts = urllib.parse.urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = parts.port or 80
        self.mode = "pass"
        self.delay = 0.0
        self.match: str | None = None
        self.log: list[tuple[float, bool, str]] = []
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
        self.mode, self.delay, self.match = mode, float(delay), match

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
                query = self._query_text(body)
                mode = proxy.mode
                hit = mode != "pass" and (proxy.match is None or proxy.match in query)
                with proxy._lock:
                    proxy.log.append((time.monotonic(), hit, query))
                if not hit:
                    mode = "pass"
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
