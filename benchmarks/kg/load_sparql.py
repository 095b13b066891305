"""Load: MetaQA questions through ``graph_rag`` at concurrency 1, 4 and 16 against real SPARQL servers.

The script starts an Oxigraph server and a Virtuoso 7 server itself (``kg_agents.kg.servers``, MetaQA
exported as N-Triples and bulk-loaded), runs the questions through one reasoning graph per (server,
concurrency) with a fresh ``SparqlKG`` (cold cache), and stops the servers in ``finally``.

The graph is ``graph_rag`` with a constant scripted chat model (it always answers ``Answer: unknown``):
every question does the real KG work of the method (linking the given topic entity with an ``ASK``, one
``neighbors_many`` over both directions with the fan-out limit, a label lookup per context triple) and
no model compute, so the figures are the KG side of the pipeline. Not ``dualr`` with ``llm=None``:
its GNN exploration holds one lock per graph (the explorer's shared neighbour cache), so questions
would run one at a time whatever the concurrency, and its CPU time would dominate the figures. Not
``graph_rag`` with ``llm=None``: that loads the embedded local model.

Questions: ``--n`` (default 500) MetaQA questions of all hops, the first ``n/3`` of each hop's seeded
``validation`` split (dev files only). Each question runs on a worker thread (``ThreadPoolExecutor``,
``--concurrency`` workers); its latency is its own ``invoke`` time.

Columns: server, concurrency, questions, with context (questions whose retrieval found triples),
throughput (questions/s over the run's wall time), p50 and
p95 latency, errors (questions that raised, or whose graph recorded a KG endpoint failure), peak RSS
of this process (``resource.getrusage``, a high-water mark since the start of the script) and the
server process's RSS after the run.

Usage::

    PYTHONPATH=. python benchmarks/kg/load_sparql.py [--n 500] [--concurrency 1,4,16]
        [--servers oxigraph,virtuoso] [--seed 0] [--timeout 30] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

GRAPH_IRI = "urn:kg-agents:metaqa"


def constant_model() -> Any:
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    return FakeListChatModel(responses=["Answer: unknown"])


def run_one_setting(
    endpoint: str, graph_iri: str | None, qs: list[Any], concurrency: int, timeout: float
) -> dict[str, Any]:
    from kg_agents import create_graph
    from kg_agents.eval.runner import endpoint_failure
    from kg_agents.kg import SparqlKG

    kg = SparqlKG(endpoint, profile="metaqa", graph=graph_iri, timeout=timeout)
    graph = create_graph("graph_rag", kg, llm=constant_model())
    lat: list[float] = []
    errors: list[str] = []
    with_context = [0]
    lock = threading.Lock()

    def one(q: Any) -> None:
        t0 = time.perf_counter()
        try:
            out = graph.invoke({"question": q.question, "topic_entities": q.topic_entities})
        except Exception as exc:  # counted and shown, the run goes on
            errors.append(f"{q.id}: {type(exc).__name__}: {exc}")
            return
        finally:
            lat.append(time.perf_counter() - t0)
        failure = endpoint_failure(out)
        if failure:
            errors.append(f"{q.id}: {failure}")
        if any(s.get("node") == "retrieve" and s.get("triples") for s in out.get("trace") or []):
            with lock:
                with_context[0] += 1

    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        list(pool.map(one, qs))
    wall = time.perf_counter() - t0
    lat.sort()
    return {
        "concurrency": concurrency,
        "questions": len(qs),
        "throughput_qps": len(qs) / wall,
        "p50_ms": statistics.median(lat) * 1e3,
        "p95_ms": lat[min(len(lat) - 1, round(0.95 * (len(lat) - 1)))] * 1e3,
        "with_context": with_context[0],
        "errors": len(errors),
        "error_samples": errors[:5],
        "requests": kg.requests_sent,
        "wall_s": wall,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _server_rss_mb(pid: int | None) -> float | None:
    try:
        import psutil

        proc = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 2**20
    except Exception:  # psutil missing or process gone: not reported
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--concurrency", default="1,4,16")
    ap.add_argument("--servers", default="oxigraph,virtuoso")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=30.0, help="SparqlKG timeout per attempt (s)")
    ap.add_argument("--json", help="also write the rows here")
    args = ap.parse_args(argv)

    from kg_agents.eval.datasets import metaqa_all_hops
    from kg_agents.kg import open_kg
    from kg_agents.kg.export import write_ntriples
    from kg_agents.kg.servers import OxigraphServer, VirtuosoServer

    levels = [int(c) for c in args.concurrency.split(",")]
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    qs = metaqa_all_hops(args.n, seed=args.seed)
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="kg-agents-load-") as tmp:
        nt = write_ntriples(open_kg("metaqa"), Path(tmp) / "metaqa.nt.gz", profile="metaqa").path
        for name in servers:
            if name == "oxigraph":
                srv: Any = OxigraphServer({GRAPH_IRI: [nt]}, directory=Path(tmp) / name)
            elif name == "virtuoso":
                srv = VirtuosoServer({GRAPH_IRI: [nt]}, graph=GRAPH_IRI, directory=Path(tmp) / name)
            else:
                raise SystemExit(f"unknown server {name!r}; valid: oxigraph, virtuoso")
            try:
                srv.start()
                print(
                    f"# {name}: loaded in {srv.load_seconds:.1f}s, endpoint {srv.endpoint}",
                    file=sys.stderr,
                    flush=True,
                )
                for c in levels:
                    row = {"server": name, **run_one_setting(srv.endpoint, GRAPH_IRI, qs, c, args.timeout)}
                    row["server_rss_mb"] = _server_rss_mb(srv.pid)
                    rows.append(row)
                    print(
                        f"# {name} c={c}: {row['throughput_qps']:.1f} q/s, errors {row['errors']} "
                        f"{row['error_samples']}",
                        file=sys.stderr,
                        flush=True,
                    )
            finally:
                srv.stop()
    head = (
        "server",
        "concurrency",
        "questions",
        "with context",
        "throughput q/s",
        "p50 ms",
        "p95 ms",
        "errors",
        "requests",
        "peak RSS MB",
        "server RSS MB",
    )
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in rows:
        srv_rss = "-" if r["server_rss_mb"] is None else f"{r['server_rss_mb']:.0f}"
        print(
            f"| {r['server']} | {r['concurrency']} | {r['questions']} | {r['with_context']} | "
            f"{r['throughput_qps']:.1f} | "
            f"{r['p50_ms']:.1f} | {r['p95_ms']:.1f} | {r['errors']} | {r['requests']} | "
            f"{r['peak_rss_mb']:.0f} | {srv_rss} |"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 1 if any(r["errors"] for r in rows) else 0


if __name__ == "__main__":
    raise SystemExit(main())
