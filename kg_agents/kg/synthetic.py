"""A Freebase-shaped synthetic knowledge graph, streamed to (gzipped) N-Triples: :class:`FreebaseLike`.

For measuring stores and methods at a size no bundled graph has. The graph has the traits of Freebase
that make a store's work hard, at any size given as a triple count:

- typed entities (``type.object.type``) under ``http://rdf.freebase.com/ns/`` with mids such as
  ``m.0k3x9q2bd`` (ids of the ``freebase`` profile);
- a film core (films, people, places) and a long tail of generated domains, with thousands of
  relations named like Freebase's (``domain.type.property``: ``film.film.directed_by``,
  ``aviation.edition.successor``);
- mediator (CVT-like) nodes without labels: ``film.performance`` between a film and an actor,
  ``people.marriage``, and mediated relations of the long tail;
- a power-law degree distribution, with hubs (an actor, a country, a director, a long-tail topic) whose
  degree is a fixed share of the graph, capped at ``hub_cap`` (about 1e5 edges at 1M triples, 1e6 from
  40M); type nodes (``film.performance``, ``people.person``) are hubs too;
- ``rdfs:label`` with language tags (English for every named entity, French, German or Spanish for some,
  a few with quotes and accents) and literals: dates (``xsd:date``), integers and decimals.

Everything comes from one seeded random stream, so a seed gives the same file byte for byte, and no
per-entity state is kept: memory is constant in the triple count. References pick entities by index
(mids are a bijection of the index), so every entity referenced is also typed and, unless a mediator,
labelled.

Example:
    >>> gen = FreebaseLike(2000, seed=1)
    >>> lines = list(gen.lines())
    >>> len(lines), lines[0].endswith(" .")
    (2000, True)
    >>> gen.hub("actor").role, gen.hub("actor").relation
    ('actor', '~film.performance.actor')
"""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import random
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from itertools import chain, islice
from pathlib import Path as FsPath

from kg_agents.errors import ConfigError
from kg_agents.files import atomic_target, atomic_write
from kg_agents.kg.profiles import FREEBASE_NS, RDFS_LABEL
from kg_agents.kg.terms import literal

__all__ = ["MEDIATOR_TYPES", "PROBE_PATH", "FreebaseLike", "Hub", "SyntheticStats", "write_freebase_like"]

_XSD = "http://www.w3.org/2001/XMLSchema#"
_LABEL = f"<{RDFS_LABEL}>"
_TYPE = f"<{FREEBASE_NS}type.object.type>"
#: The mid alphabet of Freebase (digits and consonants).
_MID_ALPHABET = "0123456789bcdfghjklmnpqrstvwxyz_"
_MID_MULT = 0x9E3779B1  # odd: multiplying by it is a bijection modulo 2**40

#: The film core's mediator types.
MEDIATOR_TYPES = ("film.performance", "people.marriage")
#: "Who directed the films starring X": from an actor, through a performance, to the film's director.
PROBE_PATH = ("~film.performance.actor", "film.performance.film", "film.film.directed_by")

