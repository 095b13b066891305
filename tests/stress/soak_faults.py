"""Soak under faults: MetaQA questions through ``graph_rag`` and ``dualr`` while the endpoint misbehaves.

The script starts a Virtuoso 7 server (``kg_agents.kg.servers``, MetaQA exported as N-Triples and
bulk-loaded) and a fault-injecting proxy in front of it (``tests.faultproxy.FaultProxyProcess``: the
proxy runs in a child process, so its threads, sockets and memory are not counted as the client's).
The proxy gives each request, independently, a timeout (``delay``: it holds the request twice the
client's ``--timeout``), an HTTP 500 (``http500``) or a dropped connection (``close``), each with
probability ``--rate`` (seeded draws).

Each method runs through the project's evaluation runner (:func:`kg_agents.eval.runner.run_eval`, the code
``kg-agents eval`` runs, with the same thread pool of ``concurrency + 4`` threads for the graphs' sync
nodes) into its own ``--out`` directory at ``--concurrency``; every question must end answered or recorded
with its error in ``predictions.jsonl``. Then the faults are switched off and the same run is started again
on the same directory, with a fresh KG client and graph as a second ``kg-agents eval`` process would have
(the runner's resume: finished questions are skipped, those recorded with an error run again), and it must
end with every question once and no error left.

Methods, each over a ``SparqlKG`` with its defaults (2 retries, backoff 0.5 s, LRU cache) and ``--timeout``:

- ``graph_rag`` with a scripted constant chat model (it always answers ``Answer: unknown``): the KG side is
  real (linking with an ``ASK``, one ``neighbors_many`` over both directions, labels), with no model compute,
  so its quality figures mean nothing here;
- ``dualr`` with ``answer_with="gnn"``: the bundled MetaQA explorer checkpoint answers alone, no LLM (the
  paper's w.o. AD). Its explorations hold one lock per graph, so its questions explore one at a time.

Questions: ``--n`` MetaQA questions of all hops, the first ``n/3`` of each hop's seeded ``validation`` split
of the dev files (never MetaQA's test files).

Figures per method (first pass unless said): questions; answered; errors (recorded); stopped (the runner
gave up after ``max_endpoint_failures`` questions in a row); rerun (questions the rerun ran), errors left
after it, distinct questions recorded, duplicates (questions recorded as answered more than once) and lines
in ``predictions.jsonl``; wall seconds of both passes; this process's RSS when the question at the sample
point (200th, or n/10 for n < 2000) was recorded and when the last one was, and the growth between; open
sockets (the entries of ``/proc/self/fd`` that are sockets) and live threads (``threading.active_count()``)
before the run, at the sample point, and at the end (after the runner returned, ``gc.collect()``, and the
request threads of timed-out attempts ended); requests the proxy saw and faulted per kind. Samples are taken
by a thread that watches ``predictions.jsonl`` (one line per finished question, flushed at once). The RSS at
the end is not compared: writing the summary imports matplotlib and draws the run's chart. The sockets at the
end include the pipe to the proxy's process; the threads include tqdm's monitor thread (one per progress-bar
class and process, started by the runner's first bar even when it is disabled, never per run).

``--json`` also keeps, per method: the samples (with the KG client's cache entries), the names of the
threads at the end, the figures after the rerun (``after_rerun``), the requests the client sent (attempts
included), its ``batch_size`` after the first pass (a batch that failed with HTTP 500 three times is split
in halves and the smaller size kept, so random 500s can lower it), Hits@1 after the rerun and a few of the
recorded errors.

Usage::

    PYTHONPATH=. python -m tests.stress.soak_faults [--n 2000] [--concurrency 16] [--rate 0.05]
        [--methods graph_rag,dualr] [--seed 0] [--timeout 2] [--out DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

GRAPH_IRI = "urn:kg-agents:metaqa"
METHODS = ("graph_rag", "dualr")
FAULTS = ("delay", "http500", "close")
#: the thread name of SparqlKG's per-attempt request threads (they outlive an attempt that timed out)
REQUEST_THREAD = "SparqlKG-request"


# --------------------------------------------------------------------------- this process's resources
def rss_mb() -> float:
    """This process's resident set size now (MiB)."""
    with open("/proc/self/statm") as fh:
        pages = int(fh.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def open_sockets() -> int:
    """File descriptors of this process that are sockets (``/proc/self/fd`` links ``socket:[inode]``)."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile (the listing's own fd, a request that ended)
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return n


def sample() -> dict[str, float]:
    return {"rss_mb": rss_mb(), "sockets": open_sockets(), "threads": threading.active_count()}


class Sampler:
    """Samples :func:`sample` when the ``k``-th line of a predictions file appears, for each ``k`` given.

    A thread reads the file's new bytes every ``interval`` seconds and counts newlines; ``extra()`` adds
    figures to each sample.
    """

    def __init__(
        self,
        path: Path,
        at: Sequence[int],
        interval: float = 0.02,
        extra: Callable[[], dict[str, Any]] = dict,
    ) -> None:
        self.path, self.at, self.interval, self.extra = path, sorted(set(at)), interval, extra
        self.samples: dict[int, dict[str, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="soak-sampler", daemon=True)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        lines, offset = 0, 0
        while True:
            stopping = self._stop.is_set()
            try:
                with open(self.path, "rb") as fh:
                    fh.seek(offset)
                    data = fh.read()
            except FileNotFoundError:
                data = b""
            offset += len(data)
            lines += data.count(b"\n")
            for k in self.at:
                if k not in self.samples and lines >= k:
                    self.samples[k] = {"at_line": lines, **sample(), **self.extra()}
            if stopping or len(self.samples) == len(self.at):
                return
            self._stop.wait(self.interval)


def settle(timeout: float) -> int:
    """Wait (at most ``2 * timeout + 1`` s) for the request threads of timed-out attempts to end.

    Returns how many were alive when called.
    """
    left = sum(t.name == REQUEST_THREAD for t in threading.enumerate())
    deadline = time.monotonic() + 2 * timeout + 1.0
    while time.monotonic() < deadline and any(t.name == REQUEST_THREAD for t in threading.enumerate()):
        time.sleep(0.05)
    gc.collect()
    return left


# --------------------------------------------------------------------------- one method
def constant_model() -> Any:
    """The test suite's scripted chat model, always answering ``Answer: unknown`` (no model compute)."""
    from tests.fakes import FakeChat

    return FakeChat(default="Answer: unknown")


def build_method(method: str, kg: Any) -> Any:
    """The graph of ``method`` over ``kg`` as the soak runs it (see the module docstring)."""
    from kg_agents import create_graph
    from kg_agents.errors import ConfigError

    if method == "graph_rag":
        return create_graph("graph_rag", kg, llm=constant_model())
    if method == "dualr":
        return create_graph("dualr", kg, answer_with="gnn")
    raise ConfigError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")


def run_pass(
    qs: Sequence[Any],
    out: Path,
    method: str,
    kg: Any,
    *,
    concurrency: int,
    max_endpoint_failures: int,
    seed: int,
) -> tuple[dict[str, Any] | None, str | None]:
    """One ``run_eval`` over ``qs`` into ``out``, as ``kg-agents eval`` runs it.

    Returns ``(summary, None)``, or ``(None, reason)`` when the runner stopped on an endpoint that failed
    ``max_endpoint_failures`` questions in a row.
    """
    from concurrent.futures import ThreadPoolExecutor

    from kg_agents.errors import EndpointError
    from kg_agents.eval.runner import run_eval

    graph = build_method(method, kg)

    async def go() -> dict[str, Any]:
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(max_workers=concurrency + 4, thread_name_prefix="kg-agents-eval")
        )
        return await run_eval(
            qs,
            out,
            method=method,
            dataset="metaqa-soak",
            build_graph=lambda _kg: graph,
            kg_for=lambda _q: kg,
            concurrency=concurrency,
            run_info={"split": "validation", "seed": seed, "kg": f"sparql {GRAPH_IRI}"},
            progress=False,
            max_endpoint_failures=max_endpoint_failures,
        )

    try:
        return asyncio.run(go()), None
    except EndpointError as exc:  # the run stopped: every question before is recorded; a rerun resumes
        return None, str(exc)


