"""``kg-agents train specialist`` for real: the embedded model, LoRA, your own KG and questions files, a run
interrupted and resumed from its last checkpoint, and the adapter loaded back through the resolver."""

from __future__ import annotations

import json

import pytest

from kg_agents.errors import ConfigError
from kg_agents.eval.datasets import split_indices
from kg_agents.kg.testing import CONTRACT_TRIPLES

pytestmark = [pytest.mark.integration, pytest.mark.slow]

METHODS = ["knowledge_navigator", "graph_explore", "graph_agent", "graph_rag", "text_rag", "dualr", "gcr"]
QUESTIONS = [
    "who directed [Splash]\tRon Howard",
    "who wrote [Splash]\tBabaloo Mandel|Lowell Ganz",
    "who directed the films written by [Babaloo Mandel]\tRon Howard",
    "what films did [Ron Howard] direct\tSplash|Parenthood",
]


@pytest.fixture
def user_files(tmp_path):
    kg = tmp_path / "kb.txt"
    kg.write_text("".join(f"{h}|{r}|{t}\n" for h, r, t in CONTRACT_TRIPLES), encoding="utf-8")
    qs = tmp_path / "questions.txt"
    qs.write_text("\n".join(QUESTIONS) + "\n", encoding="utf-8")
    return str(kg), str(qs)


def options(user_files, out):
    kg, qs = user_files
    return dict(
        kg=kg,
        questions=qs,
        methods="graph_rag,knowledge_navigator",
        limit=0,
        batch_size=2,
        lora_r=2,
        lora_alpha=4,
        max_len=768,
        log_every=1,
        checkpoint_every=1,
        out=str(out),
    )


def test_train_on_your_own_kg_interrupted_and_resumed(user_files, tmp_path, monkeypatch, capsys):
    import torch

    from kg_agents.llm.adapters import is_adapter_dir
    from kg_agents.specialist import train as train_module
    from kg_agents.specialist.train import train_specialist

    out = tmp_path / "adapter"
    calls = {"n": 0}
    real_step = torch.optim.AdamW.step

    class Killed(Exception):
        pass

    def failing_step(self, *a, **k):  # the second optimiser step dies, as a killed run would
        calls["n"] += 1
        if calls["n"] == 2:
            raise Killed
        return real_step(self, *a, **k)

    monkeypatch.setattr(torch.optim.AdamW, "step", failing_step)
    with pytest.raises(Killed):
        train_specialist(**options(user_files, out))
    monkeypatch.setattr(torch.optim.AdamW, "step", real_step)
    state = json.loads((out / "last" / "state.json").read_text())
    assert state["step"] == 1 and not is_adapter_dir(out)  # only the checkpoint, no finished adapter
    assert json.loads((out / "decisions.json").read_text())["decisions"]

    def no_collection(*a, **k):
        raise AssertionError("the decisions of the first run are reused")

    monkeypatch.setattr(train_module, "collect_examples", no_collection)

    with pytest.raises(ConfigError, match="other options"):
        train_specialist(**{**options(user_files, out), "lr": 1e-3})

    info = train_specialist(**options(user_files, out))
    assert "resumed at step 1/" in capsys.readouterr().err
    assert info["steps"] == info["rows"] // 2 + info["rows"] % 2 and info["steps"] >= 2
    assert len(info["loss_curve"]) == info["steps"]  # step 1's loss kept from before the interruption
    assert info["decisions_per_role"]["graph_rag/answer:kept"] >= 1
    assert info["counts"]["questions"] == len(split_indices(len(QUESTIONS), "train"))  # seeded train split
    assert is_adapter_dir(out) and not (out / "last").exists()
    assert not (out / "README.md").exists()  # peft's model card (this machine's cache path) is not kept
    record = json.loads((out / "specialist_train.json").read_text())
    assert record["steps"] == info["steps"] and record["adapter_bytes"] > 0
    assert json.loads((out / "adapter_config.json").read_text())["base_model_name_or_path"].startswith(
        "HuggingFaceTB/"
    )
    run_every_method_on(out)