_GENRES = (
    "Drama", "Comedy", "Thriller", "Documentary", "Romance", "Action", "Horror", "Crime", "Science Fiction",
    "Adventure", "Animation", "Family", "Fantasy", "Mystery", "War", "Western", "Musical", "Biography",
    "History", "Sport", "Short", "Film noir", "Silent", "Teen", "Disaster", "Martial arts", "Satire",
    "Road movie", "Heist", "Coming of age",
)  # fmt: skip
_SYL = (
    "ka", "lo", "mi", "ra", "ten", "vor", "an", "el", "is", "do", "mar", "ne", "sil", "ber", "qui", "zan",
    "ul", "tra", "fen", "gor", "hel", "ja", "ko", "li", "mon", "nor", "ox", "pre", "ros", "sa", "ti", "wen",
)  # fmt: skip
_WORDS = (
    "River", "Night", "Silent", "Last", "Golden", "House", "Storm", "Garden", "Winter", "Road", "Empire",
    "Secret", "Shadow", "Island", "Letter", "Fire", "Glass", "Stone", "Summer", "Lost", "City", "Dream",
    "Iron", "Blue", "Wolf", "Harbor", "Crown", "Echo", "Mirror", "North",
)  # fmt: skip
_DOMAINS = (
    "aviation", "architecture", "astronomy", "automotive", "award", "baseball", "basketball", "biology",
    "boats", "book", "business", "chemistry", "comic_books", "computer", "education", "event",
    "fictional_universe", "food", "games", "geography", "government", "language", "law", "medicine",
    "military", "music", "olympics", "organization", "religion", "royalty", "soccer", "spaceflight",
    "sports", "theater", "time", "transportation", "tv", "visual_art", "wine", "zoos",
)  # fmt: skip
_TYPES = (
    "topic", "work", "edition", "series", "group", "member", "product", "place", "event", "role",
    "collection", "organization", "creator", "subject", "venue", "award", "season", "release", "unit",
    "facility", "program", "agency", "instance", "category",
)  # fmt: skip
_PROPS = (
    "subject", "creator", "member", "part_of", "related", "located_in", "successor", "predecessor", "owner",
    "participant", "location", "instance_of", "founded_by", "sponsor", "genre", "language", "publisher",
    "designer", "operator", "manufacturer", "parent", "child", "includes", "venue", "winner", "nominee",
    "recipient", "author", "editor", "producer", "host", "origin", "destination", "leader", "affiliation",
    "category", "source", "region", "version", "format",
)  # fmt: skip
_LITERAL_PROPS = ("date", "start_date", "end_date", "number", "count", "rating", "code", "height", "weight")
_OTHER_LANGS = ("fr", "de", "es")


@dataclass(frozen=True, slots=True)
class Hub:
    """One planned hub: an entity with a fixed share of one relation's edges.

    Attributes:
        role: ``actor``, ``country``, ``director`` or ``topic``.
        entity: its mid (``freebase`` profile id).
        label: its English label.
        relation: the relation of its hub edges, ``~relation`` when they point at it (``~*``: any of
            the long tail's relations).
        planned: the number of hub edges planned (a share of the graph, capped at ``hub_cap``).
    """

    role: str
    entity: str
    label: str
    relation: str
    planned: int


@dataclass
class SyntheticStats:
    """What :meth:`FreebaseLike.write` wrote (also saved as JSON beside the file).

    Attributes:
        path: the N-Triples file.
        triples: triples written (the size asked for).
        seed: the seed.
        entities: typed entities that are not mediators (type nodes not counted).
        mediators: mediator (CVT) nodes.
        relations: distinct predicates.
        labels: ``rdfs:label`` triples.
        literals: triples with a literal object, labels included.
        hubs: the planned hubs (:class:`Hub` fields), each with ``degree``: the triples written that have
            it as subject or object.
        type_degree: the number of entities of each of the most common types (type nodes are hubs too).
    """

    path: str
    triples: int
    seed: int
    entities: int = 0
    mediators: int = 0
    relations: int = 0
    labels: int = 0
    literals: int = 0
    hubs: list[dict[str, object]] = field(default_factory=list)
    type_degree: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def _mid(i: int) -> str:
    x = ((i + 1) * _MID_MULT) % (1 << 40)
    chars = []
    for _ in range(8):
        chars.append(_MID_ALPHABET[x & 31])
        x >>= 5
    return "m.0" + "".join(chars)


def _zipf(rng: random.Random, n: int, s: float = 1.1) -> int:
    """An index in ``[0, n)`` with probability about proportional to ``(index + 1) ** -s``."""
    if n <= 1:
        return 0
    a = 1.0 - s
    if abs(a) < 1e-9:  # s == 1: log-uniform
        x = (n + 1) ** rng.random()
    else:
        x = (((n + 1) ** a - 1.0) * rng.random() + 1.0) ** (1.0 / a)
    return min(n - 1, int(x) - 1)


