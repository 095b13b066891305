"""The vLLM decoder's two routes on small KG-Tries: exact scoring of every path vs the trie beam search.

For a few MetaQA dev-train questions whose tries hold 6 to 64 paths, seconds per question of
``VLLMConstrainedDecoder.generate`` (no hypothesis answers) with ``route="exact"`` and ``route="beam"`` for
K = 3 and 10, and the best score each found (exact scoring finds the true best; beam search can prune it).
The crossover sets the default ``score_limit``. Starts its own vLLM CPU server (``VLLMServer``).

Usage:
    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/gcr/vllm_routes.py
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from kg_agents.core.prompts import load_prompt
from kg_agents.eval.datasets import load_metaqa
from kg_agents.kg import open_kg
from kg_agents.llm.vllm_server import VLLMServer
from kg_agents.methods.gcr.trie import build_trie
from kg_agents.methods.gcr.vllm_decoder import VLLMConstrainedDecoder, load_default_tokenizer

# (hops of the question, question id in the seeded dev-train split, L of its trie)
CASES = [
    (1, "metaqa-1hop-6936", 1),
    (1, "metaqa-1hop-6735", 1),
    (2, "metaqa-2hop-6953", 2),
    (2, "metaqa-2hop-2594", 2),
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--beams", type=int, nargs="+", default=[3, 10])
    args = ap.parse_args(argv)
    print(f"load average at start: {os.getloadavg()}")
    tok = load_default_tokenizer()
    kg = open_kg("metaqa")
    template = load_prompt("gcr", "decode_zero_shot")
    cases = []
    for hops, qid, L in CASES:
        q = next(x for x in load_metaqa(hops, "train", seed=0, limit=20) if x.id == qid)
        msgs = template.format_messages(question=q.question, entities="\n".join(q.topic_entities or []))
        cases.append((qid, msgs, build_trie(kg, q.topic_entities or [], tok, max_hops=L)))
    with VLLMServer(startup_timeout=400) as server:
        dec = VLLMConstrainedDecoder(server.base_url, tokenizer=tok)
        for _, msgs, trie in cases:  # warm-up
            dec.generate(msgs, trie, 2, route="beam", answer=False)
        print(
            f"{'question':>18} {'paths':>6} {'K':>3} {'exact s':>8} {'beam s':>7} {'exact best':>11} "
            f"{'beam best':>10}"
        )
        for qid, msgs, trie in cases:
            for k in args.beams:
                row = {}
                for route in ("exact", "beam"):
                    t0 = time.perf_counter()
                    out = dec.generate(msgs, trie, k, route=route, answer=False)
                    row[route] = (time.perf_counter() - t0, out[0].score)
                print(
                    f"{qid:>18} {len(trie):>6} {k:>3} {row['exact'][0]:8.2f} {row['beam'][0]:7.2f} "
                    f"{row['exact'][1]:11.3f} {row['beam'][1]:10.3f}"
                )
        dec.close()
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
