"""Hostile input at volume: entity names, relation names and questions through every store.

Every input (a fixed corpus of SPARQL-injection shapes, then hypothesis-generated text: the strategies of
``tests/kg/test_terms.py``) goes through the KG API of each store holding the conformance data
(``kg_agents.kg.testing.CONTRACT_TRIPLES``): ``MemoryKG``, ``RdfKG`` (rdflib over Oxigraph, in process), a
real Oxigraph server and, when ``virtuoso-t`` is installed, a real Virtuoso 7 server. Each name is used as
an entity (neighbours, batched neighbours, degree, relations, has_entity, has_triple, label, features) and
as a relation (neighbours along it, has_triple); each question runs through ``graph_rag`` (a scripted
ranking model; the KG work is real) with itself as the topic entity.

Counted, per store:

- **algebra changed**: a query whose text, with the hostile input's rendered term masked, is none of the
  shapes the same call sends for a benign name (one that renders, and one the renderer refuses), or whose
  rendered term rdflib's parser does not read as that one IRI (each distinct term parsed once);
- **non-SELECT/ASK**: a query whose form is neither (every query the store sends is captured);
- **untyped crashes**: an exception that is not a ``KGAgentsError`` (``EntityNotFound``,
  ``InvalidTermError``, ... are the typed answers to a name that is not in the KG);
- **differs from MemoryKG**: an answer unlike the in-memory store's for the same call (information).

Run from the repository root (about 15 minutes on 2 CPU cores with the defaults):

    PYTHONPATH=. python -m tests.stress.fuzz_sparql --names 10000 --questions 1000
"""

from __future__ import annotations

import argparse
import math
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kg_agents.errors import InvalidTermError, KGAgentsError
from kg_agents.kg import MemoryKG
from kg_agents.kg import _query as q
from kg_agents.kg.testing import CONTRACT_TRIPLES, write_contract_ntriples
from tests.kg.test_terms import HOSTILE, hostile_text
from tests.servers import CONTRACT_GRAPH, CONTRACT_PROFILE

#: Known SPARQL-injection shapes, on top of the term tests' corpus.
SHAPES = [
    'Splash" } UNION { ?s ?p ?o } #',
    "Splash> } UNION { ?s ?p ?o } #",
    "Splash> . ?s ?p ?o . <x",
    'x" . } ; INSERT DATA { <a> <b> <c> } #',
    "x> } } ; DROP ALL ; SELECT * { <x",
    "x\\> } #",
    "x%3E%20%7D%20UNION%20%7B%20%3Fs%20%3Fp%20%3Fo%20%7D",
    '"""x""" ^^<http://www.w3.org/2001/XMLSchema#string>',
    "x'''} UNION {?s ?p ?o}'''",
    "_:b0",
    "[]",
    "()",
    "a",
    "<>",
    "?e",
    "$e",
    "FILTER(true)",
    "} LIMIT 1000000 #",
    "x\u0000y",
    "x\\u003e } UNION { ?s ?p ?o } #",
    "SERVICE <http://evil.org/sparql> { ?s ?p ?o }",
    "LOAD <http://evil.org/data.ttl>",
    "CLEAR DEFAULT",
    "DELETE WHERE { ?s ?p ?o }",
    "~directed_by",
    "~~starred_actors",
    "directed_by> } UNION { ?s ?p ?o } #",
    "http://kg-agents.test/relation/directed_by",
    "http://kg-agents.test/entity/Splash> } UNION { ?s ?p ?o } #",
]

E, R, T = "Splash", "directed_by", "Ron Howard"
#: Benign inputs per role: one that renders, one the renderer refuses, one in the KG.
BENIGN = {"entity": ("zz benign name", "a\udfffb", E), "relation": ("zz benign name", "a\udfffb", R)}
#: A SPARQL IRIREF token: what every rendered term must be (a term with anything else is not one token).
IRIREF = re.compile(r'<[^<>"{}|^`\\\x00-\x20]*>')

Call = Callable[[Any, str], Any]
CALLS: list[tuple[str, str, Call]] = [  # (name, role of the input, call)
    ("neighbors", "entity", lambda kg, s: kg.neighbors(s, direction="both", limit=5)),
    ("neighbors_many", "entity", lambda kg, s: kg.neighbors_many([s, E], direction="in", limit=2)),
    ("degree", "entity", lambda kg, s: kg.degree(s, direction="both")),
    ("relations", "entity", lambda kg, s: kg.relations(s, direction="both")),
    ("has_entity", "entity", lambda kg, s: kg.has_entity(s)),
    ("has_triple_head", "entity", lambda kg, s: kg.has_triple(s, R, T)),
    ("label", "entity", lambda kg, s: kg.label(s)),
    ("features", "entity", lambda kg, s: kg.features(s)),
    ("neighbors_rel", "relation", lambda kg, s: kg.neighbors(E, relation=s, direction="both", limit=5)),
    ("has_triple_rel", "relation", lambda kg, s: kg.has_triple(E, s, T)),
]


