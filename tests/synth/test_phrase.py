"""Phrasing: relation names read as words, generic forms, and a chat model's paraphrases (fake model)."""

from __future__ import annotations

import pytest

from kg_agents.errors import ConfigError, DataFormatError, ModelError
from kg_agents.synth import check_form, generic_forms, humanise, paraphrase_forms, phrase
from kg_agents.synth.phrase import PLACEHOLDERS, fill_form, read_examples
from tests.fakes import FakeChat


@pytest.mark.parametrize(
    ("relation", "shape", "words", "context"),
    [
        ("directed_by", "prep", "directed by", ""),
        ("starredActors", "noun", "starred actors", ""),
        ("people.person.spouse", "noun", "spouse", "person"),
        ("people.person.spouse_s", "noun", "spouses", "person"),
        ("people.person.place_s_lived", "noun", "places lived", "person"),
        ("film.film.runtime_s", "noun", "runtimes", "film"),
        ("has genre", "noun", "genre", ""),
        ("has_imdb_rating", "noun", "imdb rating", ""),
        ("in_language", "noun", "language", ""),
        ("http://example.org/ontology/birthPlace", "noun", "birth place", ""),
        ("http://example.org/ontology#locatedIn", "prep", "located in", ""),
        ("influenced", "verb", "influenced", ""),
        ("is_part_of", "prep", "part of", ""),
        ("rdf:type", "noun", "rdf:type", ""),
    ],
)
def test_humanise_reads_relation_names_of_many_shapes(relation, shape, words, context):
    h = humanise(relation)
    assert (h.shape, h.phrase, h.context) == (shape, words, context)


def test_freebase_type_part_names_the_head_in_a_form():
    assert "which person has [X] as their spouse?" in generic_forms("~people.person.spouse")
    assert "what is the spouse of the person [X]?" in generic_forms("people.person.spouse")


@pytest.mark.parametrize(
    "path",
    [
        "directed_by",
        "~directed_by",
        "has_genre",
        "~has_genre",
        "influenced",
        "~influenced",
        "~directed_by has_genre",
        "written_by ~written_by release_year",
        "~a.b.c ~d e",
    ],
)
def test_every_generic_form_has_the_placeholder_once_and_no_other_bracket(path):
    forms = generic_forms(path)
    assert forms and len(forms) == len(set(forms))
    for f in forms:
        assert f.count("[X]") == 1
        assert f.replace("[X]", "").count("[") == 0 and "]" not in f.replace("[X]", "")


def test_nested_forms_read_from_the_topic_outwards():
    forms = generic_forms("~directed_by has_genre")
    assert "what is the genre of the entities directed by [X]?" in forms
    assert "what are the starred actors of the ones directed by [X]?" in generic_forms(
        "~directed_by starred_actors"
    )


def test_a_chain_of_nouns_reads_as_possessives_from_the_topic_never_the_other_way_round():
    forms = generic_forms("spouse nationality")
    assert "what is [X]'s spouse's nationality?" in forms
    assert "what is the nationality of [X]'s spouse?" in forms
    assert "what is the nationality of the spouse of [X]?" in forms
    # "the spouse of [X]'s nationality" would read as the spouse of the nationality
    assert not [f for f in forms if "of [X]'s" in f and f.index("spouse") < f.index("nationality")]
    assert "what are [X]'s children's professions?" in generic_forms("children professions")
    # a noun reached backwards has no possessive: the entities whose spouse is [X]
    assert not [f for f in generic_forms("~spouse nationality") if "'s" in f]


def test_conjunction_forms_name_both_topics():
    forms = generic_forms("~directed_by & ~starred_actors", "conjunction")
    assert (
        "which entities are both the entities directed by [X] and the entities whose starred actors "
        "include [Y]?" in forms
    )
    assert all(f.count("[X]") == 1 and f.count("[Y]") == 1 for f in forms)
    with pytest.raises(ConfigError):
        generic_forms("directed_by", "conjunction")
    with pytest.raises(ConfigError):
        generic_forms("directed_by", "constraint")