def prediction_lines(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return [json.loads(ln) for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]


def soak(
    endpoint: str,
    graph_iri: str | None,
    qs: Sequence[Any],
    method: str,
    out: str | Path,
    proxy: Any,
    *,
    concurrency: int = 16,
    rate: float = 0.05,
    seed: int = 0,
    timeout: float = 2.0,
    sample_at: int | None = None,
    max_endpoint_failures: int = 5,
    log: Callable[[str], None] = lambda s: None,
) -> dict[str, Any]:
    """Run ``qs`` through ``method`` with random faults, then again without; return the figures.

    Args:
        endpoint: the proxy's endpoint (requests go through ``proxy``; ``endpoint`` is where it forwards
            them, only named in the figures).
        graph_iri: the default graph of the MetaQA data on the server.
        qs: the questions.
        method: ``graph_rag`` or ``dualr``.
        out: the run directory (must not hold a run yet).
        proxy: a :class:`~tests.faultproxy.FaultProxy` or ``FaultProxyProcess`` in front of ``endpoint``.
        concurrency: questions in flight.
        rate: the probability of each fault kind per request.
        seed: seeds the proxy's draws (and is the runner's recorded seed).
        timeout: ``SparqlKG`` seconds per attempt; the ``delay`` fault holds a request twice as long.
        sample_at: the question at which the first resource sample is taken (default 200, or n/10).
        max_endpoint_failures: as ``kg-agents eval --max-endpoint-failures``.
        log: called with a line of progress.

    Raises:
        ConfigError: a bad rate, concurrency, timeout or method, or ``out`` already holds a run.
    """
    from kg_agents.errors import ConfigError
    from kg_agents.eval.runner import PREDICTIONS, read_predictions
    from kg_agents.kg import SparqlKG

    if method not in METHODS:
        raise ConfigError(f"unknown method {method!r}; valid: {', '.join(METHODS)}")
    if not 0.0 <= rate <= 1.0 / len(FAULTS):
        raise ConfigError(f"rate must be in [0, {1 / len(FAULTS):.3f}] (one rate per fault kind), got {rate}")
    if concurrency < 1 or timeout <= 0:
        raise ConfigError(f"concurrency must be >= 1 and timeout > 0, got {concurrency} and {timeout}")
    if not qs:
        raise ConfigError("no questions")
    out = Path(out)
    pred = out / PREDICTIONS
    if pred.exists():
        raise ConfigError(f"{out} already holds a run; a soak starts from an empty directory")
    n = len(qs)
    k = sample_at or (200 if n >= 2000 else max(1, n // 10))
    row: dict[str, Any] = {"method": method, "questions": n, "concurrency": concurrency, "rate": rate}

    def new_kg() -> SparqlKG:
        return SparqlKG(proxy.endpoint, profile="metaqa", graph=graph_iri, timeout=timeout)

    # ---- first pass, with faults
    before_counts = Counter(proxy.fault_counts())
    proxy.set_random(dict.fromkeys(FAULTS, rate), seed=seed, delay=2 * timeout)
    gc.collect()
    row["before"] = sample()
    threads_before = {t.ident for t in threading.enumerate()}
    kg = new_kg()
    t0 = time.perf_counter()
    with Sampler(pred, [k, n], extra=lambda: {"kg_cache": kg.cache_info["size"]}) as sampler:
        _, stopped = run_pass(
            qs,
            out,
            method,
            kg,
            concurrency=concurrency,
            max_endpoint_failures=max_endpoint_failures,
            seed=seed,
        )
    row["wall_s"] = time.perf_counter() - t0
    row["request_threads_left"] = settle(timeout)
    row["end"] = {**sample(), "kg_cache": kg.cache_info["size"]}
    row["new_threads"] = sorted(t.name for t in threading.enumerate() if t.ident not in threads_before)
    row["threads_at_end"] = sorted(t.name for t in threading.enumerate())
    row["at_sample"] = sampler.samples.get(k)
    row["at_last"] = sampler.samples.get(n)
    row["sample_at"] = k
    counts = Counter(proxy.fault_counts()) - before_counts
    row["proxy_requests"] = sum(counts.values())
    row["faulted"] = {f: counts.get(f, 0) for f in FAULTS}
    row["client_requests"] = kg.requests_sent
    row["batch_size_after"] = kg.batch_size
    row["stopped"] = stopped
    first = prediction_lines(pred)
    row["recorded"] = len({r["id"] for r in first})
    row["errors"] = sum(1 for r in first if r.get("error"))
    row["answered"] = row["recorded"] - row["errors"]
    row["error_samples"] = sorted({r["error"] for r in first if r.get("error")})[:5]
    log(
        f"{method}: first pass {row['wall_s']:.0f}s, {row['recorded']}/{n} recorded, "
        f"{row['errors']} errors, stopped={stopped}"
    )
    del kg
    gc.collect()

    # ---- rerun on the same directory, faults off
    proxy.set("pass")
    kg = new_kg()
    t0 = time.perf_counter()
    summary, stopped_again = run_pass(
        qs, out, method, kg, concurrency=concurrency, max_endpoint_failures=max_endpoint_failures, seed=seed
    )
    row["rerun_wall_s"] = time.perf_counter() - t0
    settle(timeout)
    row["after_rerun"] = sample()
    lines = prediction_lines(pred)
    final = read_predictions(pred)
    ids = {q.id for q in qs}
    answered_times = Counter(r["id"] for r in lines if not r.get("error"))
    row["rerun_questions"] = len(lines) - len(first)
    row["rerun_stopped"] = stopped_again
    row["lines"] = len(lines)
    row["distinct"] = len(set(final) & ids)
    row["missing"] = len(ids - set(final))
    row["errors_left"] = sum(1 for i in ids if i in final and final[i].get("error"))
    row["duplicates"] = sum(1 for c in answered_times.values() if c > 1)
    row["hits@1"] = summary.get("hits@1") if summary else None
    log(f"{method}: rerun ran {row['rerun_questions']} questions, {row['errors_left']} errors left")
    return row


# --------------------------------------------------------------------------- report
HEAD = (
    "method",
    "questions",
    "answered",
    "errors",
    "stopped",
    "rerun",
    "errors after rerun",
    "distinct",
    "duplicates",
    "wall s",
    "rerun wall s",
    "RSS MB at q{k} / q{n}",
    "RSS growth",
    "sockets before / q{k} / end",
    "threads before / q{k} / end",
    "proxy requests",
    "delay / 500 / close",
)


def _fmt_row(r: dict[str, Any]) -> str:
    a, z, b, e = r["at_sample"] or {}, r["at_last"] or {}, r["before"], r["end"]
    growth = (z["rss_mb"] / a["rss_mb"] - 1) * 100 if a and z else None
    r["rss_growth_pct"] = growth
    cells = [
        r["method"],
        r["questions"],
        r["answered"],
        r["errors"],
        "yes" if r["stopped"] else "no",
        r["rerun_questions"],
        r["errors_left"],
        r["distinct"],
        r["duplicates"],
        f"{r['wall_s']:.0f}",
        f"{r['rerun_wall_s']:.0f}",
        f"{a.get('rss_mb', float('nan')):.0f} / {z.get('rss_mb', float('nan')):.0f}",
        "-" if growth is None else f"{growth:+.1f}%",
        f"{b['sockets']} / {a.get('sockets', '-')} / {e['sockets']}",
        f"{b['threads']} / {a.get('threads', '-')} / {e['threads']}",
        r["proxy_requests"],
        " / ".join(str(r["faulted"][f]) for f in FAULTS),
    ]
    return "| " + " | ".join(str(c) for c in cells) + " |"


def table(rows: Sequence[dict[str, Any]]) -> str:
    k = rows[0]["sample_at"] if rows else 200
    n = rows[0]["questions"] if rows else 2000
    head = [h.format(k=k, n=n) for h in HEAD]
    return "\n".join(["| " + " | ".join(head) + " |", "|" + "---|" * len(head), *map(_fmt_row, rows)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--n", type=int, default=2000, help="questions (all hops, dev validation split)")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--rate", type=float, default=0.05, help="probability of each fault kind per request")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=2.0, help="SparqlKG timeout per attempt (s)")
    ap.add_argument("--max-endpoint-failures", type=int, default=5, help="as kg-agents eval's")
    ap.add_argument("--out", help="run directories go here, one per method (default: a temporary one)")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)

    from kg_agents.errors import ConfigError, KGAgentsError

    try:
        methods = [m.strip() for m in args.methods.split(",") if m.strip()]
        bad = [m for m in methods if m not in METHODS]
        if bad or not methods:
            raise ConfigError(f"unknown methods {bad}; valid: {', '.join(METHODS)}")
        if args.n < 1 or args.concurrency < 1 or args.timeout <= 0 or args.max_endpoint_failures < 1:
            raise ConfigError("--n, --concurrency and --max-endpoint-failures must be >= 1, --timeout > 0")
        if not 0.0 <= args.rate <= 1.0 / len(FAULTS):
            raise ConfigError(f"--rate must be in [0, {1 / len(FAULTS):.3f}], got {args.rate}")
        if args.out and Path(args.out).exists() and any(Path(args.out).iterdir()):
            raise ConfigError(f"--out {args.out} is not empty; a soak starts from an empty directory")
        rows = _run(args, methods)
    except KGAgentsError as exc:
        print(f"soak_faults: {exc}", file=sys.stderr)
        return 2
    print(table(rows))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    ok = all(
        r["recorded"] == r["questions"] and not r["errors_left"] and not r["missing"] and not r["duplicates"]
        for r in rows
    )
    return 0 if ok else 1


def _run(args: argparse.Namespace, methods: list[str]) -> list[dict[str, Any]]:
    from kg_agents.eval.datasets import metaqa_all_hops
    from kg_agents.kg import open_kg
    from kg_agents.kg.export import write_ntriples
    from kg_agents.kg.servers import VirtuosoServer
    from tests.faultproxy import FaultProxyProcess

    def log(s: str) -> None:
        print(f"# {s}", file=sys.stderr, flush=True)

    qs = metaqa_all_hops(args.n, seed=args.seed)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kg-agents-soak-") as tmp:
        out = Path(args.out) if args.out else Path(tmp) / "runs"
        nt = write_ntriples(open_kg("metaqa"), Path(tmp) / "metaqa.nt.gz", profile="metaqa").path
        srv = VirtuosoServer({GRAPH_IRI: [nt]}, graph=GRAPH_IRI, directory=Path(tmp) / "virtuoso")
        try:
            srv.start()
            log(f"virtuoso: loaded in {srv.load_seconds:.1f}s, endpoint {srv.endpoint}")
            with FaultProxyProcess(srv.endpoint) as proxy:
                for m in methods:
                    row = soak(
                        srv.endpoint,
                        GRAPH_IRI,
                        qs,
                        m,
                        out / m,
                        proxy,
                        concurrency=args.concurrency,
                        rate=args.rate,
                        seed=args.seed,
                        timeout=args.timeout,
                        max_endpoint_failures=args.max_endpoint_failures,
                        log=log,
                    )
                    rows.append(row)
        finally:
            srv.stop()
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
