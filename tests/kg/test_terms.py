"""Hostile ids never change a query's meaning: property tests over the term renderer and query builders.

Every id an LLM, a user or a tool argument can produce either cannot be rendered
(:class:`InvalidTermError`, which stores treat as "not in the KG") or becomes exactly one RDF term:
the rendered query parses, has the same algebra as with a benign id (terms masked), and the term in
it is the IRI the profile gives for that id. Against real servers, hostile ids give empty answers or
``EntityNotFound``, never an endpoint error or someone else's data.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rdflib import BNode, Literal, URIRef, Variable
from rdflib.plugins.sparql import prepareQuery
from rdflib.plugins.sparql.parserutils import CompValue

from kg_agents.errors import EntityNotFound, InvalidTermError
from kg_agents.kg import _query as q
from kg_agents.kg.profiles import PROFILES, Profile
from kg_agents.kg.sparql import SparqlKG
from kg_agents.kg.terms import iri, literal
from tests.servers import CONTRACT_GRAPH, CONTRACT_PROFILE, METAQA_GRAPH

HOSTILE = [
    'Tom Hanks"',
    "Tom Hanks'",
    "Tom Hanks>",
    "<http://evil.org/x>",
    "x> } . ?x ?y ?z . { <y",
    "} . ?x ?y ?z",
    '" } UNION { ?s ?p ?o } #',
    "x\n} ; DELETE WHERE { ?s ?p ?o }",
    "INSERT DATA { <a> <b> <c> }",
    "SELECT * WHERE { ?s ?p ?o }",
    "DROP ALL",
    "?s",
    "$x",
    "# comment",
    "\\u003E",
    "\\",
    "%3E%20%7D",
    "http://kg-agents.test/entity/Tom%20Hanks",
    "http://a b",
    "http://x.org/a>b",
    "http://x.org/{a}",
    "A://\x7f",
    "http://x.org/%zz",
    "http://x.org/\x85",
    "http://x.org/東京🎬",
    "http://x.org/a'b(c)*;=&",
    "urn:x:%41",
    "\x00",
    "\t\r\n",
    "Amélie 東京 🎬",
    "\u202e\u200b",
    "\ud800",
    "a\udfffb",
    "x" * 20_000,
    "",
    " ",
]

_any_char = st.characters(exclude_categories=())  # includes lone surrogates
hostile_text = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(_any_char, max_size=60),
    st.builds(
        lambda a, b, c: a + b + c,
        st.text(_any_char, max_size=10),
        st.sampled_from(HOSTILE),
        st.text(_any_char, max_size=10),
    ),
    st.builds(lambda a: "http://x.org/" + a, st.text(_any_char, max_size=30)),
)

PROFILE_LIST = [*PROFILES.values(), CONTRACT_PROFILE]
BENIGN_ENTITY = {p.name: ("http://x.org/benign" if p.entity_ns is None else "benign") for p in PROFILE_LIST}
BENIGN_RELATION = {p.name: ("http://x.org/rel" if p.relation_ns is None else "rel") for p in PROFILE_LIST}


def skeleton(node: Any) -> Any:
    """The algebra with every RDF term masked (variables and structure kept)."""
    if isinstance(node, CompValue):
        return (node.name, tuple((k, skeleton(v)) for k, v in node.items() if not k.startswith("_")))
    if isinstance(node, dict):
        return tuple(sorted((str(k), skeleton(v)) for k, v in node.items()))
    if isinstance(node, (list, tuple)):
        return tuple(skeleton(x) for x in node)
    if isinstance(node, Variable):
        return ("var", str(node))
    if isinstance(node, (URIRef, Literal, BNode)):
        return "TERM"
    if isinstance(node, (set, frozenset)):
        return ("set", len(node))
    return node


def terms_in(node: Any) -> list[Any]:
    """Every RDF term in the algebra."""
    out: list[Any] = []

    def walk(x: Any) -> None:
        if isinstance(x, (URIRef, Literal)):
            out.append(x)
        elif isinstance(x, dict):
            for k, v in x.items():
                if not (isinstance(k, str) and k.startswith("_")):
                    walk(k)
                    walk(v)
        elif isinstance(x, (list, tuple)):
            for v in x:
                walk(v)

    walk(node)
    return out


Builder = Callable[[str, str], str]
#: (name, builder of a query from a rendered entity term and a rendered relation term)
BUILDERS: list[tuple[str, Builder]] = [
    ("neighbors", lambda e, r: q.neighbors_query([e], None, "out", None)),
    ("neighbors-rel-both", lambda e, r: q.neighbors_query([e], r, "both", None)),
    ("neighbors-limit", lambda e, r: q.neighbors_query([e], r, "in", 5)),
    ("neighbors-many", lambda e, r: q.neighbors_query([e, "<http://x.org/other>"], None, "both", 3)),
    ("degree", lambda e, r: q.degree_query(e, r, "both")),
    ("relations", lambda e, r: q.relations_query(e, "both")),
    ("has_triple", lambda e, r: q.has_triple_query(e, r, e)),
    ("has_entity", lambda e, r: q.has_entity_query(e)),
    ("labels", lambda e, r: q.labels_query(e, ["<http://www.w3.org/2000/01/rdf-schema#label>"])),
    ("literals", lambda e, r: q.literals_query(e, 100)),
]


_BENIGN_SKELETONS: dict[tuple[str, str], Any] = {}


def _benign_skeleton(profile: Profile, name: str, build: Builder) -> Any:
    key = (profile.name, name)
    if key not in _BENIGN_SKELETONS:
        b_e = profile.entity_term(BENIGN_ENTITY[profile.name])
        b_r = profile.relation_term(BENIGN_RELATION[profile.name])
        _BENIGN_SKELETONS[key] = skeleton(prepareQuery(build(b_e, b_r)).algebra)
    return _BENIGN_SKELETONS[key]


def _check_same_meaning(profile: Profile, ent: str, rel: str) -> None:
    try:
        e_term = profile.entity_term(ent)
    except InvalidTermError:
        e_term = None
    try:
        r_term = profile.relation_term(rel)
    except InvalidTermError:
        r_term = None
    b_e = profile.entity_term(BENIGN_ENTITY[profile.name])
    b_r = profile.relation_term(BENIGN_RELATION[profile.name])
    for name, build in BUILDERS:
        et, rt = e_term or b_e, r_term or b_r
        hostile_q = build(et, rt)
        assert q.query_form(hostile_q) in ("SELECT", "ASK")
        parsed = prepareQuery(hostile_q)  # parses
        assert skeleton(parsed.algebra) == _benign_skeleton(profile, name, build), (name, hostile_q)
        found = {str(t) for t in terms_in(parsed.algebra) if isinstance(t, URIRef)}
        if e_term is not None:
            assert profile.entity_iri(ent) in found, name
        if (
            r_term is not None
            and rt in hostile_q
            and name in ("neighbors-rel-both", "neighbors-limit", "degree", "has_triple")
        ):
            assert profile.relation_iri(rel) in found, name
    if e_term is not None:
        # the id survives the round trip through its IRI
        assert profile.entity_id(profile.entity_iri(ent)) == ent or "://" in ent


@pytest.mark.parametrize("profile", [PROFILES["generic"], PROFILES["metaqa"]], ids=lambda p: p.name)
@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_examples_keep_query_meaning(profile: Profile, text: str) -> None:
    _check_same_meaning(profile, text, text)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ent=hostile_text, rel=hostile_text, which=st.sampled_from(PROFILE_LIST))
def test_any_text_keeps_query_meaning(ent: str, rel: str, which: Profile) -> None:
    _check_same_meaning(which, ent, rel)


@settings(max_examples=200, deadline=None)
@given(text=hostile_text)
def test_literal_is_one_term(text: str) -> None:
    """A rendered literal matches exactly the stored literal with that text (Oxigraph's parser)."""
    import pyoxigraph as ox

    try:
        lit = literal(text)
    except InvalidTermError:
        with pytest.raises(UnicodeEncodeError):
            text.encode("utf-8")
        return
    store = ox.Store()
    a, p = ox.NamedNode("http://x.org/a"), ox.NamedNode("http://x.org/p")
    store.add(ox.Quad(a, p, ox.Literal(text)))
    store.add(ox.Quad(ox.NamedNode("http://x.org/b"), p, ox.Literal(text + "x")))
    rows = list(store.query(f"SELECT ?s ?o WHERE {{ ?s ?p {lit} . ?s ?p ?o }}"))
    assert [(r["s"], r["o"].value) for r in rows] == [(a, text)]
    if "\\u" in text.lower():
        # rdflib 7's parser expands \u escapes before tokenizing, even after an escaped backslash,
        # and fails on e.g. "\\u003E"; Oxigraph and Virtuoso read it as the spec says.
        return
    parsed = prepareQuery(f"ASK {{ ?s ?p {lit} }}")
    (bgp_lit,) = [t for t in terms_in(parsed.algebra) if isinstance(t, Literal)]
    assert str(bgp_lit) == text
    assert skeleton(parsed.algebra) == skeleton(prepareQuery('ASK { ?s ?p "x" }').algebra)


@settings(max_examples=200, deadline=None)
@given(text=hostile_text)
def test_iri_is_valid_or_refused(text: str) -> None:
    try:
        rendered = iri(text)
    except InvalidTermError:
        return
    parsed = prepareQuery(f"ASK {{ {rendered} ?p ?o }}")
    (term,) = [t for t in terms_in(parsed.algebra) if isinstance(t, URIRef)]
    assert str(term) == text


def test_lone_surrogates_and_control_chars_are_refused() -> None:
    for bad in ("\ud800", "a\udfffb"):
        with pytest.raises(InvalidTermError):
            literal(bad)
        for p in PROFILE_LIST:
            with pytest.raises(InvalidTermError):
                p.entity_term(bad)
    for bad in ("http://a b", "http://x/<", 'http://x/"', "http://x/\n", "no-scheme", ""):
        with pytest.raises(InvalidTermError):
            iri(bad)


def test_read_only_check() -> None:
    assert q.check_read_only("PREFIX a: <http://a/> SELECT * WHERE { ?s ?p ?o }")
    assert q.check_read_only("ASK { ?s ?p ?o }")
    for bad in (
        "INSERT DATA { <a> <b> <c> }",
        "DELETE WHERE { ?s ?p ?o }",
        "LOAD <http://x>",
        "CLEAR ALL",
        "WITH <g> DELETE { ?s ?p ?o } WHERE { ?s ?p ?o }",
        "DESCRIBE <x>",
        "",
    ):
        with pytest.raises(Exception, match="read-only"):
            q.check_read_only(bad)


# ---------------------------------------------------------------------------- against real servers
def _assert_not_in_kg(kg: SparqlKG, text: str) -> None:
    assert kg.neighbors(text, direction="both") == []
    assert kg.neighbors(text, relation=text, direction="both", limit=3) == []
    got = kg.neighbors_many([text, "Tom Hanks"], direction="in", limit=2)
    assert got[text] == [] and len(got["Tom Hanks"]) == 2  # the benign entity is unaffected
    assert kg.degree(text, direction="both") == 0
    assert kg.relations(text, direction="both") == []
    assert not kg.has_entity(text)
    assert not kg.has_triple(text, "starred_actors", "Tom Hanks")
    assert not kg.has_triple("Splash", text, "Tom Hanks")
    with pytest.raises(EntityNotFound):
        kg.label(text)
    with pytest.raises(EntityNotFound):
        kg.features(text)


@pytest.mark.server
@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_names_on_real_servers(sparql_server: Any, text: str) -> None:
    kg = SparqlKG(sparql_server.endpoint, profile=CONTRACT_PROFILE, graph=CONTRACT_GRAPH, cache_size=0)
    _assert_not_in_kg(kg, text)
    generic = SparqlKG(sparql_server.endpoint, graph=CONTRACT_GRAPH, cache_size=0)
    if text == "http://kg-agents.test/entity/Tom%20Hanks":  # a real IRI of the data: its own edges only
        assert {t.tail for t in generic.neighbors(text, direction="both")} == {text}
        assert generic.label(text) == "Tom Hanks"
        return
    assert generic.neighbors(text, direction="both") == []
    with pytest.raises(EntityNotFound):
        generic.label(text)


@pytest.mark.server
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=hostile_text)
def test_any_text_on_real_servers(sparql_server: Any, text: str) -> None:
    kg = SparqlKG(sparql_server.endpoint, profile="metaqa", graph=METAQA_GRAPH, cache_size=0)
    from kg_agents.kg import open_kg

    if open_kg("metaqa").has_entity(text):  # a real MetaQA name: must answer the same
        assert kg.has_entity(text)
        return
    _assert_not_in_kg(kg, text)
    generic = SparqlKG(sparql_server.endpoint, graph=METAQA_GRAPH, cache_size=0)
    assert generic.neighbors(text, direction="both", limit=5) == []
    with pytest.raises(EntityNotFound):
        generic.label(text)
