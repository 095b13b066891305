"""A Freebase-shaped graph in Virtuoso: bulk-load figures, then sampled questions through the methods.

Steps:

1. Generate the graph (:class:`kg_agents.kg.synthetic.FreebaseLike`, ``--triples`` and ``--seed``; a file
   already in ``--workdir`` is reused) and bulk-load it into a private Virtuoso 7
   (:class:`kg_agents.kg.servers.VirtuosoServer`, ``--buffers``, ``--loaders``). Reported: load seconds,
   the server's RSS (now and its high-water mark, from ``/proc``) and its database's size on disk.
2. Sample questions: relation paths of 1 to 3 hops from sampled topic entities, by random walks on the
   server (a walk that ends on a mediator goes one hop further), plus fixed paths from the planned hubs
   (the actor hub's "who directed the films starring X", through a ``film.performance`` mediator). The
   sampled walks' lengths follow one fixed cycle (``LENGTHS``; a walk of another length is redrawn), so
   every size asks the same mix of 1- to 4-hop walks (the hub topic's own walk aside) and one size's p95
   compares with another's.
   Each question's answers are the ends of its path, executed on the graph by one ``SELECT DISTINCT``
   without a limit (written here, not through the stores' code); a question with no answer other
   than its topic entity is redrawn.
3. Ask them through each method (``--methods``), one fresh process per method so that its client RSS is
   its own. The chat model is an oracle (``OracleChat``: scripted option log-probabilities, no model):
   it ranks the question's own relation chain, its relations and its answers first and everything else
   last, so that the figures are the KG side of each method, with perfect decisions. The hop count is
   given (``hops`` / ``answer_hops``). ``graph_agent`` runs its ranked route along a relation chain;
   ``dualr`` answers with its GNN (``answer_with="gnn"``, no model call; the bundled explorer, its
   checkpoint's layers). ``gcr_trie`` is gcr's KG side: each question's on-demand KG-Trie of L=2 hops
   from its topic with the build's caps (``fanout_limit`` 500 neighbours per entity and hop,
   ``max_paths`` 20,000 paths), tokenised with the embedded model's tokenizer; its row's seconds are
   build seconds, "paths/q" the trie's paths, "truncated" the tries a cap cut, and "found" the questions
   of at most 2 hops whose gold answer ends a path of the trie.

With ``--faults RATE`` the methods' requests (not the sampling's) go through the fault proxy of the tests
(``tests/faultproxy.py``, in its own process): each request, independently, is faulted with probability
RATE (seeded, ``--fault-seed``), a third of them each way: held twice ``--timeout`` (a timeout), answered
HTTP 500, or dropped without an answer. The
questions are then counted by the type of their first error record, and the proxy's counts are shown.

With ``--warmup N`` every method first asks N other sampled questions (drawn with ``--seed`` + 1, the
fixed hub questions left out), untimed and each in its own process, so that the timed questions meet a
server that has been serving rather than one reading its pages for the first time; the warm-up's p50 and
p95 are printed beside it.

Columns: method, questions, found (questions whose answers include a gold answer), verified paths (mean
per question), errors, truncated (questions whose trace reports a fan-out cut), p50 / p95 / max seconds
per question, KG calls per question (the metered ones), HTTP requests per question (the method's
process, its graph's setup included), the client's max RSS (MB; ``ru_maxrss``) after
building the graph and after the questions, and the server's RSS after the method.

Usage::

    PYTHONPATH=. python benchmarks/kg/scale.py --triples 1000000 [--questions 40] [--seed 0]
        [--methods graph_rag,knowledge_navigator,graph_explore,graph_agent,dualr,gcr_trie] [--workdir DIR]
        [--db DIR [--load-only]] [--buffers 100000] [--loaders 1] [--timeout 60] [--faults 0.05]
        [--warmup 20] [--no-constraint] [--mediators] [--json out.json] [--worker-path OTHER_CHECKOUT]

Every method ends, as by default, with its constraint node (the answers narrowed by a value the question
states; :mod:`kg_agents.core.constraint`), which reads the answers' neighbours and, where no value
narrows them, a hop further; ``--no-constraint`` runs every method with ``constraint=False``, what a
workload of chain questions can set, to show that node's share of the cost.

With ``--mediators`` every method reads the graph through :class:`kg_agents.kg.mediators.MediatedKG`, with the
generator's mediator types (``FreebaseLike.mediator_types``) walked through as one step: each question's
path is taken as a path of that view (a hop shorter for each mediator it passes), and each method's
process first reads the view's sample of the mediator types, untimed (its seconds are printed).

With ``--db`` the database is kept: a first run loads (``--load-only`` stops there), a later run with the
same ``--db`` asks the questions on it without loading again, and shows the load figures it saved.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

# the repository root, after PYTHONPATH: a worker's PYTHONPATH may put another checkout's kg_agents first
sys.path.append(str(Path(__file__).resolve().parents[2]))

GRAPH_IRI = "urn:kg-agents:freebase-like"
METHODS = ("graph_rag", "knowledge_navigator", "graph_explore", "graph_agent", "dualr", "gcr_trie")
#: gcr's KG-Trie, built as a question's trie is: L=2 hops from the topic with the build's own caps
TRIE_HOPS = 2
RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
SKIP = {"type.object.type"}
#: The kinds of the fixed questions from the planned hubs, the first of every sample.
HUB_KINDS = ("hub:actor", "hub:director", "hub:country", "hub:topic")
#: The length of the n-th sampled walk (after the hub questions), cycled: a 4-hop walk is a 3-hop one that
#: ended on a mediator and went one hop further. Fixed, so that every size asks the same mix of lengths.
LENGTHS = (1, 2, 3, 1, 2, 3, 1, 2, 3, 4)
#: The most gold labels kept per question for the oracle and the "found" column.
MAX_GOLD = 20_000


# ---------------------------------------------------------------------- the graph on the server
def server_memory(pid: int | None) -> dict[str, float]:
    """``VmRSS`` and ``VmHWM`` (MB) of a process, from ``/proc``."""
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) / 1024
    except (OSError, ValueError):
        pass
    return out


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def chain_query(kg: Any, topic: str, path: list[str], select: str, tail: str = "") -> str:
    """A SELECT over the ends ``?x{n}`` of ``path`` from ``topic`` (terms rendered by the profile)."""
    prev = kg.profile.entity_term(topic)
    parts = []
    for i, rel in enumerate(path, 1):
        r = kg.profile.relation_term(rel.lstrip("~"))
        parts.append(f"?x{i} {r} {prev} ." if rel.startswith("~") else f"{prev} {r} ?x{i} .")
        prev = f"?x{i}"
    end = f"?x{len(path)}"
    where = " ".join(parts) + f" FILTER(isIRI({end}) && {end} != {kg.profile.entity_term(topic)})"
    return f"SELECT {select} WHERE {{ {where} {tail} }}"


def gold(kg: Any, topic: str, path: list[str]) -> tuple[int, list[str]]:
    """The number of the path's distinct ends and the ids and English labels of at most MAX_GOLD."""
    from kg_agents.eval.metrics import normalize_answer

    end = f"?x{len(path)}"
    n = int(kg._select(chain_query(kg, topic, path, f"(COUNT(DISTINCT {end}) AS ?n)"))[0]["n"].value)
    label = f'OPTIONAL {{ {end} <{RDFS_LABEL}> ?l FILTER(langMatches(lang(?l), "en")) }}'
    rows = kg._select(chain_query(kg, topic, path, f"DISTINCT {end} ?l", label) + f" LIMIT {MAX_GOLD}")
    names: set[str] = set()
    for row in rows:
        names.add(normalize_answer(kg.profile.entity_id(row[end[1:]].value)))
        if "l" in row:
            names.add(normalize_answer(row["l"].value))
    return n, sorted(names)


