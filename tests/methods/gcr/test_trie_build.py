"""The fast KG-Trie build gives exactly the trie of tokenising every path sentence whole.

The reference below is independent of the build's composition: it tokenises each ``path_sentence``
(KG text rendered as prompts show it) with the tokenizer in one call and inserts the sentences one by
one (the build before labels were tokenised once and composed). Compared: sentences, texts, their
order, node count, longest sentence, stats, and the tree with the order of every node's children.
"""

from __future__ import annotations

import pytest

from kg_agents.kg import MemoryKG, open_kg
from kg_agents.kg.base import Path
from kg_agents.kg.paths import enumerate_paths
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.gcr.trie import (
    KGTrie,
    PathTokenizer,
    build_trie,
    format_path,
    path_sentence,
    path_tokenizer,
    splits_at_spaces,
)
from kg_agents.untrusted import kg_text
from tests.methods.gcr.helpers import smollm_tokenizer

#: Labels that test the composition's edges: spaces and tabs at either end, newlines, non-ASCII and
#: combining marks, digits, the path markers and a special token inside a label, an inverse mark.
ODD_TRIPLES = [
    ("Amélie", "directed_by", "Jean-Pierre Jeunet"),
    (" lead space", "has_tags", "trail space "),
    ("two  spaces", "has_tags", "\ttab"),
    ("new\nline", "release_year", "1999"),
    ("e\u0301 combining", "in_language", "日本語"),
    ("x </PATH> y", "has_tags", "<PATH>"),
    ("a<|im_end|>b", "written_by", "~tilde"),
    ("(500) Days of Summer", "starred_actors", "Zooey Deschanel"),
    ("Amélie", "has_tags", "1,000,000"),
    ("1999", "has_tags", "'s"),
    ("Jean-Pierre Jeunet", "~weird", "-dash-"),
]


def reference_trie(kg, entities, tokenizer, max_hops, max_paths=20_000, fanout_limit=500) -> KGTrie:
    res = enumerate_paths(
        kg, list(entities), max_hops, direction="both", fanout_limit=fanout_limit, max_paths=max_paths
    )
    texts = [p.to_text() for p in res.paths]
    sentences = [path_sentence(p) for p in res.paths]
    seqs = tokenizer(sentences, add_special_tokens=False)["input_ids"] if sentences else []
    return KGTrie(seqs, texts)


def shape(node: dict) -> list:
    """The tree with the order of every node's children (dict equality ignores order)."""
    return [(k, shape(v) if isinstance(v, dict) else v) for k, v in node.items()]


def assert_same(built: KGTrie, ref: KGTrie) -> None:
    assert built.texts == ref.texts
    assert built.sequences == ref.sequences
    assert all(type(t) is int for s in built.sequences for t in s)
    assert built.num_nodes == ref.num_nodes and built.max_len == ref.max_len
    assert shape(built.root) == shape(ref.root)
    assert built.stats.paths == len(ref)


@pytest.fixture(scope="module")
def tok():
    return smollm_tokenizer()


@pytest.mark.parametrize("hops", [1, 2, 3])
def test_build_equals_whole_sentence_tokenisation_small_kg(tok, hops):
    kg = MemoryKG(CONTRACT_TRIPLES + ODD_TRIPLES)
    for e in sorted({t[0] for t in CONTRACT_TRIPLES + ODD_TRIPLES} | {t[2] for t in ODD_TRIPLES}):
        assert_same(build_trie(kg, [e], tok, max_hops=hops), reference_trie(kg, [e], tok, hops))
    every = ["Tom Hanks", "Amélie", "x </PATH> y", "1999"]
    assert_same(build_trie(kg, every, tok, max_hops=hops), reference_trie(kg, every, tok, hops))
    cut = build_trie(kg, ["Tom Hanks"], tok, max_hops=hops, max_paths=5, fanout_limit=2)
    assert_same(cut, reference_trie(kg, ["Tom Hanks"], tok, hops, max_paths=5, fanout_limit=2))


def test_smollm_splits_at_spaces_and_odd_labels_compose(tok):
    """SmolLM2's tokenizer composes by construction: no label is checked, and each odd label's
    composition is the tokenizer's ids in every context; the in-context check agrees."""
    assert splits_at_spaces(tok) and not splits_at_spaces(CharTokenizer())
    labels = sorted({x for t in ODD_TRIPLES for x in t} | {"", " ", "~" + ODD_TRIPLES[0][1]})
    unchecked, checked = PathTokenizer(tok), PathTokenizer(tok, check=True, chunk=4)
    assert not unchecked.check and checked.check
    unchecked.add([*labels, "a", "b"])
    checked.add([*labels, "a", "b"])
    assert checked.labels == unchecked.labels
    a, b = unchecked.labels["a"] or (), unchecked.labels["b"] or ()
    for x in labels:
        piece = unchecked.labels[x]
        assert piece is not None
        arrow, start, end = unchecked.arrow, unchecked.start, unchecked.end
        for text, composed in [
            (f"<PATH> {kg_text(x)} -> {kg_text(x)} </PATH>", (*start, *piece, *arrow, *piece, *end)),
            (f"<PATH> a -> {kg_text(x)} -> b </PATH>", (*start, *a, *arrow, *piece, *arrow, *b, *end)),
        ]:
            assert tuple(tok(text, add_special_tokens=False)["input_ids"]) == composed, x
    paths = [Path.from_text("Amélie -> directed_by -> Jean-Pierre Jeunet"), Path(())]
    assert unchecked.encode(paths) == [  # a path without hops is tokenised whole, as before
        tuple(tok([format_path(p) for p in paths], add_special_tokens=False)["input_ids"][i]) for i in (0, 1)
    ]


