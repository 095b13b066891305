from __future__ import annotations

import gzip
import json

import pytest

from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.eval import (
    DATASETS,
    Dataset,
    Question,
    get_dataset,
    load_jsonl_questions,
    load_metaqa,
    load_metaqa_file,
    load_pathquestion,
    load_webqsp_sample,
    split_indices,
)
from kg_agents.eval.datasets import parse_pathquestion_answer, parse_pathquestion_path
from kg_agents.kg import MemoryKG, verify_path

# ---------------------------------------------------------------------------- splits


def test_split_indices_partition_and_sizes():
    n = 9992
    train, val = split_indices(n, "train"), split_indices(n, "validation")
    assert (len(train), len(val)) == (7993, 1999)
    assert not set(train) & set(val)
    assert sorted(train + val) == list(range(n)) == split_indices(n, "dev")
    assert train == sorted(train)  # file order


def test_split_indices_are_pinned():
    """The procedure is fixed: blake2b(f"{seed}:{i}") order. These values must never change."""
    assert split_indices(10, "validation", seed=0) == [0, 1]
    assert split_indices(10, "validation", seed=1) == [4, 6]
    assert split_indices(20, "dev", seed=0, limit=3) == [3, 7, 18]


def test_split_limit_is_a_nested_sample():
    small = set(split_indices(1000, "train", limit=50))
    big = set(split_indices(1000, "train", limit=100))
    assert len(small) == 50 and small < big <= set(split_indices(1000, "train"))


def test_split_errors():
    with pytest.raises(ConfigError, match="valid: dev, train, validation"):
        split_indices(10, "test")
    with pytest.raises(ConfigError):
        split_indices(10, "dev", limit=-1)


# ---------------------------------------------------------------------------- MetaQA
@pytest.mark.parametrize(("hops", "n"), [(1, 9992), (2, 14872), (3, 14274)])
def test_metaqa_dev_counts(hops, n):
    ds = load_metaqa(hops)
    assert len(ds) == n and ds.name == f"metaqa-{hops}hop" and ds.kg == "metaqa" and ds.split == "dev"
    q = ds[0]
    assert q.hops == hops and q.qtype and len(q.qtype.split("_to_")) == hops + 1
    assert q.topic_entities and f"[{q.topic_entities[0]}]" in q.question
    assert all(q.answers) and "[" not in q.plain_question


def test_metaqa_first_line_parsed():
    q = load_metaqa(1)[0]
    assert q.question == "what movies did [Temuera Morrison] act in"
    assert q.topic_entities == ["Temuera Morrison"]
    assert q.answers == ["Once Were Warriors", "Tracker", "River Queen"]
    assert q.qtype == "actor_to_movie" and q.meta["line"] == 1 and q.id == "metaqa-1hop-0"


def test_metaqa_splits_deterministic_disjoint():
    train = load_metaqa(2, "train", seed=0)
    val = load_metaqa(2, "validation", seed=0)
    assert (len(train), len(val)) == (11897, 2975)
    ids_t, ids_v = {q.id for q in train}, {q.id for q in val}
    assert not ids_t & ids_v and len(ids_t | ids_v) == 14872
    assert [q.id for q in load_metaqa(2, "validation", seed=0)] == [q.id for q in val]
    other = {q.id for q in load_metaqa(2, "validation", seed=1)}
    assert other != ids_v and len(other) == 2975


def test_metaqa_limit_samples_across_qtypes():
    ds = load_metaqa(1, "validation", limit=200)
    assert len(ds) == 200
    # the 1-hop file is sorted by qtype; a seeded sample covers most of the 13 types
    assert len({q.qtype for q in ds}) >= 10


def test_metaqa_answers_and_topics_are_kg_entities():
    ds = load_metaqa(3, "validation", limit=50)
    kg = ds.default_kg()
    assert ds.kg_for(ds[0]) is kg
    for q in ds:
        assert kg.has_entity(q.topic_entities[0])
        assert all(kg.has_entity(a) for a in q.answers)