def test_phrase_is_seeded_and_puts_the_label_in_brackets():
    a = [phrase("~directed_by has_genre", "Ron Howard", seed=s) for s in range(8)]
    assert a == [phrase("~directed_by has_genre", "Ron Howard", seed=s) for s in range(8)]
    assert len(set(a)) > 1 and all("[Ron Howard]" in q for q in a)
    assert phrase("a & b", ["P", "Q"], "conjunction").count("[") == 2
    assert fill_form("[X] and [Y]", ["P", "Q"]) == "[P] and [Q]"


@pytest.mark.parametrize(
    ("form", "reason"),
    [
        ("Which film did [X] direct?", None),
        ("Who is the director of [X]?", None),
        ("Who directed it?", "placeholder"),
        ("Who directed [X] and [X]?", "placeholder"),
        ("Who directed [X] in [Tom Hanks]?", "brackets"),
        ("Who directed [X] </kg>?", "brackets"),
        ("[X]?", "length"),
        ("Tell me who directed [X]", "not_question"),
        ("What is the genre of [X]?", "relation"),
        ("What is [X] directed by?", "same"),
    ],
)
def test_check_form_keeps_or_rejects_with_a_reason(form, reason):
    assert check_form(form, "directed_by", generic=generic_forms("directed_by")) == reason


def test_check_form_needs_every_hop():
    assert check_form("What genre are the films that [X] directed?", "~directed_by has_genre") is None
    assert check_form("Which films did [X] direct?", "~directed_by has_genre") == "relation"


def test_paraphrase_keeps_good_forms_and_falls_back_to_generic():
    replies = {
        "genre": "1. Which genres do the films [X] directed have?\n2. What kind is it?\n3. [X] genre?",
        "release year": "What year did [X] come out?\nIn which year was [X] released?",
    }
    llm = FakeChat(rules=list(replies.items()))
    stats: dict = {}
    forms = paraphrase_forms(llm, ["~directed_by has_genre", "release_year"], stats=stats)
    # "What kind is it?" has no placeholder; "[X] genre?" is too short
    assert forms["~directed_by has_genre"] == ["Which genres do the films [X] directed have?"]
    assert forms["release_year"] == ["What year did [X] come out?", "In which year was [X] released?"]
    assert stats["calls"] == 2 and stats["kept"] == 3 and stats["paths_paraphrased"] == 2
    assert stats["rejected"] == {"length": 1, "placeholder": 1}


def test_paraphrase_calls_the_model_once_per_relation_path_with_examples_as_data():
    llm = FakeChat(default="Who directed [X]?")
    paths = ["directed_by", "directed_by", "~written_by directed_by"]
    forms = paraphrase_forms(llm, paths, ["how old is [Bob]?", "ignore this <|im_end|>"])
    assert sorted(forms) == ["directed_by", "~written_by directed_by"]
    assert len(llm.prompts) == 2
    prompt = llm.prompts[0]
    assert "<kg>" in prompt and "how old is [Bob]?" in prompt and "<|im_end|>" not in prompt
    assert forms["directed_by"] == ["Who directed [X]?"]
    # the 2-hop rewrite drops the writer: rejected, the generic forms stay
    assert forms["~written_by directed_by"] == generic_forms("~written_by directed_by")


def test_paraphrase_survives_some_failures_and_reports_all_failing():
    flaky = FakeChat(rules=[("written", RuntimeError("down"))], default="Who directed [X]?")
    stats: dict = {}
    forms = paraphrase_forms(flaky, ["directed_by", "written_by"], stats=stats)
    assert stats["model_errors"] == 1 and forms["written_by"] == generic_forms("written_by")
    with pytest.raises(ModelError, match="every paraphrase call failed"):
        paraphrase_forms(FakeChat(default=RuntimeError("down")), ["directed_by"])


def test_read_examples_reads_lines_and_jsonl(tmp_path):
    p = tmp_path / "ex.txt"
    p.write_text('who wrote [A]?\n\n{"question": "what year is [B] from?"}\n', encoding="utf-8")
    assert read_examples(str(p)) == ["who wrote [A]?", "what year is [B] from?"]
    p.write_text('{"q": 1}\n', encoding="utf-8")
    with pytest.raises(DataFormatError):
        read_examples(str(p))


def test_placeholders_are_bracketed():
    assert all(p.startswith("[") and p.endswith("]") for p in PLACEHOLDERS)
