"""Which chat model a graph runs: the embedded model with its KG pack's specialist (``adapter="auto"``; the
bundled MetaQA pack's on MetaQA), zero-shot without a pack or with ``adapter="none"``, a user's own model
as it is; bad adapters are ConfigErrors."""

from __future__ import annotations

import pytest

from kg_agents.core.models import (
    BUNDLED_SPECIALIST,
    BUNDLED_SPECIALISTS,
    check_adapter,
    default_llm,
    specialist_for,
)
from kg_agents.core.registry import create_graph
from kg_agents.errors import ConfigError
from kg_agents.kg import MemoryKG
from kg_agents.kg.testing import CONTRACT_TRIPLES
from kg_agents.packs import bundled_packs
from tests.fakes import FakeChat

ADAPTER_METHODS = ["knowledge_navigator", "graph_agent", "graph_explore", "graph_rag", "text_rag", "dualr"]


def metaqa_pack():
    (pack,) = bundled_packs()
    return pack


def test_auto_picks_the_pack_s_specialist_and_none_without_a_pack():
    assert (BUNDLED_SPECIALIST / "adapter_config.json").is_file()
    assert specialist_for(metaqa_pack()) == str(BUNDLED_SPECIALIST)
    assert specialist_for(None) is None
    assert specialist_for(metaqa_pack(), "none") is None
    assert specialist_for(None, "specialist") == str(BUNDLED_SPECIALIST)


def test_a_graph_named_metaqa_is_not_the_metaqa_graph():
    # the pack is found by the KG's content, not its name
    assert (
        default_llm(None, kg=MemoryKG(CONTRACT_TRIPLES, name="metaqa")).model_name == "smollm2-135m-instruct"
    )


@pytest.mark.parametrize("method", ["knowledge_navigator", "graph_explore", "graph_agent", "gcr"])
def test_these_methods_have_their_own_bundled_specialists(method):
    own = BUNDLED_SPECIALISTS[method]
    assert (own / "adapter_config.json").is_file() and own != BUNDLED_SPECIALIST
    metaqa = metaqa_pack()
    assert specialist_for(metaqa, "auto", method) == str(own)
    assert specialist_for(None, "specialist", method) == str(own)
    assert specialist_for(metaqa, "none", method) is None
    assert specialist_for(None, "auto", method) is None
    for other in ("graph_rag", "text_rag", "dualr", None):  # every other method: the shared one
        assert specialist_for(metaqa, "auto", other) == str(BUNDLED_SPECIALIST)
    # each has its own (graph_agent's went on from graph_explore's, whose chain prompt it ranks)
    assert len({BUNDLED_SPECIALISTS[m] for m in BUNDLED_SPECIALISTS}) == len(BUNDLED_SPECIALISTS) == 4


@pytest.mark.parametrize("bad", ["", "bogus-folder", 3, None])
def test_a_bad_adapter_is_a_config_error(bad):
    with pytest.raises(ConfigError, match="adapter"):
        check_adapter(bad)


def test_a_folder_without_an_adapter_names_the_command_that_writes_one(tmp_path):
    with pytest.raises(ConfigError, match="kg-agents train specialist"):
        check_adapter(str(tmp_path))


def test_your_own_model_is_used_as_it_is_and_takes_no_adapter():
    chat = FakeChat()
    kg = MemoryKG(CONTRACT_TRIPLES, name="metaqa")
    assert default_llm(chat, kg=kg) is chat
    assert default_llm(chat, kg=kg, adapter="none") is chat
    with pytest.raises(ConfigError, match="is for the embedded model"):
        default_llm(chat, kg=kg, adapter="specialist")


def test_the_embedded_models_settings_go_with_its_adapter(monkeypatch):
    import kg_agents.core.models as models
    from kg_agents.llm.chat import LocalChatModel

    seen = {}

    def resolve(spec, **settings):
        seen.update(settings, spec=spec)
        return "adapted"

    monkeypatch.setattr(models, "resolve_chat_model", resolve)
    from kg_agents.packs import bundled_packs

    metaqa = next(p for p in bundled_packs() if p.name == "metaqa")
    kg = MemoryKG(CONTRACT_TRIPLES)
    model = LocalChatModel(dtype="bfloat16", prefix_cache=False, batch_size=4)
    assert default_llm(model, kg=kg, pack=metaqa) == "adapted"
    assert seen["spec"].startswith("local:") and seen["dtype"] == "bfloat16"
    assert seen["prefix_cache"] is False and seen["batch_size"] == 4


@pytest.mark.parametrize("method", ADAPTER_METHODS)
def test_every_factory_asks_for_its_own_adapter(monkeypatch, method):
    import kg_agents.core.factory as factory

    asked = {}
    real = factory.default_llm

    def spy(llm, **kwargs):
        asked.update(kwargs)
        return real(llm, **kwargs)

    monkeypatch.setattr(factory, "default_llm", spy)
    create_graph(method, MemoryKG(CONTRACT_TRIPLES), llm=FakeChat())
    assert asked["method"] == method and asked["adapter"] == "auto"


@pytest.mark.parametrize("method", ADAPTER_METHODS)
def test_every_factory_checks_its_adapter_when_built(method):
    with pytest.raises(ConfigError, match="adapter"):
        create_graph(method, MemoryKG(CONTRACT_TRIPLES), llm=FakeChat(), adapter="nowhere")


def test_calibration_is_on_by_default_except_for_a_specialist_adapter():
    from kg_agents.core.models import default_calibrate, runs_adapter
    from kg_agents.llm.chat import LocalChatModel

    specialist = LocalChatModel(model="SmolLM2-135M-Instruct+metaqa")
    assert runs_adapter(specialist) and not runs_adapter(LocalChatModel()) and not runs_adapter(FakeChat())
    assert default_calibrate(None, FakeChat()) is True and default_calibrate(None, LocalChatModel()) is True
    assert default_calibrate(None, specialist) is False
    assert default_calibrate(True, specialist) is True and default_calibrate(False, FakeChat()) is False