def walk(kg: Any, rng: random.Random, topic: str, hops: int) -> tuple[list[str], bool] | None:
    """A random relation path of ``hops`` hops from ``topic`` (longer while it ends on a mediator, an
    entity without a label), and whether it passes a mediator; None when the walk is stuck."""
    path: list[str] = []
    cur, mediator = topic, False
    while len(path) < hops or kg.label(cur) == cur:
        if len(path) >= 4:
            return None
        options = [(r, d) for d in ("out", "in") for r in kg.relations(cur, d) if r not in SKIP]
        if not options:
            return None
        rel, d = rng.choice(options)
        nbrs = kg.neighbors(cur, rel, d, limit=20)
        if not nbrs:
            return None
        cur = rng.choice(nbrs).other(cur)
        path.append(rel if d == "out" else "~" + rel)
        mediator = mediator or kg.label(cur) == cur  # the walk never ends on one
    return path, mediator


def sample_questions(kg: Any, gen: Any, n: int, seed: int) -> list[dict[str, Any]]:
    """``n`` questions: the fixed hub paths first, then random walks from sampled topics, their lengths
    cycling through ``LENGTHS``."""
    from kg_agents.core.chains import chain_text
    from kg_agents.kg.synthetic import PROBE_PATH

    rng = random.Random(seed)
    fixed: list[tuple[str, str, list[str], bool]] = [  # their kinds: HUB_KINDS
        ("hub:actor", gen.hub("actor").entity, list(PROBE_PATH), True),
        ("hub:director", gen.hub("director").entity, ["~film.film.directed_by", "film.film.genre"], False),
        ("hub:country", gen.hub("country").entity, ["~film.film.country", "film.film.directed_by"], False),
        ("hub:topic", gen.hub("topic").entity, [], False),
    ]
    kinds = ["person", "film", "city", "topic", "topic"]
    out: list[dict[str, Any]] = []
    tries = 0
    while len(out) < n and tries < 50 * n:
        tries += 1
        if len(out) < len(fixed):
            kind, topic, path, mediator = fixed[len(out)]
            if not path:
                got = walk(kg, rng, topic, 2)
                if got is None:
                    continue
                path, mediator = got
        else:
            kind = rng.choice(kinds)
            topic = gen.entity(kind, rng.randrange(2, gen.count(kind)))
            length = LENGTHS[(len(out) - len(fixed)) % len(LENGTHS)]
            got = walk(kg, rng, topic, min(length, 3))
            if got is None or len(got[0]) != length:
                continue
            path, mediator = got
        n_answers, names = gold(kg, topic, path)
        if not n_answers:
            continue
        label = kg.label(topic)
        steps = tuple((r.lstrip("~"), "in" if r.startswith("~") else "out") for r in path)
        out.append(
            {
                "id": f"q{len(out):03d}",
                "kind": kind,
                "topic": topic,
                "path": path,
                "hops": len(path),
                "mediator": mediator,
                "question": f"starting from [{label}], follow: {chain_text(steps)}",
                "answers": n_answers,
                "gold": names,
            }
        )
    return out


