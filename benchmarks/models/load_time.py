"""Seconds to load the embedded model in each dtype: on a fresh cache (the first run after a clone) and
from the cache, each in a fresh process.

Each measurement is one new Python process with its own ``$KG_AGENTS_CACHE``: it imports torch and
transformers (the Llama classes included) first, untimed, then times ``load_local_model(dtype=...)`` and
reports what that call wrote to stdout and stderr. ``fresh`` starts from an empty cache (after ``make setup``,
which runs ``kg-agents prepare``, a clone starts from a prepared one); ``cached`` repeats the load with the
cache the fresh run left. Runs the ``kg_agents`` on ``PYTHONPATH``, so two checkouts compare:

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/models/load_time.py
    HF_HUB_OFFLINE=1 PYTHONPATH=../other-checkout python benchmarks/models/load_time.py

Prints a markdown table: dtype, fresh and cached seconds (median of ``--repeats`` cached loads), and the
characters printed during each load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PROBE = """
import contextlib, io, json, sys, time
import torch, transformers
from transformers.models.llama import modeling_llama  # noqa: F401  (imported, untimed)
from kg_agents.llm.local_model import load_local_model
out, err = io.StringIO(), io.StringIO()
with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
    t0 = time.perf_counter()
    load_local_model(dtype=sys.argv[1])
    seconds = time.perf_counter() - t0
print(json.dumps({"seconds": seconds, "printed": len(out.getvalue()) + len(err.getvalue())}))
"""


def probe(dtype: str, cache: str) -> dict:
    env = {**os.environ, "KG_AGENTS_CACHE": cache, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, dtype], env=env, capture_output=True, text=True, check=True, cwd=cache
    )  # run elsewhere than here: ``-c`` puts the working directory first on the path, before PYTHONPATH
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16", "int8"])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    print("| dtype | fresh cache, s | printed | from the cache, s | printed |")
    print("|---|---|---|---|---|")
    for dtype in args.dtypes:
        with tempfile.TemporaryDirectory(prefix="load-time-") as cache:
            fresh = probe(dtype, cache)
            cached = [probe(dtype, cache) for _ in range(args.repeats)]
        secs = statistics.median(c["seconds"] for c in cached)
        printed = max(c["printed"] for c in cached)
        print(
            f"| {dtype} | {fresh['seconds']:.2f} | {fresh['printed']} chars | {secs:.2f} | {printed} chars |",
            flush=True,
        )


if __name__ == "__main__":
    main()