class FreebaseLike:
    """A seeded plan of a Freebase-shaped graph of exactly ``triples`` triples (see the module).

    The core (films with their performances, people, places) takes about 60% of the triples and the
    long tail the rest: entities of generated types with literal facts, then edges and mediated facts
    among them until the size is reached. Entity counts, relations and hubs follow from the size.

    Args:
        triples: the number of triples to write (at least 1000).
        seed: the random seed (the same seed and size give the same graph).
        hub_cap: the largest number of edges a planned hub gets.

    Raises:
        ConfigError: ``triples`` below 1000 or ``hub_cap`` below 1.
    """

    def __init__(self, triples: int, *, seed: int = 0, hub_cap: int = 1_000_000) -> None:
        if not isinstance(triples, int) or isinstance(triples, bool) or triples < 1000:
            raise ConfigError(f"triples must be an integer of at least 1000, got {triples!r}")
        if not isinstance(hub_cap, int) or hub_cap < 1:
            raise ConfigError(f"hub_cap must be a positive integer, got {hub_cap!r}")
        self.triples = triples
        self.seed = int(seed)
        self.hub_cap = hub_cap
        n = triples
        self.n_genres = len(_GENRES)
        self.n_countries = max(10, min(250, n // 5000))
        self.n_cities = max(20, min(100_000, n // 400))
        self.n_persons = max(50, n // 40)
        self.n_films = max(20, n // 45)
        self.n_directors = max(5, self.n_persons // 10)
        self.n_relations = max(40, min(5000, n // 250))
        self.n_types = max(8, min(600, self.n_relations // 8))
        self.n_topics = max(50, n // 25)  # long-tail entities
        # index ranges of each kind, one mid space
        sizes = [
            ("gender", 2),
            ("genre", self.n_genres),
            ("country", self.n_countries),
            ("city", self.n_cities),
            ("person", self.n_persons),
            ("film", self.n_films),
            ("topic", self.n_topics),
            ("mediator", 1 << 36),
        ]
        self._base: dict[str, int] = {}
        at = 0
        for kind, size in sizes:
            self._base[kind] = at
            at += size
        rng = random.Random(f"freebase-like/{self.seed}/schema")
        self._schema = self._make_schema(rng)
        self._hub_shares = {"actor": 1 / 40, "country": 1 / 50, "director": 1 / 200, "topic": 1 / 25}
        self.hubs = self._make_hubs()

    # ------------------------------------------------------------------ ids
    def entity(self, kind: str, index: int) -> str:
        """The mid of the ``index``-th entity of ``kind`` (``person``, ``film``, ``country``, ``city``,
        ``genre``, ``gender``, ``topic``)."""
        if kind not in self._base or kind == "mediator":
            raise ConfigError(f"unknown entity kind {kind!r}")
        return _mid(self._base[kind] + int(index))

    def count(self, kind: str) -> int:
        """How many entities of ``kind`` the graph has."""
        return {
            "gender": 2,
            "genre": self.n_genres,
            "country": self.n_countries,
            "city": self.n_cities,
            "person": self.n_persons,
            "film": self.n_films,
            "topic": self.n_topics,
        }[kind]

    def hub(self, role: str) -> Hub:
        """The planned hub of ``role``."""
        for h in self.hubs:
            if h.role == role:
                return h
        raise ConfigError(f"no hub {role!r}; roles: {', '.join(h.role for h in self.hubs)}")

    def _planned(self, role: str) -> int:
        return max(1, min(self.hub_cap, int(self.triples * self._hub_shares[role])))

    def _make_hubs(self) -> list[Hub]:
        plan = (
            ("actor", "person", 0, "Hub Actor", "~film.performance.actor"),
            ("country", "country", 0, "Hubland", "~film.film.country"),
            ("director", "person", 1, "Hub Director", "~film.film.directed_by"),
            ("topic", "topic", 0, "Hub Topic", "~*"),
        )
        return [
            Hub(role, self.entity(kind, i), label, rel, self._planned(role))
            for role, kind, i, label, rel in plan
        ]

    def _make_schema(self, rng: random.Random) -> list[tuple[str, int, str, int, tuple[str, ...]]]:
        """The long tail's relations: ``(name, subject type, kind, object type, mediator names)`` with
        kind ``edge``, ``literal`` (object type: the literal's kind) or ``mediated``."""
        self.type_names: list[str] = []
        seen: set[str] = set()
        while len(self.type_names) < self.n_types:
            name = f"{rng.choice(_DOMAINS)}.{rng.choice(_TYPES)}"
            if name not in seen and not name.startswith(("film.", "people.")):
                seen.add(name)
                self.type_names.append(name)
        rels: list[tuple[str, int, str, int, tuple[str, ...]]] = []
        names: set[str] = set()
        while len(rels) < self.n_relations:
            t = len(rels) % self.n_types
            u = rng.random()
            kind = "literal" if u < 0.2 else ("mediated" if u < 0.35 else "edge")
            if len(rels) < self.n_types:  # every type has a mediated relation
                kind = "mediated"
            if kind == "literal":  # the object: the literal's kind, else the object entity's type
                obj = rng.randrange(len(_LITERAL_PROPS))
                name = f"{self.type_names[t]}.{_LITERAL_PROPS[obj]}"
            else:
                obj = rng.randrange(self.n_types)
                name = f"{self.type_names[t]}.{rng.choice(_PROPS)}"
            if name in names:
                name = f"{name}_{len(rels)}"
            names.add(name)
            med: tuple[str, ...] = ()
            if kind == "mediated":
                domain = self.type_names[t].split(".")[0]
                cvt = f"{domain}.{rng.choice(_TYPES)}_{rng.choice(_PROPS)}"
                med = (cvt, f"{cvt}.{rng.choice(_PROPS)}", f"{cvt}.{rng.choice(_LITERAL_PROPS)}")
            rels.append((name, t, kind, obj, med))
        return rels

    @property
    def relation_names(self) -> list[str]:
        """The long tail's relation names (the film core's come on top)."""
        return [r[0] for r in self._schema]

    # ------------------------------------------------------------------ triples
    @property
    def mediator_types(self) -> tuple[str, ...]:
        """The ids of the mediator types (the film core's, then the long tail's), for
        :meth:`kg_agents.kg.profiles.Profile.with_mediators`."""
        return tuple(dict.fromkeys([*MEDIATOR_TYPES, *sorted(r[4][0] for r in self._schema if r[4])]))

    def lines(self) -> Iterator[str]:
        """Exactly ``triples`` N-Triples lines, each ending in `` .``."""
        for s, p, o in islice(chain(self._core(), self._tail()), self.triples):
            yield f"{s} {p} {o} ."

    def _core(self) -> Iterator[tuple[str, str, str]]:
        rng = random.Random(f"freebase-like/{self.seed}/core")
        ns = FREEBASE_NS
        e = self._term
        mediators = iter(range(self._base["mediator"], self._base["mediator"] + (1 << 36)))
        self._mediators = mediators
        yield from self._type_nodes()
        for i, g in enumerate(("Male", "Female")):
            s = e("gender", i)
            yield s, _TYPE, f"<{ns}people.gender>"
            yield s, _LABEL, literal(g, lang="en")
        for i, g in enumerate(_GENRES):
            s = e("genre", i)
            yield s, _TYPE, f"<{ns}film.film_genre>"
            yield s, _LABEL, literal(g, lang="en")
        for i in range(self.n_countries):
            s = e("country", i)
            yield s, _TYPE, f"<{ns}location.country>"
            yield from self._labels(rng, s, "Hubland" if i == 0 else self._name(rng, 2, 3))
            yield s, f"<{ns}location.statistical_region.population>", _int(rng.randrange(10_000, 300_000_000))
        for i in range(self.n_cities):
            s = e("city", i)
            c = e("country", 1 + _zipf(rng, self.n_countries - 1, 1.0))
            yield s, _TYPE, f"<{ns}location.citytown>"
            yield from self._labels(rng, s, self._name(rng, 2, 3))
            yield s, f"<{ns}location.location.containedby>", c
            yield c, f"<{ns}location.location.contains>", s
            if rng.random() < 0.5:
                yield s, f"<{ns}location.statistical_region.population>", _int(rng.randrange(500, 20_000_000))
        yield from self._people(rng)
        yield from self._films(rng)

    def _type_nodes(self) -> Iterator[tuple[str, str, str]]:
        core = (
            ("film.film", "Film"), ("film.performance", "Film performance"), ("people.person", "Person"),
            ("people.marriage", "Marriage"), ("people.gender", "Gender"), ("film.film_genre", "Film genre"),
            ("location.country", "Country"), ("location.citytown", "City/Town"),
        )  # fmt: skip
        names = [*core, *((t, t.split(".")[1].replace("_", " ").title()) for t in self.type_names)]
        for t, label in names:
            yield f"<{FREEBASE_NS}{t}>", _LABEL, literal(label, lang="en")

    def _people(self, rng: random.Random) -> Iterator[tuple[str, str, str]]:
        ns, e = FREEBASE_NS, self._term
        hub_country = self.hub("country")
        p_country = min(0.9, hub_country.planned / 2 / max(1, self.n_persons))
        for i in range(self.n_persons):
            s = e("person", i)
            yield s, _TYPE, f"<{ns}people.person>"
            name = "Hub Actor" if i == 0 else "Hub Director" if i == 1 else self._name(rng, 2, 2, person=True)
            yield from self._labels(rng, s, name)
            yield s, f"<{ns}people.person.gender>", e("gender", 0 if rng.random() < 0.6 else 1)
            yield s, f"<{ns}people.person.date_of_birth>", _date(rng, 1900, 2005)
            c = 0 if rng.random() < p_country else 1 + _zipf(rng, self.n_countries - 1, 1.0)
            yield s, f"<{ns}people.person.nationality>", e("country", c)
            if rng.random() < 0.7:
                yield s, f"<{ns}people.person.place_of_birth>", e("city", _zipf(rng, self.n_cities, 1.05))
            if rng.random() < 0.3:
                yield s, f"<{ns}people.person.height_meters>", _decimal(rng.uniform(1.45, 2.05))
            if rng.random() < 0.1:
                m = _mid(next(self._mediators))
                m_term = f"<{ns}{m}>"
                yield s, f"<{ns}people.person.spouse_s>", m_term
                yield m_term, _TYPE, f"<{ns}people.marriage>"
                yield m_term, f"<{ns}people.marriage.spouse>", s
                other = 2 + rng.randrange(self.n_persons - 2)
                yield m_term, f"<{ns}people.marriage.spouse>", e("person", other if other != i else 1)
                yield m_term, f"<{ns}people.marriage.from>", _date(rng, 1920, 2020)

    def _films(self, rng: random.Random) -> Iterator[tuple[str, str, str]]:
        ns, e = FREEBASE_NS, self._term
        casts = self.n_films * 3.5
        p_actor = min(0.9, self.hub("actor").planned / casts)
        p_director = min(0.9, self.hub("director").planned / self.n_films)
        p_country = min(0.9, self.hub("country").planned / 2 / self.n_films)
        for i in range(self.n_films):
            s = e("film", i)
            yield s, _TYPE, f"<{ns}film.film>"
            yield from self._labels(rng, s, self._title(rng))
            yield s, f"<{ns}film.film.initial_release_date>", _date(rng, 1910, 2024)
            if rng.random() < 0.8:
                yield s, f"<{ns}film.film.runtime>", _int(rng.randrange(60, 200))
            d = e("person", 1 if rng.random() < p_director else 2 + _zipf(rng, self.n_directors, 1.1))
            yield s, f"<{ns}film.film.directed_by>", d
            yield d, f"<{ns}film.director.film>", s
            genres = {_zipf(rng, self.n_genres, 1.2) for _ in range(1 + (rng.random() < 0.5))}
            for g in sorted(genres):
                yield s, f"<{ns}film.film.genre>", e("genre", g)
            c = 0 if rng.random() < p_country else 1 + _zipf(rng, self.n_countries - 1, 1.0)
            yield s, f"<{ns}film.film.country>", e("country", c)
            for _ in range(rng.randrange(1, 7)):
                m_term = f"<{ns}{_mid(next(self._mediators))}>"
                a = 0 if rng.random() < p_actor else 2 + _zipf(rng, self.n_persons - 2, 1.05)
                yield s, f"<{ns}film.film.starring>", m_term
                yield m_term, _TYPE, f"<{ns}film.performance>"
                yield m_term, f"<{ns}film.performance.actor>", e("person", a)
                yield m_term, f"<{ns}film.performance.film>", s

    def _tail(self) -> Iterator[tuple[str, str, str]]:
        """The long tail: its entities (type, labels, a literal fact), then edges and mediated facts
        among them without end (``lines`` stops at the size)."""
        rng = random.Random(f"freebase-like/{self.seed}/tail")
        ns = FREEBASE_NS
        by_type: list[list[int]] = [[] for _ in range(self.n_types)]
        for r, (_, t, _, _, _) in enumerate(self._schema):
            by_type[t].append(r)
        for i in range(self.n_topics):
            s = self._term("topic", i)
            t = i % self.n_types
            yield s, _TYPE, f"<{ns}{self.type_names[t]}>"
            if i == 0 or rng.random() < 0.95:
                yield from self._labels(rng, s, "Hub Topic" if i == 0 else self._name(rng, 2, 4))
            lits = [r for r in by_type[t] if self._schema[r][2] == "literal"]
            if lits and rng.random() < 0.6:
                r = lits[rng.randrange(len(lits))]
                yield s, f"<{ns}{self._schema[r][0]}>", _literal_value(rng, self._schema[r][3])
        p_hub = min(0.9, self.hub("topic").planned / max(1, self.triples * 0.1))  # ~0.1 N facts
        per_type = max(1, self.n_topics // self.n_types)
        linked = [[r for r in rs if self._schema[r][2] != "literal"] for rs in by_type]
        mediated = [[r for r in rs if self._schema[r][2] == "mediated"] for rs in by_type]
        # Pass k gives the first n/(k+1) entities one more fact: entity i gets about n/(i+1) of them (a
        # power law) and relation slot k of a type is used about 1/(k+1) as often as slot 0. A pair
        # (entity, relation) takes an object once (later passes go through a new mediator), so no
        # triple repeats.
        k = 0
        while True:
            for i in range(max(1, self.n_topics // (k + 1))):
                t = i % self.n_types
                rels = linked[t]
                r = rels[k] if k < len(rels) else mediated[t][k % len(mediated[t])]
                name, _, kind, obj, med = self._schema[r]
                s, p = self._term("topic", i), f"<{ns}{name}>"
                if rng.random() < p_hub:
                    o = self._term("topic", 0)
                else:
                    j = per_type - _zipf(rng, per_type, 1.0)  # the other end of the range: other hubs
                    o = self._term("topic", min(self.n_topics - 1, j * self.n_types + obj))
                if kind == "edge" and k < len(rels):
                    yield s, p, o
                    continue
                cvt, via, when = med
                m_term = f"<{ns}{_mid(next(self._mediators))}>"
                yield s, p, m_term
                yield m_term, _TYPE, f"<{ns}{cvt}>"
                yield m_term, f"<{ns}{via}>", o
                yield m_term, f"<{ns}{when}>", _date(rng, 1800, 2024)
            k += 1

    # ------------------------------------------------------------------ text
    def _term(self, kind: str, index: int) -> str:
        return f"<{FREEBASE_NS}{_mid(self._base[kind] + index)}>"

    def _labels(self, rng: random.Random, s: str, name: str) -> Iterator[tuple[str, str, str]]:
        yield s, _LABEL, literal(name, lang="en")
        if rng.random() < 0.2:
            lang = _OTHER_LANGS[rng.randrange(3)]
            yield s, _LABEL, literal(f"{name} ({lang})" if rng.random() < 0.5 else name, lang=lang)

    @staticmethod
    def _name(rng: random.Random, lo: int, hi: int, *, person: bool = False) -> str:
        def word() -> str:
            return "".join(rng.choice(_SYL) for _ in range(rng.randint(lo, hi))).capitalize()

        return f"{word()} {word()}" if person else word()

    @staticmethod
    def _title(rng: random.Random) -> str:
        words = [rng.choice(_WORDS) for _ in range(rng.randint(1, 3))]
        title = ("The " if rng.random() < 0.4 else "") + " ".join(words)
        u = rng.random()
        if u < 0.01:
            title = f'{title} "Redux"'
        elif u < 0.02:
            title = f"{title} d'Été"
        return title

    # ------------------------------------------------------------------ writing
    def write(self, path: str | os.PathLike[str]) -> SyntheticStats:
        """Write the graph to ``path`` (``.gz``: gzipped, with no time stamp) atomically, and its
        :class:`SyntheticStats` as JSON to ``path + ".json"``; return them."""
        out = FsPath(path)
        stats = SyntheticStats(path=str(out), triples=0, seed=self.seed)
        hub_terms = {f"<{FREEBASE_NS}{h.entity}>": h for h in self.hubs}
        hub_degree = dict.fromkeys(hub_terms, 0)
        mediator_types = {f"<{FREEBASE_NS}{t}>" for t in self.mediator_types}
        preds: set[str] = set()
        types: dict[str, int] = {}
        with atomic_target(out, suffix=".part") as tmp:
            raw = open(tmp, "wb")  # noqa: SIM115 - closed below, after the gzip stream
            try:
                stream = (
                    gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=3, mtime=0)
                    if out.suffix == ".gz"
                    else raw
                )
                with io.TextIOWrapper(stream, encoding="utf-8", newline="\n") as fh:  # type: ignore[arg-type]
                    for s, p, o in islice(chain(self._core(), self._tail()), self.triples):
                        fh.write(f"{s} {p} {o} .\n")
                        stats.triples += 1
                        preds.add(p)
                        if o[0] == '"':
                            stats.literals += 1
                            if p == _LABEL:
                                stats.labels += 1
                        elif p == _TYPE:
                            types[o] = types.get(o, 0) + 1
                        if s in hub_degree:
                            hub_degree[s] += 1
                        if o in hub_degree:
                            hub_degree[o] += 1
            finally:
                raw.close()
        stats.relations = len(preds)
        stats.mediators = sum(n for t, n in types.items() if t in mediator_types)
        stats.entities = sum(n for t, n in types.items() if t not in mediator_types)
        ns_len = len(FREEBASE_NS) + 1
        top = sorted(types.items(), key=lambda kv: -kv[1])[:10]
        stats.type_degree = {t[ns_len:-1]: n for t, n in top}
        stats.hubs = [{**asdict(h), "degree": hub_degree[t]} for t, h in hub_terms.items()]
        atomic_write(str(out) + ".json", stats.to_json())
        return stats


def write_freebase_like(
    path: str | os.PathLike[str], triples: int, *, seed: int = 0, hub_cap: int = 1_000_000
) -> SyntheticStats:
    """Write a :class:`FreebaseLike` graph of ``triples`` triples to ``path`` (:meth:`FreebaseLike.write`)."""
    return FreebaseLike(triples, seed=seed, hub_cap=hub_cap).write(path)


# ---------------------------------------------------------------------- literals
def _int(v: int) -> str:
    return f'"{v}"^^<{_XSD}integer>'


def _decimal(v: float) -> str:
    return f'"{v:.2f}"^^<{_XSD}decimal>'


def _date(rng: random.Random, lo: int, hi: int) -> str:
    return f'"{rng.randint(lo, hi):04d}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"^^<{_XSD}date>'


def _literal_value(rng: random.Random, kind: int) -> str:
    name = _LITERAL_PROPS[kind % len(_LITERAL_PROPS)]
    if "date" in name:
        return _date(rng, 1700, 2024)
    if name in ("height", "weight", "rating"):
        return _decimal(rng.uniform(0.1, 500.0) if name != "rating" else rng.uniform(0, 10))
    if name == "code":
        return literal(f"{rng.choice(_SYL).upper()}-{rng.randrange(10_000):04d}")
    return _int(int(math.exp(rng.uniform(0, 14))))