# ---------------------------------------------------------------------- one method, in its own process
class Oracle:
    """Scores ranked options from the question's gold: its chain, its relations, its answers."""

    def __init__(self) -> None:
        self.q: dict[str, Any] = {}
        self.gold: set[str] = set()
        self.steps: tuple[tuple[str, str], ...] = ()

    def set(self, q: dict[str, Any]) -> None:
        self.q, self.gold = q, set(q["gold"])
        self.steps = tuple((r.lstrip("~"), "in" if r.startswith("~") else "out") for r in q["path"])

    def __call__(self, text: str, options: list[str]) -> list[float]:
        from kg_agents.core.decide import current_decision
        from kg_agents.eval.metrics import normalize_answer

        if self.q["question"] not in text:  # a calibration prompt (the question taken out): no preference
            return [0.0] * len(options)
        d = current_decision()
        keys: list[Any] = list(d.keys) if d is not None and d.keys is not None else list(options)
        role = d.role if d is not None else None
        if role == "chain":
            right = [tuple(map(tuple, k[1])) == self.steps for k in keys]
        elif role == "relation":
            right = [(k[1], k[2]) in self.steps for k in keys]
        elif role == "answer":
            right = [normalize_answer(str(k)) in self.gold for k in keys]
        elif role == "end":
            hit = any(normalize_answer(str(x)) in self.gold for _, labels in keys for x in labels)
            right = [bool(k[0]) == hit for k in keys]
        else:  # entity pruning and the rest: no preference, the options' own order
            right = [True] * len(options)
        return [0.0 if r else -10.0 for r in right]