def hostile_inputs(n: int, seed: int) -> list[str]:
    """The corpus (term tests' ``HOSTILE`` and :data:`SHAPES`), then hypothesis examples, ``n`` in all."""
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    corpus = list(dict.fromkeys([*HOSTILE, *SHAPES]))
    out: list[str] = []
    need = max(0, n - len(corpus))

    @hseed(seed)
    @settings(
        max_examples=need or 1,
        database=None,
        phases=[Phase.generate],
        deadline=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(hostile_text)
    def collect(text: str) -> None:
        out.append(text)

    if need:
        collect()
    return (corpus + out)[:n] if n >= len(corpus) else corpus[:n]


# --------------------------------------------------------------------------- query capture and checks
class Capture:
    """Every query a SPARQL-backed store sends (its ``_request`` or ``_run`` wrapped)."""

    def __init__(self, kg: Any) -> None:
        self.queries: list[str] = []
        name = "_request" if hasattr(kg, "_request") else "_run" if hasattr(kg, "_run") else None
        if name is not None:
            inner = getattr(kg, name)

            def wrapped(query: str, _inner: Any = inner) -> Any:
                self.queries.append(query)
                return _inner(query)

            setattr(kg, name, wrapped)

    def take(self) -> list[str]:
        out, self.queries = self.queries, []
        return out


def rendered(s: str, role: str) -> str | None:
    try:
        return CONTRACT_PROFILE.entity_term(s) if role == "entity" else CONTRACT_PROFILE.relation_term(s)
    except InvalidTermError:
        return None


def masked(query: str) -> str:
    """The query's shape: every IRI token masked (an input that escaped its term changes what is left)."""
    return IRIREF.sub("<TERM>", query)


_TERM_OK: dict[str, bool] = {}


def term_is_one_iri(term: str) -> bool:
    """rdflib's parser reads ``term`` as exactly one IRI with the same algebra as a benign one."""
    if term not in _TERM_OK:
        from rdflib import URIRef
        from rdflib.plugins.sparql import prepareQuery

        from tests.kg.test_terms import skeleton, terms_in

        benign = skeleton(prepareQuery("ASK { VALUES ?x { <http://x.org/benign> } }").algebra)
        text = f"ASK {{ VALUES ?x {{ {term} }} }}"
        try:
            parsed = prepareQuery(text)
            found = [t for t in terms_in(parsed.algebra) if isinstance(t, URIRef)]
            _TERM_OK[term] = skeleton(parsed.algebra) == benign and len(found) == 1
        except Exception:
            if "\\u" not in term.lower():
                _TERM_OK[term] = False
            else:  # rdflib expands \u escapes before tokenizing: Oxigraph's parser reads it as servers do
                import pyoxigraph as ox

                try:
                    ox.Store().query(text)
                    _TERM_OK[term] = True
                except (SyntaxError, ValueError):
                    _TERM_OK[term] = False
    return _TERM_OK[term]


def normalise(value: Any) -> Any:
    """A call's answer in a form comparable across stores."""
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and value and hasattr(value[0], "head"):
        return sorted((t.head, t.relation, t.tail) for t in value)
    if isinstance(value, (list, tuple)):
        return sorted(map(str, value))
    return value


# --------------------------------------------------------------------------- stores
def open_stores(which: list[str], tmp: Path) -> tuple[dict[str, Any], list[Any]]:
    from kg_agents.kg.rdf import RdfKG
    from kg_agents.kg.sparql import SparqlKG

    nt = write_contract_ntriples(tmp / "contract.nt")
    stores: dict[str, Any] = {}
    servers: list[Any] = []
    for name in which:
        if name == "memory":
            stores[name] = MemoryKG(CONTRACT_TRIPLES)
        elif name == "rdf":
            stores[name] = RdfKG.from_file(nt, profile=CONTRACT_PROFILE, cache_size=0)
        elif name in ("oxigraph", "virtuoso"):
            from kg_agents.kg.servers import OxigraphServer, VirtuosoServer

            if name == "virtuoso" and not shutil.which("virtuoso-t"):
                print("# virtuoso-t is not installed (scripts/install_virtuoso.sh): skipped", file=sys.stderr)
                continue
            cls = OxigraphServer if name == "oxigraph" else VirtuosoServer
            srv = cls({CONTRACT_GRAPH: [nt]}, directory=tmp / name).start()
            servers.append(srv)
            stores[name] = SparqlKG(
                srv.endpoint, profile=CONTRACT_PROFILE, graph=CONTRACT_GRAPH, cache_size=0
            )
    return stores, servers


def question_graph(kg: Any) -> Any:
    from kg_agents.core.registry import create_graph
    from tests.fakes import FakeChat

    llm = FakeChat(logprobs=lambda text, options: [-float(len(o)) for o in options], default="Answer: x")
    return create_graph("graph_rag", kg, llm=llm)


# --------------------------------------------------------------------------- the run
def fuzz_store(name: str, kg: Any, names: list[str], questions: list[str], reference: Any) -> dict[str, Any]:
    cap = Capture(kg)
    stats: Counter[str] = Counter()
    examples: dict[str, list[str]] = {}

    def note(kind: str, text: str) -> None:
        stats[kind] += 1
        if len(examples.setdefault(kind, [])) < 3:
            examples[kind].append(text[:200])

    def run(call: Call, kg_: Any, s: str) -> tuple[str, Any]:
        try:
            return "ok", normalise(call(kg_, s))
        except KGAgentsError as exc:
            return "typed", type(exc).__name__
        except Exception as exc:  # the thing counted
            return "crash", f"{type(exc).__name__}: {exc}"

    # the shapes each call sends for benign names
    shapes: dict[str, set[str]] = {}
    for cname, role, call in CALLS:
        shapes[cname] = set()
        for b in BENIGN[role]:
            run(call, kg, b)
            shapes[cname] |= {masked(x) for x in cap.take()}
    graph = question_graph(kg)
    shapes["graph_rag"] = set()
    for b in BENIGN["entity"]:
        graph.invoke({"question": f"who directed [{b}]", "topic_entities": [b]})
        shapes["graph_rag"] |= {masked(x) for x in cap.take()}

    def check(queries: list[str], s: str, role: str, cname: str) -> None:
        term = rendered(s, role)
        for x in queries:
            stats["queries"] += 1
            if q.query_form(x) not in ("SELECT", "ASK"):
                note("non_select_ask", x)
            one_term = term is None or term not in x or term_is_one_iri(term)
            if masked(x) not in shapes[cname] or not one_term:
                note("algebra_changed", f"{s!r}: {x}")

    t0 = time.perf_counter()
    for s in names:
        for cname, role, call in CALLS:
            stats["calls"] += 1
            status, value = run(call, kg, s)
            check(cap.take(), s, role, cname)
            if status == "crash":
                note("untyped_crash", f"{cname}({s!r}): {value}")
            if reference is not None:
                ref = run(call, reference, s)
                if (status, value) != ref and not (status == "typed" and ref[0] == "typed"):
                    note("differs_from_memory", f"{cname}({s!r}): {value!r} vs {ref[1]!r}")
    for s in questions:
        stats["questions"] += 1
        try:
            out = graph.invoke({"question": s, "topic_entities": [s]})
            for err in out.get("errors") or []:
                stats[f"error:{err.get('type')}"] += 1
        except KGAgentsError as exc:
            stats[f"raised:{type(exc).__name__}"] += 1
        except Exception as exc:
            note("untyped_crash", f"graph_rag({s!r}): {type(exc).__name__}: {exc}")
        check(cap.take(), s, "entity", "graph_rag")
    stats["seconds"] = math.ceil(time.perf_counter() - t0)
    return {"store": name, "stats": stats, "examples": examples}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--names", type=int, default=10_000, help="hostile names (each as entity and relation)")
    ap.add_argument("--questions", type=int, default=1_000, help="hostile questions through graph_rag")
    ap.add_argument("--stores", nargs="*", default=["memory", "rdf", "oxigraph", "virtuoso"])
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    inputs = hostile_inputs(max(args.names, args.questions), args.seed)
    names, questions = inputs[: args.names], inputs[: args.questions]
    print(f"# {len(names)} names ({len(set(names))} distinct), {len(questions)} questions", file=sys.stderr)
    with tempfile.TemporaryDirectory() as tmp:
        stores, servers = open_stores(args.stores, Path(tmp))
        try:
            reference = MemoryKG(CONTRACT_TRIPLES)
            results = []
            for name, kg in stores.items():
                res = fuzz_store(name, kg, names, questions, None if name == "memory" else reference)
                print(f"# {name}: {dict(res['stats'])}", file=sys.stderr, flush=True)
                results.append(res)
        finally:
            for srv in servers:
                srv.stop()
    print(
        "| store | names | questions | KG calls | queries sent | algebra changed | non-SELECT/ASK "
        "| untyped crashes | differs from MemoryKG | seconds |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for res in results:
        st = res["stats"]
        sparql = res["store"] != "memory"
        queries, changed, forms = (
            (str(st["queries"]), str(st["algebra_changed"]), str(st["non_select_ask"]))
            if sparql
            else ("–",) * 3
        )
        print(
            f"| {res['store']} | {len(names)} | {st['questions']} | {st['calls']} | {queries} "
            f"| {changed} | {forms} | {st['untyped_crash']} "
            f"| {st['differs_from_memory'] if sparql else '–'} | {st['seconds']} |"
        )
    for res in results:
        for kind, ex in res["examples"].items():
            for e in ex:
                print(f"- {res['store']} {kind}: {e}")


if __name__ == "__main__":
    main()