class CharTokenizer:
    """A tokenizer that composing cannot follow: characters, but ``"> "`` is one token."""

    def __call__(self, texts, add_special_tokens=False):
        out = []
        for text in texts:
            ids, i = [], 0
            while i < len(text):
                if text.startswith("> ", i):
                    ids.append(100_000)
                    i += 2
                else:
                    ids.append(ord(text[i]))
                    i += 1
            out.append(ids)
        return {"input_ids": out}

    def __len__(self) -> int:
        return 100_001


def test_tokenizer_that_does_not_compose_falls_back_to_whole_sentences():
    kg = MemoryKG(CONTRACT_TRIPLES)
    fake = CharTokenizer()
    built = build_trie(kg, ["Tom Hanks"], fake, max_hops=2, tokenizer_sig="fake")
    assert len(built) > 5
    assert_same(built, reference_trie(kg, ["Tom Hanks"], fake, 2))
    labels = path_tokenizer(fake).labels
    assert labels and all(v is None for v in labels.values())


@pytest.mark.integration
def test_build_equals_whole_sentence_tokenisation_metaqa(tok):
    """Real MetaQA topic entities at L = 2, among them one whose path limit is hit."""
    kg = open_kg("metaqa")
    entities = ["Splash", "Tom Hanks", "Ron Howard", "Drama", "1999", "Big"]
    for e in entities:
        assert_same(build_trie(kg, [e], tok, max_hops=2), reference_trie(kg, [e], tok, 2))
    assert_same(build_trie(kg, entities[:3], tok, max_hops=2), reference_trie(kg, entities[:3], tok, 2))
    small = build_trie(kg, ["Drama"], tok, max_hops=2, max_paths=3000)
    assert small.stats.path_limit_hit
    assert_same(small, reference_trie(kg, ["Drama"], tok, 2, max_paths=3000))


@pytest.mark.integration
def test_every_metaqa_label_composes_in_context(tok):
    """The in-context check passes for every MetaQA entity and relation, both directions."""
    kg = open_kg("metaqa")
    rels = kg.all_relations()
    labels = [*(e for e, _ in kg.iter_labels()), *rels, *("~" + r for r in rels)]
    assert len(labels) == kg.num_entities + 2 * len(rels)
    pt = PathTokenizer(tok, check=True)
    pt.add(labels)
    assert [x for x in labels if pt.labels[x] is None] == []


def test_fill_any_order_duplicates_and_foreign_parents(tok):
    """Paths out of breadth-first order (a path before its parent), repeated, hopless, or whose
    parent is another object: the same trie as inserting each whole-tokenised sentence in order."""
    kg = MemoryKG(CONTRACT_TRIPLES + ODD_TRIPLES)
    paths = enumerate_paths(kg, ["Tom Hanks", "Amélie"], 2, direction="both").paths
    two = [p for p in paths if len(p) == 2]
    rebuilt = [Path.from_text(p.to_text()) for p in paths[:5]]  # equal paths, other Hop objects
    for order in (
        [*two[:4], *paths, *two[:2]],
        [*reversed(paths)],
        [*rebuilt, *paths[:3], *rebuilt],
        [paths[0], Path(()), paths[1]],
    ):
        texts = [p.to_text() for p in order]
        want = KGTrie(tok([path_sentence(p) for p in order], add_special_tokens=False)["input_ids"], texts)
        got = KGTrie([], [])
        PathTokenizer(tok).fill(got, order)
        got.stats.paths = len(got)
        assert_same(got, want)


def test_a_tokenizer_that_fails_the_probe_is_checked(monkeypatch):
    """A tokenizer taken to split at spaces whose probe sentence does not compose: labels are checked."""
    from kg_agents.methods.gcr.trie import tokens

    monkeypatch.setattr(tokens, "splits_at_spaces", lambda tokenizer: True)
    fake = CharTokenizer()
    assert PathTokenizer(fake).check
    assert not PathTokenizer(smollm_tokenizer()).check
    kg = MemoryKG(CONTRACT_TRIPLES)
    pt = PathTokenizer(fake)
    got = KGTrie([], [])
    paths = enumerate_paths(kg, ["Tom Hanks"], 2, direction="both").paths
    pt.fill(got, paths)
    got.stats.paths = len(got)
    assert_same(got, reference_trie(kg, ["Tom Hanks"], fake, 2))


def test_shared_path_tokenizer_lives_as_long_as_its_tokenizer():
    import gc

    from kg_agents.methods.gcr.trie import tokens

    fake = CharTokenizer()
    pt = path_tokenizer(fake)
    assert path_tokenizer(fake) is pt and pt.encode([Path.from_text("a -> r -> b")])
    n = len(tokens._PATH_TOKENIZERS)
    del fake
    gc.collect()
    assert len(tokens._PATH_TOKENIZERS) == n - 1
