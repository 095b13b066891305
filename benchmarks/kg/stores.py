"""Load time, memory and neighbour latency of MetaQA in each KnowledgeGraph store.

Stores: MemoryKG; RdfKG (rdflib over the in-process Oxigraph store); SparqlKG against a local
Oxigraph server; SparqlKG against a local Virtuoso 7. For the servers, "load" is the server's bulk
load of MetaQA exported as N-Triples (``oxigraph load`` / Virtuoso ``rdf_loader_run``) and RSS is the
server process's; for in-process stores, load is ``from_file`` and RSS is the growth of a fresh
Python process that loads only that store.

Latency: median over a fixed seeded sample of entities, caches off:
- 1-hop: ``neighbors(e, direction="both", limit=LIMIT)``;
- 2-hop: that, then ``neighbors_many`` over the neighbours found (one request for a SPARQL store).

Usage::

    PYTHONPATH=. python benchmarks/kg/stores.py [--stores memory,rdf,oxigraph,virtuoso]
        [--sample 200] [--limit 100] [--seed 0]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ALL_STORES = ("memory", "rdf", "oxigraph", "virtuoso")


def _rss_mb(pid: int | None = None) -> float:
    import psutil

    return psutil.Process(pid or os.getpid()).memory_info().rss / 2**20


def _sample(n: int, seed: int) -> list[str]:
    from kg_agents.kg import open_kg

    ents = sorted(e for e, _ in open_kg("metaqa").iter_labels())
    return random.Random(seed).sample(ents, n)


def _latencies(kg: Any, entities: list[str], limit: int, two_hop_n: int) -> dict[str, float]:
    one: list[float] = []
    two: list[float] = []
    fanout: list[int] = []
    for e in entities:
        t0 = time.perf_counter()
        kg.neighbors(e, direction="both", limit=limit)
        one.append(time.perf_counter() - t0)
    for e in entities[:two_hop_n]:
        t0 = time.perf_counter()
        first = kg.neighbors(e, direction="both", limit=limit)
        nxt = list(dict.fromkeys(t.other(e) for t in first))
        kg.neighbors_many(nxt, direction="both", limit=limit)
        two.append(time.perf_counter() - t0)
        fanout.append(len(nxt))
    return {
        "hop1_median_ms": statistics.median(one) * 1e3,
        "hop1_p90_ms": sorted(one)[int(0.9 * (len(one) - 1))] * 1e3,
        "hop2_median_ms": statistics.median(two) * 1e3,
        "hop2_p90_ms": sorted(two)[int(0.9 * (len(two) - 1))] * 1e3,
        "hop2_median_frontier": statistics.median(fanout),
    }


def run_in_process(store: str, sample: int, limit: int, seed: int) -> dict[str, Any]:
    """Load one in-process store in this (fresh) process and measure it."""
    from kg_agents.data import data_path

    entities = _sample(sample, seed)
    gc.collect()
    rss0 = _rss_mb()
    t0 = time.perf_counter()
    path = data_path("metaqa/kb.txt.gz")
    if store == "memory":
        from kg_agents.kg.memory import MemoryKG

        kg: Any = MemoryKG.from_file(path, fmt="metaqa", name="metaqa")
    else:
        from kg_agents.kg.rdf import RdfKG

        kg = RdfKG.from_file(path, fmt="metaqa", name="metaqa", cache_size=0)
    load = time.perf_counter() - t0
    gc.collect()
    rss = _rss_mb() - rss0
    out = {"store": store, "load_s": load, "rss_mb": rss}
    out.update(_latencies(kg, entities, limit, max(1, sample // 2)))
    return out


def run_server(kind: str, nt_path: Path, sample: int, limit: int, seed: int) -> dict[str, Any]:
    """Start a server loaded with ``nt_path`` and measure SparqlKG against it."""
    from kg_agents.kg.servers import OxigraphServer, VirtuosoServer
    from kg_agents.kg.sparql import SparqlKG

    entities = _sample(sample, seed)
    graph = "urn:kg-agents:metaqa"
    srv: Any
    if kind == "oxigraph":
        srv = OxigraphServer({graph: [nt_path]})
    else:
        srv = VirtuosoServer({graph: [nt_path]}, graph=graph)
    with srv:
        kg = SparqlKG(srv.endpoint, profile="metaqa", graph=graph, cache_size=0, timeout=60)
        kg.neighbors("Tom Hanks", direction="both", limit=limit)  # warm up
        out = {"store": f"{kind} server (SparqlKG)", "load_s": srv.load_seconds}
        out.update(_latencies(kg, entities, limit, max(1, sample // 2)))
        out["rss_mb"] = _rss_mb(srv.pid)
        out["requests"] = kg.requests_sent
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--stores", default=",".join(ALL_STORES))
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("--limit", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--one", help=argparse.SUPPRESS)  # internal: measure one in-process store
    args = ap.parse_args(argv)
    if args.one:
        sys.stdout.write(json.dumps(run_in_process(args.one, args.sample, args.limit, args.seed)) + "\n")
        return
    stores = [s for s in args.stores.split(",") if s]
    results: list[dict[str, Any]] = []
    nt_path: Path | None = None
    tmp = tempfile.TemporaryDirectory(prefix="bench-kg-")
    for store in stores:
        if store in ("memory", "rdf"):
            res = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--one",
                    store,
                    "--sample",
                    str(args.sample),
                    "--limit",
                    str(args.limit),
                    "--seed",
                    str(args.seed),
                ],
                capture_output=True,
                text=True,
                check=True,
            )
            results.append(json.loads(res.stdout.strip().splitlines()[-1]))
        else:
            if nt_path is None:
                from kg_agents.kg import open_kg
                from kg_agents.kg.export import write_ntriples

                t0 = time.perf_counter()
                nt_path = write_ntriples(open_kg("metaqa"), Path(tmp.name) / "metaqa.nt.gz").path
                sys.stdout.write(f"exported MetaQA as N-Triples in {time.perf_counter() - t0:.1f}s\n")
            results.append(run_server(store, nt_path, args.sample, args.limit, args.seed))
    tmp.cleanup()
    sys.stdout.write(
        f"\nMetaQA KB (133,582 triples); sample={args.sample} entities (seed {args.seed}), "
        f"1-hop on all, 2-hop on the first {max(1, args.sample // 2)}; limit={args.limit}, direction=both\n\n"
    )
    head = (
        f"{'store':<28} {'load s':>7} {'RSS MB':>8} {'1-hop med ms':>13} {'1-hop p90':>10} "
        f"{'2-hop med ms':>13} {'2-hop p90':>10} {'frontier':>9}"
    )
    sys.stdout.write(head + "\n" + "-" * len(head) + "\n")
    for r in results:
        sys.stdout.write(
            f"{r['store']:<28} {r['load_s']:>7.2f} {r['rss_mb']:>8.0f} {r['hop1_median_ms']:>13.3f} "
            f"{r['hop1_p90_ms']:>10.3f} {r['hop2_median_ms']:>13.3f} {r['hop2_p90_ms']:>10.3f} "
            f"{r['hop2_median_frontier']:>9.0f}\n"
        )


if __name__ == "__main__":
    main()