def test_metaqa_file_given_by_path(tmp_path):
    p = tmp_path / "qa.txt"
    p.write_text(
        "who wrote [Splash]\tBabaloo Mandel|Lowell Ganz\nwhat about [Heat]\tDrama\n", encoding="utf-8"
    )
    kg = MemoryKG([("Splash", "written_by", "Babaloo Mandel")], name="tiny")
    ds = load_metaqa_file(p, kg=kg, hops=1)
    assert [q.answers for q in ds] == [["Babaloo Mandel", "Lowell Ganz"], ["Drama"]]
    assert ds.name == "qa" and ds.default_kg() is kg and ds[1].qtype is None


@pytest.mark.parametrize(
    ("content", "line", "reason"),
    [
        ("who wrote [Splash]\tA\nno tab here\n", 2, "question<TAB>answers"),
        ("who wrote Splash\tA\n", 1, "bracketed"),
        ("who wrote [Splash] and [Heat]\tA\n", 1, "bracketed"),
        ("who wrote [Splash]\tA||B\n", 1, "empty answer"),
        ("who wrote [Splash]\tA\n\nwho [x]\tB\n", 2, "blank line"),
    ],
)
def test_metaqa_malformed(tmp_path, content, line, reason):
    p = tmp_path / "bad.txt"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(DataFormatError, match=reason) as ei:
        load_metaqa_file(p)
    assert ei.value.line == line and ei.value.path == str(p) and f"bad.txt:{line}" in str(ei.value)


