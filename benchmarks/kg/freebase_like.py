"""Write a Freebase-shaped synthetic graph of N triples as gzipped N-Triples (kg_agents.kg.synthetic).

Seeded and streaming: memory stays flat whatever the size (about 50 MB of RSS). Beside the file,
``OUT.json`` holds what was written (entities, mediators, relations, labels, literals, each planned hub
with its degree, the most common types). Ids are Freebase's: load the file into a server and open it
with ``profile="freebase"``.

Usage::

    PYTHONPATH=. python benchmarks/kg/freebase_like.py --triples 1000000 --out fb-1m.nt.gz [--seed 0]
    PYTHONPATH=. python benchmarks/kg/freebase_like.py --triples 10M --out fb-10m.nt.gz
"""

from __future__ import annotations

import argparse
import resource
import sys
import time


def parse_size(text: str) -> int:
    """``1000000``, ``1M``, ``50m``, ``500k`` or ``2.5M`` as an integer triple count."""
    t = text.strip().lower().replace("_", "").replace(",", "")
    mult = {"k": 1_000, "m": 1_000_000, "g": 1_000_000_000}.get(t[-1:], 1)
    number = t[:-1] if mult > 1 else t
    try:
        return int(float(number) * mult)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a triple count: {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--triples", type=parse_size, required=True, help="how many triples (1000000, 10M, 50M)")
    ap.add_argument("--out", required=True, help="the output file (.nt.gz or .nt)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--hub-cap", type=int, default=1_000_000, help="the most edges a planned hub gets")
    args = ap.parse_args(argv)
    from kg_agents.errors import ConfigError
    from kg_agents.kg.synthetic import write_freebase_like

    t0 = time.perf_counter()
    try:
        stats = write_freebase_like(args.out, args.triples, seed=args.seed, hub_cap=args.hub_cap)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    seconds = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"{stats.path}: {stats.triples:,} triples in {seconds:.1f} s (max RSS {rss:.0f} MB)")
    print(
        f"entities {stats.entities:,}  mediators {stats.mediators:,}  relations {stats.relations:,}  "
        f"labels {stats.labels:,}  literals {stats.literals:,}"
    )
    for h in stats.hubs:
        label, degree = f"{h['label']!s:<13}", f"{h['degree']:>9,}"
        print(f"hub {h['role']:<9} {h['entity']}  {label} degree {degree}  ({h['relation']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
