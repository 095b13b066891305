"""Small hand-made graphs for the synthesiser's tests."""

from __future__ import annotations

import pytest

from kg_agents.kg.memory import MemoryKG


def film_triples(n_films: int = 40) -> list[tuple[str, str, str]]:
    """``n_films`` films, each with a director, a writer, a genre and a year; every director, writer,
    genre and year is shared by a few films, so every 1- and 2-hop relation path has many topics."""
    triples = []
    for i in range(n_films):
        f = f"Film {i}"
        triples += [
            (f, "directed_by", f"Director {i % 13}"),
            (f, "written_by", f"Writer {i % 11}"),
            (f, "has_genre", f"Genre {i % 7}"),
            (f, "release_year", str(1950 + i % 17)),
        ]
    return triples


@pytest.fixture
def films() -> MemoryKG:
    return MemoryKG(film_triples(), name="films")
