"""DualR's explorer: the layer against a slow reference, pruning, backtracking, training, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from kg_agents.errors import ConfigError, DataFormatError
from kg_agents.kg import MemoryKG, verify_path
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.dualr.gnn import DualRConv, DualRExplorer, ExplorationGraph, ExplorerConfig, backtrack
from kg_agents.methods.dualr.gnn.encoding import (
    DEFAULT_ENCODER,
    MASKED_SUFFIX,
    LLMEmbeddingEncoder,
    TopicMaskedEncoder,
    encoder_name,
    get_text_encoder,
)
from kg_agents.methods.dualr.gnn.explorer import topk_per_group
from kg_agents.methods.dualr.train import (
    TrainConfig,
    TrainQuestion,
    evaluate_hits1,
    read_questions,
    set_f1,
    train_dualr,
)

# Questions about the contract KG (all answers are KG entities).
TINY_QUESTIONS = [
    TrainQuestion("who directed [Splash]", ["Ron Howard"], ["Splash"]),
    TrainQuestion("who directed [Big]", ["Penny Marshall"], ["Big"]),
    TrainQuestion("who directed [Cast Away]", ["Robert Zemeckis"], ["Cast Away"]),
    TrainQuestion("who directed [Parenthood]", ["Ron Howard"], ["Parenthood"]),
    TrainQuestion("who wrote [Splash]", ["Babaloo Mandel"], ["Splash"]),
    TrainQuestion("who wrote [Parenthood]", ["Babaloo Mandel"], ["Parenthood"]),
    TrainQuestion(
        "which films did [Tom Hanks] act in", ["Splash", "Big", "Cast Away", "Forrest Gump"], ["Tom Hanks"]
    ),
    TrainQuestion("which films did [Steve Martin] act in", ["Parenthood"], ["Steve Martin"]),
    TrainQuestion("who directed the films starring [Steve Martin]", ["Ron Howard"], ["Steve Martin"]),
    TrainQuestion("when was [Big] released", ["1988"], ["Big"]),
]


@pytest.fixture(scope="module")
def kg():
    return MemoryKG(CONTRACT_TRIPLES)


@pytest.fixture(scope="module")
def encoder():
    return get_text_encoder()


def test_conv_matches_reference_on_hand_made_edges():
    torch.manual_seed(0)
    d = 4
    conv = DualRConv(d)
    x = torch.randn(3, d)
    rels = torch.randn(5, d)
    q = torch.randn(2, d)
    src = torch.tensor([0, 1, 2, 2])
    dst = torch.tensor([0, 0, 1, 2])
    rel_index = torch.tensor([1, 4, 0, 3])
    q_index = torch.tensor([0, 0, 1, 1])
    alpha = conv.edge_attention(x, src, rels, rel_index, q, q_index)
    out = conv(x, torch.stack([src, dst]), rels[rel_index], alpha, num_targets=3)
    # slow reference: eq. 1 and eq. 2 edge by edge
    ref = torch.zeros(3, d)
    for i in range(4):
        hs, hr, hq = x[src[i]], rels[rel_index[i]], q[q_index[i]]
        a = torch.sigmoid(
            hs @ conv.att_s + hr @ conv.att_r + hq @ conv.att_q + (hr * hq) @ conv.att_qr + conv.att_bias
        )
        assert torch.allclose(alpha[i], a.squeeze(), atol=1e-6)
        ref[dst[i]] += a * (conv.lin.weight @ (hs * hr))
    assert torch.allclose(out, torch.relu(ref), atol=1e-5)
    assert repr(conv) == "DualRConv(4)"


def testtopk_per_group_keeps_k_best_of_each_group():
    score = torch.tensor([0.1, 0.9, 0.5, 0.7, 0.2, 0.8])
    group = torch.tensor([0, 0, 0, 1, 1, 1])
    kept = sorted(topk_per_group(score, group, 2).tolist())
    assert kept == [1, 2, 3, 5]
    assert sorted(topk_per_group(score, group, 10).tolist()) == list(range(6))


def test_backtrack_follows_highest_weight_and_identity():
    layers = [
        [
            ("Splash", "directed_by", False, "Ron Howard", 0.9),
            ("Splash", "written_by", False, "Babaloo Mandel", 0.4),
            ("Splash", None, False, "Splash", 0.5),
        ],
        [
            ("Ron Howard", "directed_by", True, "Parenthood", 0.3),
            ("Babaloo Mandel", "written_by", True, "Parenthood", 0.8),
            ("Ron Howard", None, False, "Ron Howard", 0.7),
        ],
    ]
    want = "Splash -> written_by -> Babaloo Mandel -> ~written_by -> Parenthood"
    assert backtrack(layers, "Parenthood").to_text() == want
    assert backtrack(layers, "Ron Howard").to_text() == "Splash -> directed_by -> Ron Howard"
    assert backtrack(layers, "Nobody").hops == ()


def test_relations_encoded_as_words_once_in_the_cache(kg, tmp_path, monkeypatch):
    monkeypatch.setenv("KG_AGENTS_CACHE", str(tmp_path))
    seen: list[str] = []

    class Recording:
        dim, name = 4, "recording"

        def __call__(self, texts):
            seen.extend(texts)
            return np.ones((len(texts), 4), np.float32)

    for _ in range(2):  # the second graph reads the encodings from the cache
        graph = ExplorationGraph(kg, Recording())
        graph.expand([graph.entity_id("Splash")])
        assert graph.relation_encodings().shape == (4, 4)
    assert sorted(seen) == ["directed by", "release year", "starred actors", "written by"]
    files = [p.name for p in (tmp_path / "dualr").iterdir()]
    assert len(files) == 1 and files[0].startswith("relations-") and files[0].endswith(".npy")


def test_explore_prunes_and_chains_are_kg_paths(kg, encoder):
    torch.manual_seed(0)
    model = DualRExplorer(ExplorerConfig(hidden=16, layers=2, top_k=(1, 2), encoder_dim=384))
    graph = ExplorationGraph(kg, encoder)
    q = torch.from_numpy(encoder(["who directed [Splash]", "which films did [Tom Hanks] act in"]))
    ex = model.explore(q, [["Splash"], ["Tom Hanks"]], graph)
    # the topic entity of question 0 has 4 edges; top-1 keeps one of them (plus the identity edge)
    assert ex.before_pruning[0][0].item() == 5 and ex.after_pruning[0][0].item() == 2
    for b in range(2):
        probs = ex.probs[ex.batch == b]
        assert torch.isclose(probs.sum(), torch.tensor(1.0), atol=1e-5)
        for e, _ in ex.top_candidates(b, 3):
            path = ex.chain(b, e)
            topic = ["Splash", "Tom Hanks"][b]
            if not path.hops:  # the topic entity itself (kept by identity edges)
                assert graph.id2ent[e] == topic
                continue
            assert verify_path(kg, path) and path.start == topic and path.end == graph.id2ent[e]
    assert sum(int(c.sum()) for c in ex.after_pruning) <= sum(int(c.sum()) for c in ex.before_pruning)


def test_explore_bad_options(kg, encoder):
    model = DualRExplorer(ExplorerConfig(hidden=8, layers=2, top_k=(3,)))
    graph = ExplorationGraph(kg, encoder)
    q = torch.from_numpy(encoder(["who directed [Splash]"]))
    with pytest.raises(ConfigError, match="layers"):
        model.explore(q, [["Splash"]], graph, layers=3)
    with pytest.raises(ConfigError, match="top_k"):
        model.explore(q, [["Splash"]], graph, top_k=(0,))
    with pytest.raises(ConfigError):
        ExplorerConfig(layers=2, top_k=(1, 2, 3))
    with pytest.raises(ConfigError):
        ExplorationGraph(kg, encoder, fanout_limit=0)
    # an unknown topic entity yields no candidate, not an exception
    ex = model.explore(q, [["No Such Film"]], graph)
    assert ex.top_candidates(0, 3) == []


def test_fanout_limit_counts_truncation(kg, encoder):
    graph = ExplorationGraph(kg, encoder, fanout_limit=2)
    ((codes, _),) = graph.expand([graph.entity_id("Tom Hanks")])
    assert len(codes) == 2 and graph.truncated == 1


def test_training_learns_tiny_kg_and_resumes(kg, encoder, tmp_path):
    def train(**options):  # on the tiny questions, validated on themselves
        return train_dualr(kg, TINY_QUESTIONS, TINY_QUESTIONS, encoder=encoder, progress=False, **options)

    cfg = TrainConfig(epochs=25, batch_size=5, lr=5e-3, patience=25, seed=1, checkpoint_every=1)
    mcfg = ExplorerConfig(hidden=32, layers=2, top_k=(10,))
    res = train(out_dir=tmp_path, model_config=mcfg, config=cfg)
    assert res.best_hits1 >= 0.9, res.history
    assert res.history[0]["loss"] > res.history[-1]["loss"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.pt", "last.pt"]  # no temporary files left
    model = DualRExplorer.load(res.best_path)
    assert model.meta["val_hits1"] == res.best_hits1 and model.config.top_k == (10, 10)
    # resume: nothing left to do after the last epoch, the history is kept
    res2 = train(out_dir=tmp_path, model_config=mcfg, config=cfg)
    assert res2.history == res.history
    # init: a new run starts from the best weights (lr 0: its first validation is the best's)
    frozen = TrainConfig(epochs=1, batch_size=5, lr=0.0, patience=1, seed=1)
    res3 = train(out_dir=tmp_path / "from-best", model_config=mcfg, config=frozen, init=res.best_path)
    assert res3.best_hits1 == res.best_hits1
    assert DualRExplorer.load(res3.best_path).meta["init"] == str(res.best_path)
    with pytest.raises(ConfigError, match="another model config"):
        train(
            out_dir=tmp_path / "other",
            model_config=ExplorerConfig(hidden=8, layers=2, top_k=(10,)),
            config=frozen,
            init=res.best_path,
        )
    with pytest.raises(ConfigError, match="another model config"):
        train(out_dir=tmp_path, model_config=ExplorerConfig(hidden=8, layers=2, top_k=(10,)), config=cfg)


def test_training_rejects_unusable_questions(kg, encoder, tmp_path):
    bad = [TrainQuestion("who is [Nobody]", ["x"], ["Nobody"])]
    with pytest.raises(ConfigError, match="no usable questions"):
        train_dualr(kg, bad, bad, out_dir=tmp_path, encoder=encoder, progress=False)


def test_checkpoint_errors(tmp_path):
    with pytest.raises(ConfigError, match="no DualR checkpoint"):
        DualRExplorer.load(tmp_path / "missing.pt")
    torch.save({"nothing": 1}, tmp_path / "bad.pt")
    with pytest.raises(DataFormatError, match="not a DualR checkpoint"):
        DualRExplorer.load(tmp_path / "bad.pt")


def test_read_questions_formats(tmp_path):
    p = tmp_path / "q.txt"
    p.write_text("who directed [Splash]\tRon Howard\nwhat did [Tom Hanks] star in\tBig|Splash\n")
    qs = read_questions(p)
    assert qs[1].answers == ["Big", "Splash"] and qs[1].topic_entities == ["Tom Hanks"]
    j = tmp_path / "q.jsonl"
    j.write_text('{"question": "q", "answers": ["a"], "topic_entities": ["t"]}\n')
    assert read_questions(j)[0].topic_entities == ["t"]
    bad = tmp_path / "bad.txt"
    bad.write_text("no tab and no brackets\n")
    with pytest.raises(DataFormatError, match=r"bad\.txt:1"):
        read_questions(bad)


class _CharTokenizer:
    """Token ids = character codes mod the vocabulary (enough for a tiny random causal LM)."""

    def __call__(self, text, return_tensors="pt"):
        return {"input_ids": torch.tensor([[ord(c) % 97 for c in text]])}


def test_llm_encoder_averages_first_and_last_layer_means():
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    cfg = transformers.GPT2Config(vocab_size=97, n_positions=64, n_embd=16, n_layer=3, n_head=2)
    model = transformers.GPT2LMHeadModel(cfg).eval()
    enc = LLMEmbeddingEncoder(model, _CharTokenizer(), name="tiny")
    # independent reference: the first block's output and the final (normed) hidden state, from hooks
    seen = {}
    model.transformer.h[0].register_forward_hook(
        lambda m, i, o: seen.__setitem__("first", o if isinstance(o, torch.Tensor) else o[0])
    )
    model.transformer.ln_f.register_forward_hook(lambda m, i, o: seen.__setitem__("last", o))
    texts = ["who directed [Splash]", "when was [Big] released"]
    out = enc(texts)
    assert out.shape == (2, 16) and out.dtype == np.float32 and enc.dim == 16
    model(**_CharTokenizer()(texts[1]))
    ref = ((seen["first"][0].mean(0) + seen["last"][0].mean(0)) / 2).detach().numpy()
    np.testing.assert_allclose(out[1], ref, rtol=1e-5, atol=1e-6)
    assert not np.allclose(out[0], out[1])
    assert enc([]).shape == (0, 16)
    assert encoder_name(enc) == "tiny"


def test_topic_masked_encoder_hides_the_entity_and_round_trips_by_name():
    calls = []

    def base(texts):
        calls.extend(texts)
        return np.asarray([[float(len(t)), float(t.count("entity"))] for t in texts], np.float32)

    enc = TopicMaskedEncoder(base)
    out = enc(["who directed [Splash]", "who directed [Cast Away]", "directed_by"])
    assert calls == ["who directed [entity]", "who directed [entity]", "directed_by"]
    assert np.array_equal(out[0], out[1]) and enc.dim == 2
    name = DEFAULT_ENCODER + MASKED_SUFFIX
    loaded = get_text_encoder(name)
    assert isinstance(loaded, TopicMaskedEncoder) and encoder_name(loaded) == name
    assert encoder_name(loaded.base) == DEFAULT_ENCODER
    with pytest.raises(ConfigError, match="empty encoder name"):
        get_text_encoder(" ")


def test_evaluate_f1_of_answer_sets(kg, encoder):
    torch.manual_seed(0)
    model = DualRExplorer(ExplorerConfig(hidden=16, layers=2, top_k=(10,)))
    graph = ExplorationGraph(kg, encoder)
    single = [q for q in TINY_QUESTIONS if len(q.answers) == 1]
    q_enc = encoder([q.question for q in single])
    s = evaluate_hits1(model, graph, single, q_enc, answer_sets=[(1, 1.0), (5, 0.0)])
    # one answer each: the top-1 set's F1 is Hits@1; a larger set dilutes a hit (F1 < 1)
    assert s["f1@1,1"] == pytest.approx(s["hits1"])
    assert s["f1@5,0"] < max(s["answer_recall"], 1e-9)
    assert set_f1({"a", "b"}, {"a", "c", "d"}) == pytest.approx(0.4)
    assert set_f1(set(), {"a"}) == 0.0