def run_every_method_on(adapter):
    """One question through every method with the embedded model running on ``adapter``."""
    from kg_agents.core.registry import create_graph
    from kg_agents.kg import MemoryKG
    from kg_agents.kg.base import verify_path
    from kg_agents.llm import resolve_chat_model

    llm = resolve_chat_model(f"local:{adapter}", max_tokens=32)
    assert llm.model_name == f"SmolLM2-135M-Instruct+{adapter.name}"
    kg = MemoryKG(CONTRACT_TRIPLES)
    for method in METHODS:
        options = {"num_beams": 3} if method == "gcr" else {}
        graph = create_graph(method, kg, llm=llm, **options)
        out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
        assert not out.get("errors"), (method, out.get("errors"))
        assert out["usage"]["llm_calls"] >= 1, method
        ends = {p.end for p in out["paths"]} | {kg.label(p.end) for p in out["paths"]}
        assert set(out["answers"]) <= ends, (method, out["answers"])  # every answer ends a returned path
        assert all(verify_path(kg, p) for p in out["paths"]), method


def test_a_folder_without_an_adapter_is_a_config_error(tmp_path):
    from kg_agents.llm import resolve_chat_model
    from kg_agents.llm.adapters import merged_model_dir

    with pytest.raises(ConfigError, match="holds no adapter"):
        merged_model_dir(tmp_path)
    with pytest.raises(ConfigError, match="no model directory"):
        resolve_chat_model(f"local:{tmp_path / 'missing'}")


def test_bad_options_are_config_errors(user_files, tmp_path):
    from kg_agents.specialist.train import train_specialist

    opts = options(user_files, tmp_path / "a")
    with pytest.raises(ConfigError, match="hops"):
        train_specialist(**{**opts, "questions": None, "kg": None, "hops": "one"})
    with pytest.raises(ConfigError, match="names no method"):
        train_specialist(**{**opts, "methods": " , "})
    with pytest.raises(ConfigError, match="device"):
        train_specialist(**{**opts, "device": "tpu"})
    with pytest.raises(ConfigError, match="needs questions"):
        train_specialist(**{**opts, "questions": None})
    for bad in (
        "graph_rag=3",
        "graph_rag/answer",
        "graph_rag/answer=-1",
        "graph_rag/answer=many",
        "dualr/answer=5",
        "graph_rag/answers=5",
    ):
        with pytest.raises(ConfigError, match="role_limits"):
            train_specialist(**{**opts, "role_limits": bad})
    with pytest.raises(ConfigError, match="gold_paths"):
        train_specialist(**{**opts, "gold_paths": "longest"})
    metaqa = {**opts, "questions": None, "kg": None, "hops": "1,2"}
    for bad in ("1", "1=-2", "one=5", "1=many", "3=10"):
        with pytest.raises(ConfigError, match="hop_limits"):
            train_specialist(**{**metaqa, "hop_limits": bad})
    with pytest.raises(ConfigError, match="with questions= use limit"):
        train_specialist(**{**opts, "hop_limits": "1=5"})


def test_hop_limits_give_each_metaqa_hop_set_its_own_count():
    from kg_agents.eval.datasets import load_metaqa
    from kg_agents.specialist.train import _hop_limits, _load_questions

    limits = _hop_limits(" 2=3 ,", [1, 2])
    assert limits == {"2": 3}
    _, qs = _load_questions(None, None, [1, 2], 5, 0, limits)
    assert [q.hops for q in qs] == [1] * 5 + [2] * 3
    # the same seeded questions as each hop set's own split, the first N of it
    assert [q.id for q in qs[5:]] == [q.id for q in load_metaqa(2, "train", seed=0, limit=3)]


