"""The chat model a graph uses: ``llm=None`` means the embedded local model, in every method.

With a KG pack (:mod:`kg_agents.packs`; ``pack="auto"`` finds the bundled MetaQA pack on the MetaQA graph)
the embedded model runs with the pack's specialist adapter (LoRA trained by ``kg-agents train specialist``
to rank every decision the methods ask of it): a method's own where the pack has one (the MetaQA pack:
knowledge_navigator, graph_explore, graph_agent and gcr's general reasoner), the shared one for every other
method; ``adapter="none"`` gives the zero-shot model, ``adapter=DIR`` an adapter of your own.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kg_agents.errors import ConfigError
from kg_agents.llm import resolve_chat_model
from kg_agents.packs import Pack, resolve_pack

__all__ = [
    "ADAPTER_FORMS",
    "BUNDLED_SPECIALIST",
    "BUNDLED_SPECIALISTS",
    "check_adapter",
    "default_calibrate",
    "default_llm",
    "runs_adapter",
    "specialist_for",
]

#: The specialist adapter shipped in the package (MetaQA dev-train; its record is ``specialist_train.json``),
#: the bundled MetaQA pack's ``specialist`` component.
BUNDLED_SPECIALIST = Path(__file__).resolve().parent.parent / "specialist" / "checkpoints" / "metaqa"

#: A method's own bundled specialist where one measured better for it than the shared one (docs/results.md):
#: knowledge_navigator's was trained with the shared one's options on data that followed each question's
#: hop count (``gold_paths=hops``), which taught its relation votes the question's chain; graph_explore's
#: went on from the shared one (``init=specialist``) on graph_explore's decisions alone, its relation
#: chains among them; graph_agent's went on from graph_explore's (whose chain prompt it ranks with, its
#: ``relation_chain``) on graph_agent's chains, one relation long at 1 hop among them; gcr's general
#: reasoner's went on from the shared one on gcr's answer decisions, each training question decoded by
#: gcr's beam search (K = 5).
BUNDLED_SPECIALISTS = {
    "knowledge_navigator": BUNDLED_SPECIALIST.parent / "metaqa-kn",
    "graph_explore": BUNDLED_SPECIALIST.parent / "metaqa-ge",
    "graph_agent": BUNDLED_SPECIALIST.parent / "metaqa-ga",
    "gcr": BUNDLED_SPECIALIST.parent / "metaqa-gcr",
}

ADAPTER_FORMS = (
    "'auto' (the KG pack's specialist with the embedded model, else none), "
    "'specialist' (the method's bundled MetaQA specialist), 'none' (the zero-shot embedded model), "
    "or a folder holding a LoRA adapter from `kg-agents train specialist`"
)


def check_adapter(adapter: Any) -> str:
    """``adapter`` checked: a string of :data:`ADAPTER_FORMS` (a folder must hold an adapter)."""
    if not isinstance(adapter, str) or not adapter.strip():
        raise ConfigError(f"adapter must be one of {ADAPTER_FORMS}, got {adapter!r}")
    if adapter in ("auto", "none", "specialist"):
        return adapter
    from kg_agents.llm.adapters import adapter_folder

    adapter_folder(adapter)  # ConfigError naming the command that writes one
    return adapter


def specialist_for(pack: Pack | None, adapter: str = "auto", method: str | None = None) -> str | None:
    """The adapter folder the embedded model runs with for ``adapter`` (None: zero-shot): ``"auto"`` is
    ``pack``'s specialist for ``method`` (its own, else the pack's shared one; none without a pack),
    ``"specialist"`` the bundled MetaQA one (``method``'s own where it has one, :data:`BUNDLED_SPECIALISTS`,
    else the shared one), a folder itself.

    Raises:
        ConfigError: a bad ``adapter``, or ``"specialist"`` without the bundled adapter installed.
    """
    adapter = check_adapter(adapter)
    if adapter == "none":
        return None
    if adapter == "auto":
        folder = pack.specialist_for(method) if pack is not None else None
        return str(folder) if folder is not None else None
    if adapter != "specialist":
        return adapter
    bundled = BUNDLED_SPECIALISTS.get(method or "", BUNDLED_SPECIALIST)
    if not (bundled / "adapter_config.json").is_file():
        raise ConfigError(f"no bundled specialist adapter at {bundled}")
    return str(bundled)


#: The embedded model's settings carried over when it is given the specialist adapter.
_LOCAL_SETTINGS = (
    "temperature",
    "top_p",
    "max_tokens",
    "stop",
    "timeout",
    "max_retries",
    "streaming",
    "seed",
    "batch_size",
    "batch_window",
    "dtype",
    "prefix_cache",
)


def default_llm(
    llm: Any,
    *,
    kg: Any = None,
    adapter: str = "auto",
    method: str | None = None,
    pack: str | Pack | None = "auto",
) -> Any:
    """The chat model a graph uses: ``llm`` itself, a ``resolve_chat_model`` spec resolved
    (``"local"``, ``"openai:<model>"``), or the embedded local model when None.

    The embedded model (``None``, ``"local"``, or a ``LocalChatModel`` of the bundled weights, whatever its
    settings) runs with the adapter that ``adapter`` names for ``method`` with the KG pack ``pack``
    resolved for ``kg`` (:func:`~kg_agents.packs.resolve_pack`; no pack without a ``kg``, unless ``pack``
    is one), see :func:`specialist_for`: on the MetaQA graph, ``auto`` gives it the method's specialist of
    the bundled MetaQA pack, with the same settings (``max_tokens``, ...).
    Any other model is used as it is.

    Raises:
        ConfigError: a bad ``adapter`` or ``pack``, or an adapter other than ``auto``/``none`` with a model
            that is not the embedded one (an adapter is trained for the embedded model).
    """
    from kg_agents.llm.chat import LocalChatModel

    model = resolve_chat_model("local" if llm is None else llm) if isinstance(llm, (str, type(None))) else llm
    embedded = isinstance(model, LocalChatModel) and model.model_path is None
    if not embedded:
        if check_adapter(adapter) not in ("auto", "none"):
            raise ConfigError(
                f"adapter={adapter!r} is for the embedded model, not "
                f"{getattr(model, 'model_name', model)!r}; leave llm unset (or 'local') to use it"
            )
        return model
    resolved = None if kg is None and pack == "auto" else resolve_pack(kg, pack)
    folder = specialist_for(resolved, adapter, method)
    if folder is None:
        return model
    settings = {k: getattr(model, k) for k in _LOCAL_SETTINGS}
    return resolve_chat_model(f"local:{folder}", **settings)


def runs_adapter(model: Any) -> bool:
    """Whether ``model`` is the embedded model with a LoRA adapter merged (``local:DIR`` with an adapter
    folder, or what :func:`default_llm` gives with a pack): ``resolve_chat_model`` names such a model
    ``SmolLM2-135M-Instruct+<folder>``."""
    from kg_agents.llm.adapters import ADAPTED_PREFIX
    from kg_agents.llm.chat import LocalChatModel

    return isinstance(model, LocalChatModel) and str(model.model_name).startswith(ADAPTED_PREFIX)


def default_calibrate(calibrate: bool | None, model: Any) -> bool:
    """A method's ``calibrate`` option resolved: as given, or, when None (the default), on for every model
    but a specialist adapter. A specialist was trained on the plain scores of its decisions; taking the
    topic-only prompt's scores from them undoes part of what it learnt (knowledge_navigator at 1 hop
    scored lower calibrated than plain, see docs/dev/results-history.md)."""
    if calibrate is None:
        return not runs_adapter(model)
    return calibrate
