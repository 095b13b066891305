"""GCR fine-tuning (eq. 8): adapter resolution, the ``adapter`` option, and a real LoRA round trip."""

from __future__ import annotations

import json

import pytest

from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.base import verify_path
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.methods.gcr.adapter import BUNDLED_ADAPTER, resolve_adapter
from kg_agents.methods.gcr.graph import create_gcr_graph
from tests.methods.gcr.helpers import tiny_decoder


def test_resolve_adapter_rejects_a_directory_without_an_adapter(tmp_path):
    with pytest.raises(ConfigError, match=r"adapter_config\.json"):
        resolve_adapter(tmp_path)
    with pytest.raises(ConfigError, match=r"adapter_config\.json"):
        resolve_adapter(tmp_path / "missing")
    (tmp_path / "adapter_config.json").write_text("{}")
    assert resolve_adapter(str(tmp_path)) == tmp_path


def test_adapter_and_decoder_together_are_refused():
    kg = MemoryKG(CONTRACT_TRIPLES)
    with pytest.raises(ConfigError, match="local decoder only"):
        create_gcr_graph(kg, adapter="bundled", decoder=tiny_decoder(), general_llm=None)
    with pytest.raises(ConfigError, match="local decoder only"):
        create_gcr_graph(kg, adapter="bundled", decoder="vllm:http://127.0.0.1:9/v1", general_llm=None)


def test_the_adapter_decoder_runs_in_the_dtype_of_the_chat_model(monkeypatch):
    from kg_agents.llm import LocalChatModel
    from kg_agents.methods.gcr import graph as gcr_graph

    seen = []

    def load(adapter, **kwargs):
        seen.append((adapter, kwargs.get("dtype")))
        return tiny_decoder()

    monkeypatch.setattr(gcr_graph, "load_gcr_decoder", load)
    kg = MemoryKG(CONTRACT_TRIPLES)
    create_gcr_graph(kg, adapter="bundled", llm=LocalChatModel(dtype="bfloat16"))
    create_gcr_graph(kg, adapter="bundled", general_llm=None)  # no chat model: $KG_AGENTS_DTYPE decides
    assert seen == [("bundled", "bfloat16"), ("bundled", None)]


@pytest.mark.integration
def test_the_adapter_decoder_in_bfloat16(monkeypatch):
    """The bundled adapter merged in float32, then its parameters cast (the rotary frequencies stay
    float32, as ``from_pretrained`` leaves them); ``$KG_AGENTS_DTYPE`` reaches it; it still decodes."""
    import torch

    from kg_agents.kg import open_kg
    from kg_agents.methods.gcr.adapter import load_gcr_decoder

    monkeypatch.setenv("KG_AGENTS_DTYPE", "bfloat16")
    dec = load_gcr_decoder("bundled", path_scores="trie")
    assert dec.model.dtype == torch.bfloat16
    assert dec.model.model.rotary_emb.inv_freq.dtype == torch.float32
    metaqa = open_kg("metaqa")
    graph = create_gcr_graph(metaqa, decoder=dec, general_llm=None, num_beams=3)
    out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert out["paths"][0].to_text() == "Splash -> directed_by -> Ron Howard"


def test_adapter_is_a_command_line_option():
    from kg_agents.cli.commands import MethodSetup

    setup = MethodSetup.from_args("gcr", ["adapter=bundled", "general_llm=none", "num_beams=5"], None)
    assert setup.factory_options["adapter"] == "bundled"
    assert setup.factory_options["general_llm"] is None
    assert setup.factory_options["num_beams"] == 5


def test_bundled_adapter_describes_its_training_run():
    info = json.loads((BUNDLED_ADAPTER / "gcr_train.json").read_text())
    assert info["split"] == "train" and info["steps"] > 0 and info["examples"] > 0
    assert (BUNDLED_ADAPTER / "adapter_config.json").is_file()
    assert (BUNDLED_ADAPTER / "adapter_model.safetensors").stat().st_size < 8_000_000


@pytest.mark.integration
def test_train_gcr_then_decode_paths_that_verify(tmp_path):
    """Two real LoRA steps on the local model, then the gcr graph decodes with the adapter merged."""
    from kg_agents.kg import open_kg
    from kg_agents.methods.gcr.adapter import BASE_MODEL
    from kg_agents.methods.gcr.train import train_gcr

    info = train_gcr(
        hops="1", limit=2, epochs=1, batch_size=1, max_len=192, log_every=0, out=str(tmp_path / "lora")
    )
    assert info["steps"] == info["examples"] == 2
    assert all(isinstance(x, float) and x > 0 for x in (info["first_loss"], info["last_loss"]))
    saved = json.loads((tmp_path / "lora" / "gcr_train.json").read_text())
    assert saved["split"] == "train" and saved["hops"] == [1]
    config = json.loads((tmp_path / "lora" / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == BASE_MODEL  # no path of this machine

    metaqa = open_kg("metaqa")
    graph = create_gcr_graph(
        metaqa, adapter=str(tmp_path / "lora"), general_llm=None, num_beams=3, max_hops=1
    )
    out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert out["paths"] and not out["errors"]
    assert all(verify_path(metaqa, p) and p.start == "Splash" for p in out["paths"])
    assert out["usage"]["llm_calls"] == 1


@pytest.mark.integration
def test_bundled_adapter_decodes_the_asked_relation():
    """The shipped adapter ranks the path of the asked relation first and answers from it."""
    from kg_agents.kg import open_kg

    metaqa = open_kg("metaqa")
    graph = create_gcr_graph(metaqa, adapter="bundled", general_llm=None, num_beams=3)
    out = graph.invoke({"question": "who directed [Splash]", "topic_entities": ["Splash"]})
    assert all(verify_path(metaqa, p) and p.start == "Splash" for p in out["paths"])
    assert out["paths"][0].to_text() == "Splash -> directed_by -> Ron Howard"
    assert out["answers"][0] == "Ron Howard"