def build(method: str, kg: Any, llm: Any) -> Any:
    from kg_agents import create_graph

    if method == "graph_rag":
        return create_graph("graph_rag", kg, llm=llm, max_hops=3)
    if method == "knowledge_navigator":
        return create_graph("knowledge_navigator", kg, llm=llm, num_variants=0)
    if method == "dualr":  # the GNN's answers (DualR w.o. AD): no model call; its bundled explorer
        return create_graph("dualr", kg, answer_with="gnn")
    return create_graph(method, kg, llm=llm)  # graph_agent: its ranked route along a relation chain


def context(method: str, q: dict[str, Any], constraint: bool = True) -> dict[str, Any]:
    off = {} if constraint else {"constraint": False}
    if method == "graph_rag":
        return {"answer_hops": q["hops"], **off}
    if method == "dualr":  # explores its checkpoint's layers
        return off
    return {"hops": q["hops"], **off}


def trie_rows(kg: Any, qs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """gcr's on-demand KG-Trie of each question's topic (L = :data:`TRIE_HOPS`, the build's default
    caps: ``fanout_limit`` neighbours per entity and hop, ``max_paths`` paths), one row per question:
    build seconds (graph reads, tokenisation, tree), paths, whether a cap cut it, KG requests, and
    whether a gold answer ends one of its paths (questions of at most L hops)."""
    from kg_agents.eval.metrics import normalize_answer
    from kg_agents.llm.local_model import load_local_tokenizer
    from kg_agents.methods.gcr.trie import build_trie, tokenizer_signature

    tok = load_local_tokenizer()
    sig = tokenizer_signature(tok)
    rows = []
    for q in qs:
        sent = requests_sent(kg)
        t0 = time.perf_counter()
        try:
            trie = build_trie(kg, [q["topic"]], tok, max_hops=TRIE_HOPS, tokenizer_sig=sig)
        except Exception as exc:  # counted and shown: the run goes on
            rows.append(
                {"id": q["id"], "seconds": time.perf_counter() - t0, "error": f"{type(exc).__name__}: {exc}"}
            )
            continue
        seconds = time.perf_counter() - t0
        gold = set(q["gold"])
        ends = {normalize_answer(t.rsplit(" -> ", 1)[-1]) for t in trie.texts}
        rows.append(
            {
                "id": q["id"],
                "kind": q["kind"],
                "seconds": seconds,
                "found": q["hops"] <= TRIE_HOPS and bool(ends & gold),
                "paths": len(trie),
                "truncated": trie.stats.truncated,
                # which cap cut it: max_paths, the topic's own neighbour list, a list at a later hop
                "path_cap": trie.stats.path_limit_hit,
                "topic_cut": q["topic"] in trie.stats.fanout_truncated,
                "cut_lists": len(trie.stats.fanout_truncated),
                "kg_calls": requests_sent(kg) - sent,
                "error": None,
            }
        )
        del trie
    return rows


def requests_sent(kg: Any) -> int:
    """The HTTP requests sent by ``kg``'s store (through a ``MediatedKG`` view)."""
    return int(getattr(kg, "inner", kg).requests_sent)


def traced_cut(trace: Any) -> bool:
    """True when a trace record reports a fan-out cut (a true or non-empty ``*truncated`` field)."""
    if isinstance(trace, dict):
        return any(
            (k.endswith("truncated") and v not in (False, None, [], {}, 0)) or traced_cut(v)
            for k, v in trace.items()
        )
    if isinstance(trace, list):
        return any(traced_cut(v) for v in trace)
    return False


def oracle_chat(oracle: Oracle) -> Any:
    """A chat model that ranks options by ``oracle`` (``score_options``, as a logprob-capable engine
    does) and answers every free-text call with one fixed thought."""
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    class OracleChat(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "oracle"

        def score_options(self, messages: Any, options: Any) -> list[float]:
            return [float(x) for x in oracle(str(messages[-1].content), list(options))]

        def _generate(
            self, messages: Any, stop: Any = None, run_manager: Any = None, **kw: Any
        ) -> ChatResult:
            reply = AIMessage(content="Thought: I follow the relations of the question.")
            return ChatResult(generations=[ChatGeneration(message=reply)])

    return OracleChat()


def mediated(kg: Any, types: list[str], qs: list[dict[str, Any]]) -> tuple[Any, list[dict[str, Any]], float]:
    """The view of ``kg`` with mediators walked through as one step (its sample of each mediator type read
    now), the questions with their paths as paths of the view, and the seconds the sample took."""
    from kg_agents.kg.mediators import MediatedKG

    t0 = time.perf_counter()
    view = MediatedKG(kg, types, type_relation="type.object.type").learn()
    learn_s = time.perf_counter() - t0
    out = []
    for q in qs:
        path = view.view_path(q["path"])
        assert path is not None, q  # a sampled walk never ends on a mediator
        out.append({**q, "path": path, "hops": len(path)})
    return view, out, learn_s


def worker(
    method: str, qfile: str, endpoint: str, timeout: float, constraint: bool = True, mediators: str = ""
) -> dict[str, Any]:
    from kg_agents.eval.metrics import normalize_answer
    from kg_agents.kg import SparqlKG

    qs = json.loads(Path(qfile).read_text())
    store = kg = SparqlKG(endpoint, profile="freebase", graph=GRAPH_IRI, timeout=timeout)
    learn_s = None
    if mediators:
        kg, qs, learn_s = mediated(store, mediators.split(","), qs)
    if method == "gcr_trie":
        return {**trie_worker(kg, qs), "learn_s": learn_s}
    oracle = Oracle()
    llm = oracle_chat(oracle)
    graph = build(method, kg, llm)
    rss_ready = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = []
    for q in qs:
        oracle.set(q)
        t0 = time.perf_counter()
        try:
            out = graph.invoke(
                {"question": q["question"], "topic_entities": [q["topic"]]},
                context=context(method, q, constraint),
            )
        except Exception as exc:  # counted and shown: the run goes on
            rows.append(
                {
                    "id": q["id"],
                    "seconds": time.perf_counter() - t0,
                    "error": f"{type(exc).__name__}: {exc}",
                    "error_types": [f"raised {type(exc).__name__}"],
                }
            )
            continue
        seconds = time.perf_counter() - t0
        answers = [normalize_answer(str(a)) for a in out.get("answers") or []]
        records = [e for e in out.get("errors") or [] if e.get("type") != "Fallback"]
        errors = [e.get("message", "") for e in records]
        rows.append(
            {
                "id": q["id"],
                "kind": q["kind"],
                "seconds": seconds,
                "found": any(a in oracle.gold for a in answers),
                "paths": len(out.get("paths") or []),
                "truncated": traced_cut(out.get("trace") or []),
                "kg_calls": (out.get("usage") or {}).get("kg_calls", 0),
                "error": "; ".join(errors)[:300] or None,
                "error_types": [str(e.get("type")) for e in records],
            }
        )
    import kg_agents

    return {
        "method": method,
        "kg_agents": str(Path(kg_agents.__file__).parent),
        "rss_ready_mb": rss_ready,
        "rss_max_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "requests": store.requests_sent,
        "learn_s": learn_s,
        "rows": rows,
    }


def trie_worker(kg: Any, qs: list[dict[str, Any]]) -> dict[str, Any]:
    import kg_agents

    rss_ready = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    rows = trie_rows(kg, qs)
    return {
        "method": "gcr_trie",
        "kg_agents": str(Path(kg_agents.__file__).parent),
        "rss_ready_mb": rss_ready,
        "rss_max_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "requests": requests_sent(kg),
        "rows": rows,
    }


def summarise(res: dict[str, Any]) -> dict[str, Any]:
    rows = res["rows"]
    lat = sorted(r["seconds"] for r in rows)
    p = lambda f: lat[min(len(lat) - 1, round(f * (len(lat) - 1)))] if lat else float("nan")  # noqa: E731
    return {
        "method": res["method"],
        "questions": len(rows),
        "found": sum(bool(r.get("found")) for r in rows),
        "hub_found": sum(bool(r.get("found")) for r in rows if str(r.get("kind", "")).startswith("hub")),
        "paths": statistics.mean(r.get("paths", 0) for r in rows) if rows else 0.0,
        "errors": sum(bool(r.get("error")) for r in rows),
        "truncated": sum(bool(r.get("truncated")) for r in rows),
        "p50": p(0.5),
        "p95": p(0.95),
        "max": lat[-1] if lat else float("nan"),
        "kg_calls": statistics.mean(r.get("kg_calls", 0) for r in rows) if rows else 0.0,
        # HTTP requests per question (a batch is one; the graph's setup reads included)
        "requests": res.get("requests", 0) / len(rows) if rows else 0.0,
        "rss_ready_mb": res["rss_ready_mb"],
        "rss_max_mb": res["rss_max_mb"],
        "server_rss_mb": res.get("server_rss_mb"),
        "learn_s": res.get("learn_s"),
        "error_samples": [r["error"] for r in rows if r.get("error")][:3],
        # questions by the type of their first error record ("raised X": the graph raised instead)
        "error_types": dict(Counter(r["error_types"][0] for r in rows if r.get("error_types"))),
        "rows": rows,
        "slowest": [
            (r["id"], r.get("kind"), round(r["seconds"], 2), r.get("kg_calls"))
            for r in sorted(rows, key=lambda r: -r["seconds"])[:3]
        ],
    }


# ---------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    from benchmarks.kg.freebase_like import parse_size

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--triples", type=parse_size, default=1_000_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--workdir", help="where the generated graph is kept (default: a temporary dir)")
    ap.add_argument("--buffers", type=int, default=100_000, help="Virtuoso NumberOfBuffers (8 KiB pages)")
    ap.add_argument("--loaders", type=int, default=1, help="concurrent rdf_loader_run() sessions")
    ap.add_argument("--timeout", type=float, default=60.0, help="SparqlKG timeout per request (s)")
    ap.add_argument(
        "--db",
        help="keep the Virtuoso database in this directory (default: a temporary one); a database "
        "already there is reused without loading, with the load figures it saved (DB/load.json)",
    )
    ap.add_argument("--load-only", action="store_true", help="stop after the load (with --db)")
    ap.add_argument(
        "--faults",
        type=float,
        default=0.0,
        help="the methods' requests go through a fault proxy (tests/faultproxy.py) that faults this share "
        "of them: a timeout (held twice --timeout), an HTTP 500 or a dropped connection, a third each",
    )
    ap.add_argument("--fault-seed", type=int, default=0)
    ap.add_argument(
        "--warmup",
        type=int,
        default=0,
        help="before the timed questions, every method asks this many other sampled questions "
        "(seed + 1, the hub questions left out), untimed, each in its own process: a server that has "
        "been serving, not one whose pages are read for the first time",
    )
    ap.add_argument(
        "--no-constraint",
        action="store_true",
        help="every method runs with constraint=False: no constraint node after its answer (what a "
        "workload of chain questions only can turn off)",
    )
    ap.add_argument(
        "--mediators",
        action="store_true",
        help="every method reads the graph through MediatedKG: the generator's mediator types walked "
        "through as one step, so a question's path through a mediator is a hop shorter",
    )
    ap.add_argument("--mediator-types", default="", help=argparse.SUPPRESS)
    ap.add_argument("--json", help="also write the figures here")
    ap.add_argument(
        "--worker-path",
        help="run the methods with the kg_agents of this checkout (e.g. another branch's), to compare",
    )
    ap.add_argument("--worker", nargs=3, metavar=("METHOD", "QUESTIONS", "ENDPOINT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        method, qfile, endpoint = args.worker
        print(
            json.dumps(
                worker(
                    method,
                    qfile,
                    endpoint,
                    timeout=args.timeout,
                    constraint=not args.no_constraint,
                    mediators=args.mediator_types,
                )
            )
        )
        return 0
    from kg_agents.files import atomic_write
    from kg_agents.kg import SparqlKG
    from kg_agents.kg.servers import VirtuosoServer
    from kg_agents.kg.synthetic import FreebaseLike

    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    gen = FreebaseLike(args.triples, seed=args.seed)
    with tempfile.TemporaryDirectory(prefix="kg-agents-scale-") as tmp:
        work = Path(args.workdir or tmp)
        work.mkdir(parents=True, exist_ok=True)
        nt = work / f"freebase-like-{args.triples}-s{args.seed}.nt.gz"
        t0 = time.perf_counter()
        gen_s: float | None = None  # None: the file was there already
        if not (nt.exists() and Path(str(nt) + ".json").exists()):
            gen.write(nt)
            gen_s = time.perf_counter() - t0
        db = Path(args.db) if args.db else Path(tmp) / "virtuoso"
        saved = db / "load.json"
        reuse = (db / "db").exists() and saved.exists()
        srv = VirtuosoServer(
            {GRAPH_IRI: [nt]}, graph=GRAPH_IRI, directory=db, buffers=args.buffers,
            loaders=args.loaders, load_timeout=7200,
        )  # fmt: skip
        try:
            t0 = time.perf_counter()
            srv.start()
            if reuse:
                load = {**json.loads(saved.read_text()), "reused": True}
                load["restart_s"] = time.perf_counter() - t0
            else:
                load = {
                    "triples": args.triples,
                    "generate_s": gen_s,
                    "load_s": srv.load_seconds,
                    "disk_mb": disk_mb(srv.db_dir),
                    "buffers": args.buffers,
                    "loaders": args.loaders,
                    **{f"server_{k}_mb": v for k, v in server_memory(srv.pid).items()},
                }
                if args.db:
                    atomic_write(saved, json.dumps(load) + "\n")
            print(f"# loaded: {json.dumps(load)}", file=sys.stderr, flush=True)
            load["constraint"] = not args.no_constraint
            load["mediators"] = args.mediators
            if args.load_only:
                return 0
            # the sampling's exact answer counts run without a limit: at least a minute per request
            sample_timeout = max(args.timeout, 60.0)
            kg = SparqlKG(srv.endpoint, profile="freebase", graph=GRAPH_IRI, timeout=sample_timeout)
            t0 = time.perf_counter()
            qs = sample_questions(kg, gen, args.questions, args.seed)
            print(f"# {len(qs)} questions in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
            if args.mediators:
                _, seen, _ = mediated(kg, list(gen.mediator_types), qs)
                load["view_hops"] = dict(sorted(Counter(q["hops"] for q in seen).items()))
            qfile = Path(tmp) / "questions.json"
            qfile.write_text(json.dumps(qs))
            wfile: Path | None = None
            if args.warmup:
                warm = sample_questions(kg, gen, args.warmup + len(HUB_KINDS), args.seed + 1)
                warm = [q for q in warm if q["kind"] not in HUB_KINDS]
                wfile = Path(tmp) / "warmup.json"
                wfile.write_text(json.dumps(warm))
                load["warmup_questions"] = len(warm)
            results = []
            root = str(Path(__file__).resolve().parents[2])
            worker_path = os.pathsep.join([args.worker_path, root] if args.worker_path else [root])
            with ExitStack() as stack:
                endpoint, proxy = srv.endpoint, None
                if args.faults:
                    from tests.faultproxy import FaultProxyProcess

                    proxy = stack.enter_context(FaultProxyProcess(srv.endpoint))
                    rates = dict.fromkeys(("delay", "http500", "close"), args.faults / 3)
                    proxy.set_random(rates, seed=args.fault_seed, delay=2 * args.timeout)
                    endpoint = proxy.endpoint

                def run_worker(method: str, questions: Path, url: str) -> subprocess.CompletedProcess[str]:
                    cmd = [sys.executable, __file__, "--worker", method, str(questions), url]
                    cmd += ["--no-constraint"] if args.no_constraint else []
                    cmd += ["--mediator-types", ",".join(gen.mediator_types)] if args.mediators else []
                    return subprocess.run(
                        [*cmd, "--timeout", str(args.timeout)], capture_output=True, text=True, check=False,
                        env={**os.environ, "PYTHONPATH": worker_path},
                    )  # fmt: skip

                if wfile is not None:
                    for m in methods:  # untimed, on the server itself (no fault proxy)
                        t0 = time.perf_counter()
                        proc = run_worker(m, wfile, srv.endpoint)
                        took = time.perf_counter() - t0
                        brief = f"rc {proc.returncode}"
                        if proc.returncode == 0:
                            w = summarise(json.loads(proc.stdout.strip().splitlines()[-1]))
                            brief = f"{w['questions']} questions, p50 {w['p50']:.2f}s, p95 {w['p95']:.2f}s"
                        print(f"# warm-up {m}: {brief}, {took:.1f}s in all", file=sys.stderr, flush=True)
                for m in methods:
                    proc = run_worker(m, qfile, endpoint)
                    if proc.returncode != 0:
                        print(f"# {m} failed:\n{proc.stderr[-3000:]}", file=sys.stderr)
                        continue
                    res = json.loads(proc.stdout.strip().splitlines()[-1])
                    print(f"# {m}: kg_agents from {res['kg_agents']}", file=sys.stderr)
                    res["server_rss_mb"] = server_memory(srv.pid).get("VmRSS")
                    results.append(summarise(res))
                    if proxy is not None:  # the proxy's counts so far: every method's requests
                        results[-1]["faults"] = proxy.fault_counts()
                    brief = {k: v for k, v in results[-1].items() if k != "rows"}
                    print(f"# {m}: {json.dumps(brief)}", file=sys.stderr, flush=True)
        finally:
            srv.stop()
    print_tables(load, qs, results)
    if args.json:
        Path(args.json).write_text(
            json.dumps({"load": load, "questions": qs, "methods": results}, indent=2) + "\n"
        )
    return 0


def print_tables(load: dict[str, Any], qs: list[dict[str, Any]], results: list[dict[str, Any]]) -> None:
    print(
        f"\n{load['triples']:,} triples: "
        + (f"generated in {load['generate_s']:.1f} s, " if load.get("generate_s") is not None else "")
        + f"Virtuoso bulk load "
        f"{load['load_s']:.1f} s, server RSS {load.get('server_VmRSS_mb', 0):.0f} MB "
        f"(peak {load.get('server_VmHWM_mb', 0):.0f}), database {load['disk_mb']:.0f} MB on disk"
    )
    hubs = sum(q["kind"].startswith("hub") for q in qs)
    med = sum(q["mediator"] for q in qs)
    by_hops = {h: sum(q["hops"] == h for q in qs) for h in sorted({q["hops"] for q in qs})}
    print(
        f"{len(qs)} questions: hops {by_hops}, {hubs} from hubs, {med} through a mediator, "
        f"answers per question median {statistics.median(q['answers'] for q in qs):.0f} "
        f"(max {max(q['answers'] for q in qs):,})"
        + (
            "; every method without its constraint node (--no-constraint)"
            if load.get("constraint") is False
            else ""
        )
        + (
            f"; mediators walked through as one step (--mediators): hops {load['view_hops']} in the view, "
            f"its sample of the mediator types read in {statistics.median(learned):.1f} s a process (median)"
            if load.get("mediators") and (learned := [r["learn_s"] for r in results if r.get("learn_s")])
            else ""
        )
        + "\n"
    )
    head = (
        "method", "questions", "found", "hub found", "paths/q", "errors", "truncated", "p50 s", "p95 s",
        "max s", "KG calls/q", "requests/q", "client RSS MB (ready / max)", "server RSS MB",
    )  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for r in results:
        print(
            f"| {r['method']} | {r['questions']} | {r['found']} | {r['hub_found']} | {r['paths']:.1f} | "
            f"{r['errors']} | {r['truncated']} | {r['p50']:.2f} | {r['p95']:.2f} | {r['max']:.2f} | "
            f"{r['kg_calls']:.0f} | {r.get('requests', 0):.0f} | "
            f"{r['rss_ready_mb']:.0f} / {r['rss_max_mb']:.0f} | {r['server_rss_mb'] or 0:.0f} |"
        )
    for r in results:
        if r["method"] == "gcr_trie":
            rows = [x for x in r["rows"] if not x.get("error")]
            print(
                f"\ngcr_trie: of {len(rows)} tries, {sum(x['truncated'] for x in rows)} cut by a cap: "
                f"{sum(x['path_cap'] for x in rows)} at max_paths, {sum(x['topic_cut'] for x in rows)} "
                f"with the topic's own neighbour list cut; neighbour lists cut per trie median "
                f"{statistics.median(x['cut_lists'] for x in rows) if rows else 0:.0f}"
            )
        if r.get("error_types") or r.get("faults"):
            print(f"\n{r['method']}: questions by error type {r.get('error_types') or {}}", end="")
            print(f"; proxy requests by fault so far {r['faults']}" if r.get("faults") else "")


if __name__ == "__main__":
    sys.exit(main())
