"""The LoRA training loop shared by ``kg-agents train gcr`` on a CPU and on a GPU (``fit_lora``)."""

from __future__ import annotations

import pytest

from kg_agents.errors import ConfigError
from kg_agents.llm.adapters import fit_lora

ROWS = [([1, 2, 3, 4, 5, 6, 7, 8], 3), ([9, 10, 11, 12, 13], 2), ([14, 15, 16, 17], 1)]


def _tiny_llama():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(
        vocab_size=32,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        initializer_range=0.3,
    )
    return LlamaForCausalLM(cfg)


def _fit(model, rows, **kw):
    opts = {"pad": 0, "epochs": 1, "lr": 1e-3, "batch_size": 2, "lora_r": 4, "lora_alpha": 8, "log_every": 0}
    return fit_lora(model, rows, **{**opts, **kw})


def test_fit_lora_learns_its_rows_and_leaves_the_base_weights():
    import torch

    model = _tiny_llama()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    peft_model, losses, curve, seconds = _fit(model, ROWS, epochs=40, lr=1e-2, log_every=10)
    assert len(losses) == 40 * 2  # two batches an epoch
    assert [c[0] for c in curve] == list(range(10, 81, 10))
    assert curve[-1][1] < 0.25 * curve[0][1]  # it learnt the rows' continuations
    assert seconds > 0
    trained = {n for n, p in peft_model.named_parameters() if p.requires_grad}
    assert trained and all("lora_" in n for n in trained)
    merged = peft_model.merge_and_unload()
    changed = [k for k, v in merged.state_dict().items() if not torch.equal(v, before[k])]
    assert changed and all(k.split(".")[-2] in ("q_proj", "k_proj", "v_proj", "o_proj") for k in changed)


def test_fit_lora_is_seeded():
    import torch

    torch.manual_seed(1)
    _, a, _, _ = _fit(_tiny_llama(), ROWS, epochs=2, seed=5)
    torch.manual_seed(1)
    _, b, _, _ = _fit(_tiny_llama(), ROWS, epochs=2, seed=5)
    assert a == b


def test_fit_lora_refuses_bad_input():
    with pytest.raises(ConfigError, match="no training rows"):
        _fit(_tiny_llama(), [])
    with pytest.raises(ConfigError, match="device must be cpu or an available cuda"):
        _fit(_tiny_llama(), ROWS, device="tpu")
    with pytest.raises(ConfigError, match="at least 1"):
        _fit(_tiny_llama(), ROWS, batch_size=0)


def test_train_gcr_refuses_a_device_before_any_work(tmp_path):
    import torch

    from kg_agents.methods.gcr.train import train_gcr

    bad = "cuda" if not torch.cuda.is_available() else "tpu"
    with pytest.raises(ConfigError, match="device must be cpu or an available cuda"):
        train_gcr(device=bad, out=str(tmp_path / "lora"))
    assert not (tmp_path / "lora").exists()