def test_metaqa_qtype_length_mismatch(tmp_path):
    p, qt = tmp_path / "qa.txt", tmp_path / "qt.txt"
    p.write_text("who wrote [Splash]\tA\nwho [x]\tB\n", encoding="utf-8")
    qt.write_text("movie_to_writer\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="1 question types for 2 questions"):
        load_metaqa_file(p, qtype_path=qt)


def test_bad_gzip_and_bad_encoding(tmp_path):
    p = tmp_path / "qa.txt.gz"
    p.write_bytes(b"not gzip at all")
    with pytest.raises(DataFormatError, match="cannot read"):
        load_metaqa_file(p)
    q = tmp_path / "latin.txt"
    q.write_bytes("who wrote [Am\xe9lie]\tA\n".encode("latin-1"))
    with pytest.raises(DataFormatError, match="UTF-8"):
        load_metaqa_file(q)
    with pytest.raises(FileNotFoundError):
        load_metaqa_file(tmp_path / "missing.txt")


# ---------------------------------------------------------------------------- PathQuestion
def test_pathquestion_answer_and_path_parsing():
    assert parse_pathquestion_answer("united_kingdom(united_kingdom/)") == (
        "united_kingdom",
        ["united_kingdom"],
    )
    assert parse_pathquestion_answer("Venus_(New_version)(Venus_(New_version)/)")[0] == "Venus_(New_version)"
    assert parse_pathquestion_answer("charles_iv(gabriel/charles_iv/)") == (
        "charles_iv",
        ["gabriel", "charles_iv"],
    )
    for bad in ("no_parens", "a(b", "(x/)"):
        with pytest.raises(ValueError):
            parse_pathquestion_answer(bad)
    path = parse_pathquestion_path("a#r1#b#r2#c#<end>#c")
    assert path.to_text() == "a -> r1 -> b -> r2 -> c" and path.start == "a" and path.end == "c"
    assert parse_pathquestion_path("a#r1#b").to_text() == "a -> r1 -> b"
    for bad in ("a#r1", "a#r1#b#<end>#x", "a##b"):
        with pytest.raises(ValueError):
            parse_pathquestion_path(bad)


@pytest.mark.parametrize(
    ("variant", "n", "kg", "hops"),
    [
        ("pq-2h", 1908, "pq-2h", 2),
        ("pq-3h", 5198, "pq-3h", 3),
        ("pql-2h", 1594, "pql-2h", 2),
        ("pql-3h", 1031, "pql-3h", 3),
        ("pql-3h-more", 2062, "pql-3h", 3),
    ],
)
def test_pathquestion_sets(variant, n, kg, hops):
    ds = get_dataset(f"pathquestion-{variant}")
    assert len(ds) == n and ds.kg == kg
    store = ds.default_kg()
    for q in ds.questions[:: max(1, n // 60)]:
        gold = q.meta["gold_path"]
        assert q.hops == hops == len(gold)
        assert q.topic_entities == [gold.start] and q.answers[0] == gold.end
        assert verify_path(store, gold)
        assert all(store.has_entity(a) for a in q.answers)
        assert q.question == q.question.strip()


def test_pathquestion_aliases_are_answers():
    ds = load_pathquestion("pq-3h")
    multi = [q for q in ds if len(q.answers) > 1]
    assert multi
    q = multi[0]
    assert q.answers[0] == q.meta["answer"] and len(set(q.answers)) == len(q.answers)


def test_pathquestion_malformed(tmp_path):
    from kg_agents.eval.datasets import load_pathquestion_file

    p = tmp_path / "pq.txt"
    good = "who is a 's b ?\tc(c/)\ta#r#b#s#c#<end>#c\n"
    p.write_text(good + "who is x ?\tc(c/\ta#r#c\n", encoding="utf-8")
    with pytest.raises(DataFormatError) as ei:
        load_pathquestion_file(p, kg=None)
    assert ei.value.line == 2
    p.write_text(good + "who is x ?\td(d/)\ta#r#c\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="path ends at 'c', answer is 'd'"):
        load_pathquestion_file(p, kg=None)
    p.write_text(good + "two\tfields\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=":2"):
        load_pathquestion_file(p, kg=None)


# ---------------------------------------------------------------------------- WebQSP
def test_webqsp_sample_each_question_has_its_graph():
    ds = get_dataset("webqsp-sample")
    assert len(ds) == 18 and ds.kg is None
    q = ds[0]
    assert q.id == "WebQTest-0" and q.topic_entities == ["Jamaica"]
    assert q.answers == ["Jamaican English", "Jamaican Creole English Language"]
    kg = ds.kg_for(q)
    assert kg.name == "webqsp-WebQTest-0" and len(kg) == q.meta["triples"]
    assert kg.has_entity("Jamaica") and ds.kg_for(q) is kg  # cached
    assert ds.kg_for(ds[1]) is not kg
    # the data README says 3 (-3, -12, -31), but WebQTest-12 has one of its three answers in its graph
    assert [q.id for q in ds if not q.meta["answers_in_graph"]] == ["WebQTest-3", "WebQTest-31"]
    with pytest.raises(ConfigError, match="own graph"):
        ds.default_kg()
    with pytest.raises(ConfigError):
        get_dataset("webqsp-sample", split="train")
    assert len(load_webqsp_sample(limit=2)) == 2
    # questions travel to worker processes: the per-question graph factory pickles
    import pickle

    q2 = pickle.loads(pickle.dumps(ds[2]))
    assert q2.kg is not None and len(q2.kg()) == ds[2].meta["triples"]


def test_webqsp_malformed(tmp_path):
    p = tmp_path / "w.jsonl"
    rec = {"id": "q", "question": "x?", "q_entity": ["a"], "a_entity": ["b"], "graph": [["a", "r", "b"]]}
    bad = dict(rec, graph=[["a", "r"]])
    p.write_text(json.dumps(rec) + "\n" + json.dumps(bad) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="graph triple") as ei:
        load_webqsp_sample(path=p)
    assert ei.value.line == 2


# ---------------------------------------------------------------------------- generic JSONL
def _write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_generic_jsonl_over_a_triples_file(tmp_path):
    kb = tmp_path / "kb.tsv"
    kb.write_text("Splash\twritten_by\tBabaloo Mandel\nSplash\tdirected_by\tRon Howard\n", encoding="utf-8")
    qs = tmp_path / "questions.jsonl.gz"
    recs = [
        {
            "id": "q1",
            "question": "who wrote Splash",
            "answers": ["Babaloo Mandel"],
            "topic_entities": ["Splash"],
        },
        {"id": 2, "question": "who directed Splash", "answers": ["Ron Howard"], "hops": 1, "extra": "kept"},
    ]
    with gzip.open(qs, "wt", encoding="utf-8") as fh:
        fh.write("\n".join(json.dumps(r) for r in recs) + "\n\n")
    ds = load_jsonl_questions(qs, kg=str(kb))
    assert ds.name == "questions" and len(ds) == 2
    assert ds[0].topic_entities == ["Splash"] and ds[1].topic_entities is None
    assert ds[1].id == "2" and ds[1].hops == 1 and ds[1].meta["extra"] == "kept"
    kg = ds.kg_for(ds[0])
    assert kg.has_triple("Splash", "written_by", "Babaloo Mandel")
    assert len(load_jsonl_questions(qs, kg=str(kb), split="validation")) == 1


def test_generic_jsonl_kg_factory_called_once(tmp_path):
    qs = tmp_path / "q.jsonl"
    _write_jsonl(qs, [{"id": "a", "question": "q?", "answers": ["x"]}])
    calls = []

    def factory():
        calls.append(1)
        return MemoryKG([("x", "r", "y")], name="f")

    ds = load_jsonl_questions(qs, kg=factory)
    assert ds.kg_for(ds[0]) is ds.kg_for(ds[0]) and calls == [1]


@pytest.mark.parametrize(
    ("records", "reason"),
    [
        (
            [{"id": "a", "question": "q", "answers": ["x"]}, {"id": "a", "question": "q", "answers": ["y"]}],
            "duplicate",
        ),
        ([{"id": "a", "question": "q", "answers": "x"}], "'answers'"),
        ([{"id": "a", "answers": ["x"]}], "missing field 'question'"),
        ([{"id": "a", "question": "q", "answers": ["x"], "topic_entities": [1]}], "topic_entities"),
        ([{"id": "a", "question": "q", "answers": ["x"], "hops": "two"}], "hops"),
        ([["not", "an", "object"]], "JSON object"),
    ],
)
def test_generic_jsonl_malformed(tmp_path, records, reason):
    qs = tmp_path / "q.jsonl"
    _write_jsonl(qs, records)
    with pytest.raises(DataFormatError, match=reason) as ei:
        load_jsonl_questions(qs, kg=None)
    assert ei.value.line == len(records)


def test_generic_jsonl_invalid_json_names_the_line(tmp_path):
    qs = tmp_path / "q.jsonl"
    qs.write_text('{"id": "a", "question": "q", "answers": ["x"]}\n{"id": "b",\n', encoding="utf-8")
    with pytest.raises(DataFormatError, match="invalid JSON") as ei:
        load_jsonl_questions(qs, kg=None)
    assert ei.value.line == 2 and "q.jsonl:2" in str(ei.value)


# ---------------------------------------------------------------------------- registry
def test_registry_names_and_unknown_name():
    assert set(DATASETS) >= {
        "metaqa-1hop",
        "metaqa-2hop",
        "metaqa-3hop",
        "pathquestion-pq-2h",
        "pathquestion-pq-3h",
        "pathquestion-pql-2h",
        "pathquestion-pql-3h",
        "webqsp-sample",
    }
    with pytest.raises(ConfigError) as ei:
        get_dataset("metaqa-4hop")
    assert "metaqa-1hop" in str(ei.value) and "webqsp-sample" in str(ei.value)
    with pytest.raises(ConfigError, match="split"):
        get_dataset("metaqa-1hop", split="test")
    with pytest.raises(ConfigError, match="hops"):
        load_metaqa(4)


def test_get_dataset_passes_split_seed_limit():
    ds = get_dataset("metaqa-1hop", split="validation", seed=3, limit=7)
    assert isinstance(ds, Dataset) and len(ds) == 7 and ds.split == "validation"
    assert [q.id for q in ds] == [q.id for q in load_metaqa(1, "validation", seed=3, limit=7)]
    assert isinstance(ds[0], Question) and "questions=7" in repr(ds)