def _data_settings(user_files, methods):
    """The data settings of a run on the user files' questions, as ``train_specialist`` writes them."""
    from kg_agents.specialist.train import DATA_VERSION

    kg, qs = user_files
    return dict(
        methods=methods,
        hops=[1],
        limit=0,
        hop_limits={},
        kg=kg,
        questions=qs,
        max_hops=3,
        gold_paths="hops",
        max_per_role=400,
        role_limits={},
        method_options={},
        seed=0,
        split="train",
        data_version=DATA_VERSION,
    )


def test_role_limits_cap_one_role_and_leave_the_others(user_files, tmp_path):
    from kg_agents.specialist.train import _role_limits, _training_decisions

    methods = ["graph_rag", "knowledge_navigator"]
    settings = _data_settings(user_files, methods)
    free, counts, _ = _training_decisions(tmp_path / "free", settings)
    assert {(d.method, d.role) for d in free} >= {
        ("graph_rag", "answer"),
        ("knowledge_navigator", "relation"),
    }
    limits = _role_limits(" graph_rag/answer=0 , knowledge_navigator/relation=1", methods)
    assert limits == {"graph_rag/answer": 0, "knowledge_navigator/relation": 1}
    capped, counts, _ = _training_decisions(tmp_path / "capped", {**settings, "role_limits": limits})
    roles = [(d.method, d.role) for d in capped]
    assert ("graph_rag", "answer") not in roles and roles.count(("knowledge_navigator", "relation")) == 1
    assert counts["graph_rag/answer:kept"] == 0 and counts["knowledge_navigator/relation:kept"] == 1
    rest = [
        d
        for d in free
        if (d.method, d.role) not in {("graph_rag", "answer"), ("knowledge_navigator", "relation")}
    ]
    assert len(capped) == len(rest) + 1  # the other roles keep every decision


def test_method_options_reach_the_methods_the_teacher_runs(user_files, tmp_path):
    from kg_agents.specialist.train import _method_options, _training_decisions

    methods = ["graph_rag", "knowledge_navigator"]
    # typed by the method's factory
    assert _method_options(" graph_rag.fanout_limit=50 , graph_rag.decide=generate", methods) == {
        "graph_rag": {"fanout_limit": 50, "decide": "generate"}
    }
    for bad in ("graph_rag=3", "graph_rag.=3", ".decide=rank", "gcr.num_beams=5", "graph_rag.beams=5"):
        with pytest.raises(ConfigError):
            _method_options(bad, methods)
    with pytest.raises(ConfigError, match="fanout_limit"):
        _method_options("graph_rag.fanout_limit=many", methods)
    settings = _data_settings(user_files, methods)
    ranked, counts, _ = _training_decisions(tmp_path / "ranked", settings)
    assert counts["graph_rag/answer"] > 0 and not counts["graph_rag/free_text"]
    # graph_rag writing its answer: no ranked decision of its own to learn, the other method untouched
    generated, counts, _ = _training_decisions(
        tmp_path / "generated",
        {**settings, "method_options": _method_options("graph_rag.decide=generate", methods)},
    )
    assert counts["graph_rag/free_text"] > 0 and not counts["graph_rag/answer"]
    assert {d.method for d in generated} == {"knowledge_navigator"}
    assert len(generated) == sum(d.method == "knowledge_navigator" for d in ranked)


def _base_model():
    import torch
    from transformers import AutoModelForCausalLM

    from kg_agents.llm.local_model import ensure_converted, load_local_tokenizer

    return (
        AutoModelForCausalLM.from_pretrained(str(ensure_converted()), dtype=torch.float32),
        load_local_tokenizer(),
    )


CHAT = [{"role": "user", "content": "Which relation of Splash answers 'who directed [Splash]'?"}]
REPLIES = ["[directed_by]", "[starred_actors]", "[release_year]", "[written_by]"]


