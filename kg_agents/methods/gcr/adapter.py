"""GCR's LoRA adapters at inference: the bundled MetaQA adapter, or one written by ``kg-agents train gcr``."""

from __future__ import annotations

from pathlib import Path as FsPath
from typing import Any

from kg_agents.errors import ConfigError, ModelError
from kg_agents.llm.adapters import BASE_MODEL, note_adapter
from kg_agents.llm.local_model import (
    cast_model,
    ensure_converted,
    load_local_tokenizer,
    loading_output,
    resolve_dtype,
)
from kg_agents.methods.gcr.local_decoder import LocalConstrainedDecoder

__all__ = ["BASE_MODEL", "BUNDLED_ADAPTER", "load_gcr_decoder", "resolve_adapter"]

#: The adapter shipped in the package (trained on the MetaQA dev-train split).
BUNDLED_ADAPTER = FsPath(__file__).resolve().parent / "checkpoints" / "metaqa"


def resolve_adapter(adapter: str | FsPath) -> FsPath:
    """The directory of a GCR LoRA adapter: ``"bundled"`` or a path written by ``kg-agents train gcr``.

    Args:
        adapter: ``"bundled"`` (the package's MetaQA adapter) or a directory holding
            ``adapter_config.json``.

    Raises:
        ConfigError: the directory (or the bundled adapter) does not exist or holds no adapter.

    Example:
        >>> resolve_adapter("runs/gcr-lora")                                              # doctest: +SKIP
        PosixPath('runs/gcr-lora')
    """
    path = BUNDLED_ADAPTER if str(adapter) == "bundled" else FsPath(adapter).expanduser()
    if not (path / "adapter_config.json").is_file():
        what = "the bundled GCR adapter" if str(adapter) == "bundled" else "a GCR adapter"
        raise ConfigError(
            f"{path} is not {what} (no adapter_config.json there); "
            "train one with `kg-agents train gcr --set out=DIR` and pass adapter=DIR"
        )
    return path


def load_gcr_decoder(adapter: str | FsPath, *, dtype: str | None = None, **kwargs: Any) -> Any:
    """A ``LocalConstrainedDecoder`` over a fresh copy of the local model with a GCR LoRA adapter merged.

    Args:
        adapter: ``"bundled"`` or an adapter directory (see :func:`resolve_adapter`).
        dtype: the dtype the merged model runs in (see :func:`~kg_agents.llm.local_model.resolve_dtype`;
            None: ``$KG_AGENTS_DTYPE``, else float32); the adapter is merged in float32 first.
        **kwargs: options of :class:`~kg_agents.methods.gcr.local_decoder.LocalConstrainedDecoder`.

    Raises:
        ConfigError: no adapter at ``adapter``.
        ModelError: the adapter cannot be loaded (e.g. trained on another base model).

    Example:
        >>> dec = load_gcr_decoder("bundled")                                             # doctest: +SKIP
        >>> create_gcr_graph(open_kg("metaqa"), decoder=dec)                              # doctest: +SKIP
    """
    import torch
    from transformers import AutoModelForCausalLM

    path = resolve_adapter(adapter)
    name = resolve_dtype(dtype)
    try:
        from peft import PeftModel

        tok = load_local_tokenizer()
        with loading_output():
            base = AutoModelForCausalLM.from_pretrained(str(ensure_converted()), dtype=torch.float32)
            model = cast_model(PeftModel.from_pretrained(base, str(path)).merge_and_unload(), name)
        model.eval()
    except (OSError, ValueError, ImportError, RuntimeError, KeyError) as exc:
        raise ModelError(f"could not load the GCR adapter at {adapter}: {exc}") from exc
    note_adapter(path)
    return LocalConstrainedDecoder(model, tok, **kwargs)
