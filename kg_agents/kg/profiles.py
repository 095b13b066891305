"""How an RDF store's IRIs map to kg-agents entity and relation ids: :class:`Profile`.

A profile says which IRIs stand for entities and relations, how an id becomes an IRI (and back),
and which predicate carries an entity's label. The built-in profiles:

- ``generic``: ids are the full IRIs; labels from ``rdfs:label``.
- ``metaqa``: ids are the percent-decoded local names under :data:`METAQA_ENTITY_NS` and
  :data:`METAQA_RELATION_NS` (what :mod:`kg_agents.kg.export` writes), so MetaQA loaded as
  N-Triples has the same ids as :class:`~kg_agents.kg.memory.MemoryKG`: ``"Tom Hanks"``,
  ``"starred_actors"``.
- ``freebase``: mids (``m.0abc``) and relations (``location.country.languages_spoken``) under
  ``http://rdf.freebase.com/ns/``; labels from ``type.object.name`` (English preferred).
- ``wikidata``: ``Q42`` under ``wd:`` and ``P31`` under ``wdt:``; ``rdfs:label`` in English.

Ids become IRIs only through :func:`kg_agents.kg.terms.iri`; an id that cannot be rendered raises
:class:`~kg_agents.errors.InvalidTermError`, which stores treat as "not in the KG".
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from urllib.parse import quote, unquote

from kg_agents.errors import ConfigError, InvalidTermError
from kg_agents.kg.terms import iri, is_valid_iri

__all__ = [
    "FREEBASE_NS",
    "METAQA_ENTITY_NS",
    "METAQA_RELATION_NS",
    "PROFILES",
    "RDFS_LABEL",
    "WIKIDATA_DIRECT_NS",
    "WIKIDATA_ENTITY_NS",
    "Profile",
    "get_profile",
]

RDFS_LABEL = "http://www.w3.org/2000/01/rdf-schema#label"
METAQA_ENTITY_NS = "http://kg-agents.org/metaqa/entity/"
METAQA_RELATION_NS = "http://kg-agents.org/metaqa/relation/"
FREEBASE_NS = "http://rdf.freebase.com/ns/"
WIKIDATA_ENTITY_NS = "http://www.wikidata.org/entity/"
WIKIDATA_DIRECT_NS = "http://www.wikidata.org/prop/direct/"


def _encode_local(value: str) -> str:
    try:
        return quote(value, safe="")
    except UnicodeEncodeError as exc:
        raise InvalidTermError(f"id is not valid Unicode text: {value[:60]!r}") from exc


@dataclass(frozen=True, slots=True)
class Profile:
    """The id scheme and label predicate of an RDF knowledge graph.

    With a namespace set, an id is the percent-decoded local name under it: the id ``"Tom Hanks"``
    is the IRI ``<{entity_ns}Tom%20Hanks>`` (``urllib.parse.quote(id, safe="")``). An IRI outside the
    namespace keeps its full IRI as its id, and an id that is itself a valid absolute IRI with
    ``://`` is used as it is. Without a namespace, ids are full IRIs.

    Args:
        name: a short name (used in fingerprints and messages).
        entity_ns: namespace of entity IRIs, or None for full-IRI ids.
        relation_ns: namespace of relation IRIs, or None for full-IRI ids.
        label_predicates: predicates whose literal objects are labels, best first.
        label_lang: preferred label language (``"en"``); labels without a language come next.
        type_relation: the relation id from an entity to its type (``type.object.type``), or None.
        mediator_types: type ids whose members are mediator (CVT) nodes, walked through as one step
            (:class:`~kg_agents.kg.mediators.MediatedKG`, which :func:`kg_agents.kg.open_kg` puts over
            a store of this profile); none by default. :meth:`with_mediators` gives a profile with them.

    Example:
        >>> p = Profile.namespaced("http://ex.org/e/", "http://ex.org/r/")
        >>> p.entity_term("Tom Hanks")
        '<http://ex.org/e/Tom%20Hanks>'
        >>> p.entity_id("http://ex.org/e/Tom%20Hanks")
        'Tom Hanks'
    """

    name: str
    entity_ns: str | None = None
    relation_ns: str | None = None
    label_predicates: tuple[str, ...] = (RDFS_LABEL,)
    label_lang: str | None = None
    type_relation: str | None = None
    mediator_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for ns in (self.entity_ns, self.relation_ns, *self.label_predicates):
            if ns is not None and not is_valid_iri(ns):
                raise ConfigError(f"profile {self.name!r}: not a valid absolute IRI: {ns!r}")
        if not self.label_predicates:
            raise ConfigError(f"profile {self.name!r}: needs at least one label predicate")
        if isinstance(self.mediator_types, str) or not all(
            isinstance(t, str) and t for t in self.mediator_types
        ):
            raise ConfigError(f"profile {self.name!r}: mediator_types must be a tuple of type ids")
        if self.mediator_types and not self.type_relation:
            raise ConfigError(f"profile {self.name!r}: mediator_types need a type_relation")

    def with_mediators(self, *types: str, type_relation: str | None = None) -> Profile:
        """This profile with ``types`` as its mediator types (and ``type_relation``, when given).

        Example:
            >>> PROFILES["freebase"].with_mediators("film.performance").mediator_types
            ('film.performance',)
        """
        return replace(self, mediator_types=tuple(types), type_relation=type_relation or self.type_relation)

    @classmethod
    def namespaced(
        cls,
        entity_ns: str,
        relation_ns: str,
        *,
        name: str = "namespaced",
        label_predicates: tuple[str, ...] = (RDFS_LABEL,),
        label_lang: str | None = None,
    ) -> Profile:
        """A profile whose ids are the local names under ``entity_ns`` and ``relation_ns``."""
        return cls(name, entity_ns, relation_ns, label_predicates, label_lang)

    # ------------------------------------------------------------------ id <-> IRI
    def entity_iri(self, entity: str) -> str:
        """The IRI (without ``<>``) of an entity id. Raises :class:`InvalidTermError`."""
        return _to_iri(entity, self.entity_ns)

    def relation_iri(self, relation: str) -> str:
        """The IRI (without ``<>``) of a relation id. Raises :class:`InvalidTermError`."""
        return _to_iri(relation, self.relation_ns)

    def entity_term(self, entity: str) -> str:
        """``<iri>`` of an entity id, rendered by :func:`kg_agents.kg.terms.iri`."""
        return iri(self.entity_iri(entity))

    def relation_term(self, relation: str) -> str:
        """``<iri>`` of a relation id, rendered by :func:`kg_agents.kg.terms.iri`."""
        return iri(self.relation_iri(relation))

    def entity_id(self, value: str) -> str:
        """The entity id of an IRI (the inverse of :meth:`entity_iri`)."""
        return _from_iri(value, self.entity_ns)

    def relation_id(self, value: str) -> str:
        """The relation id of an IRI (the inverse of :meth:`relation_iri`)."""
        return _from_iri(value, self.relation_ns)

    def describe(self) -> str:
        """A stable one-line description (for fingerprints); the mediator types, where there are some,
        come last."""
        parts = [
            self.name,
            self.entity_ns or "",
            self.relation_ns or "",
            *self.label_predicates,
            self.label_lang or "",
        ]
        if self.mediator_types:
            parts += [f"{self.type_relation}:{','.join(self.mediator_types)}"]
        return "|".join(parts)


def _to_iri(value: str, ns: str | None) -> str:
    if not isinstance(value, str):
        raise InvalidTermError(f"an id must be a string, got {type(value).__name__}")
    if ns is None:
        iri(value)  # validates
        return value
    if "://" in value and is_valid_iri(value) and not value.startswith(ns):
        return value
    return ns + _encode_local(value)


def _from_iri(value: str, ns: str | None) -> str:
    if ns is not None and value.startswith(ns):
        return unquote(value[len(ns) :])
    return value


#: The built-in profiles by name.
PROFILES: dict[str, Profile] = {
    "generic": Profile("generic"),
    "metaqa": Profile("metaqa", METAQA_ENTITY_NS, METAQA_RELATION_NS),
    "freebase": Profile(
        "freebase",
        FREEBASE_NS,
        FREEBASE_NS,
        (FREEBASE_NS + "type.object.name", RDFS_LABEL),
        "en",
        "type.object.type",
    ),
    "wikidata": Profile("wikidata", WIKIDATA_ENTITY_NS, WIKIDATA_DIRECT_NS, (RDFS_LABEL,), "en"),
}


def get_profile(profile: str | Profile) -> Profile:
    """Return ``profile`` itself or the built-in profile of that name.

    Raises:
        ConfigError: an unknown profile name.
    """
    if isinstance(profile, Profile):
        return profile
    try:
        return PROFILES[profile]
    except (KeyError, TypeError):
        raise ConfigError(
            f"unknown profile {profile!r}; built-in: {', '.join(sorted(PROFILES))}, or pass a Profile"
        ) from None