def test_rank_loss_is_the_softmax_over_the_scores_the_ranking_reads():
    import torch

    from kg_agents.llm.ranking import score_local
    from kg_agents.specialist.teacher import Example
    from kg_agents.specialist.train import _rank_rows, rank_loss

    model, tok = _base_model()
    model.eval()
    ex = Example("relation", "m", "q", CHAT, REPLIES, [0, 3])
    (prompt, conts, right), *_ = _rank_rows([ex], tok, 4096, 8, 0)[0]
    scores, _ = score_local(model, tok, CHAT, REPLIES)
    logp = torch.log_softmax(torch.tensor(scores), 0)
    with torch.no_grad():
        loss = float(rank_loss(model, prompt, conts, right, "cpu"))
    assert loss == pytest.approx(-float(torch.logsumexp(logp[[0, 3]], 0)), abs=1e-3)
    # the sample keeps every right option and at least one wrong one
    (_, conts2, right2), *_ = _rank_rows([ex], tok, 4096, 2, 0)[0]
    assert len(conts2) == 3 and len(right2) == 2


def test_a_rank_step_raises_the_right_option_above_the_others():
    import torch

    from kg_agents.llm.adapters import new_lora
    from kg_agents.llm.ranking import score_local
    from kg_agents.specialist.teacher import Example
    from kg_agents.specialist.train import _rank_rows, rank_loss

    base, tok = _base_model()
    model = new_lora(base, r=4, alpha=8, dropout=0.0, top_layers=4)
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all(any(f"layers.{i}." in n for i in range(26, 30)) for n in trainable)
    ex = Example("relation", "m", "q", CHAT, REPLIES, [2])  # wrong on purpose: only training can move it
    (row,), _ = _rank_rows([ex], tok, 4096, 8, 0)
    before = score_local(model, tok, CHAT, REPLIES)[0]
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=5e-3)
    for _ in range(8):
        rank_loss(model, *row, "cpu").backward()
        opt.step()
        opt.zero_grad()
    after = score_local(model, tok, CHAT, REPLIES)[0]
    assert max(range(4), key=lambda i: after[i]) == 2
    assert after[2] - max(after[:2] + after[3:]) > before[2] - max(before[:2] + before[3:])


def test_objective_options_are_checked(user_files, tmp_path):
    from kg_agents.specialist.train import train_specialist

    opts = options(user_files, tmp_path / "b")
    with pytest.raises(ConfigError, match="objective"):
        train_specialist(**{**opts, "objective": "contrastive"})
    with pytest.raises(ConfigError, match="max_options"):
        train_specialist(**{**opts, "max_options": 1})
    with pytest.raises(ConfigError, match="lora_layers"):
        train_specialist(**{**opts, "lora_layers": -1})


def test_training_goes_on_from_an_adapter_given_as_init(user_files, tmp_path):
    from safetensors.torch import load_file

    from kg_agents.specialist.train import train_specialist

    first = tmp_path / "first"
    # one decision a step: the first step of the schedule has no learning rate (its warm-up)
    opts = {**options(user_files, first), "checkpoint_every": 0, "batch_size": 1}
    train_specialist(**opts)
    second = tmp_path / "second"
    # the init adapter's rank holds (lora_r is not used); its weights are where training starts
    info = train_specialist(**{**opts, "out": str(second), "init": str(first), "lora_r": 8, "lora_alpha": 16})
    assert info["init"] == str(first) and info["steps"] >= 2
    assert json.loads((second / "adapter_config.json").read_text())["r"] == 2
    a = load_file(str(first / "adapter_model.safetensors"))
    b = load_file(str(second / "adapter_model.safetensors"))
    assert a.keys() == b.keys()
    assert any(not (a[k] == b[k]).all() for k in a)  # trained on from there
    with pytest.raises(ConfigError, match="holds no adapter"):
        train_specialist(**{**opts, "out": str(tmp_path / "third"), "init": str(tmp_path / "missing")})
    with pytest.raises(ConfigError, match="init"):
        train_specialist(**{**opts, "out": str(tmp_path / "third"), "init": 3})
