"""LoRA adapters on the embedded model: merged into a copy of its weights, cached once.

``resolve_chat_model("local:DIR")`` (``--model local:DIR``), with a folder holding a peft LoRA adapter
(``adapter_config.json``) for the embedded SmolLM2-135M-Instruct (one ``kg-agents train specialist``
wrote, say), is the embedded model with that adapter. The adapter is merged into the base weights once
and saved as a checkpoint under the kg-agents cache (``models/<base>+<folder>-<hash of the adapter>``,
written to a temporary folder and swapped into place), so every route of the embedded model (generation,
option ranking, batching, tool calling) runs on it unchanged.

Example:
    >>> merged_model_dir("runs/specialist").name                                      # doctest: +SKIP
    'SmolLM2-135M-Instruct+specialist-3f2a9c1b0d'
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any

from kg_agents.errors import ConfigError, ModelError

__all__ = [
    "ADAPTED_PREFIX",
    "BASE_MODEL",
    "adapter_folder",
    "adapters_used",
    "fit_lora",
    "is_adapter_dir",
    "lm_loss",
    "merged_model_dir",
    "new_lora",
    "note_adapter",
    "padded_batch",
    "save_adapter",
]

#: The model the adapters are trained on (named in ``adapter_config.json`` instead of a cache path).
BASE_MODEL = "HuggingFaceTB/SmolLM2-135M-Instruct"
#: The display name of the embedded model with an adapter merged starts with this, then the adapter's
#: folder name (``resolve_chat_model("local:DIR")``).
ADAPTED_PREFIX = "SmolLM2-135M-Instruct+"

_USED: dict[str, dict[str, str]] = {}
_USED_LOCK = threading.Lock()


def new_lora(model: Any, *, r: int, alpha: int, dropout: float = 0.05, top_layers: int = 0) -> Any:
    """``model`` with a fresh LoRA adapter of rank ``r`` and scale ``alpha`` on its attention projections
    (q/k/v/o), ready to train (peft).

    ``top_layers`` > 0 puts the adapter on the last ``top_layers`` decoder layers only: the backward pass
    then stops there, which roughly halves a training step's time with a third of the layers.
    """
    from peft import LoraConfig, get_peft_model

    n = int(model.config.num_hidden_layers)
    if top_layers < 0:
        raise ConfigError(f"top_layers must be >= 0, got {top_layers}")
    cfg = LoraConfig(
        r=r,
        lora_alpha=alpha,
        lora_dropout=dropout,
        task_type="CAUSAL_LM",
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        layers_to_transform=list(range(max(0, n - top_layers), n)) if 0 < top_layers < n else None,
    )
    return get_peft_model(model, cfg)


def padded_batch(rows: list[tuple[list[int], int]], pad: int) -> tuple[Any, Any, Any]:
    """``(input_ids, attention_mask, labels)`` for training on ``rows`` of ``(token ids, prompt length)``:
    right-padded with ``pad``, the loss only on the tokens after each prompt (labels -100 elsewhere)."""
    import torch

    width = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), width), pad)
    labels = torch.full((len(rows), width), -100)
    attn = torch.zeros((len(rows), width), dtype=torch.long)
    for b, (ids, plen) in enumerate(rows):
        input_ids[b, : len(ids)] = torch.tensor(ids)
        attn[b, : len(ids)] = 1
        labels[b, plen : len(ids)] = torch.tensor(ids[plen:])
    return input_ids, attn, labels


def lm_loss(model: Any, rows: list[tuple[list[int], int]], pad: int, device: str, bf16: bool) -> Any:
    """The language-model loss of ``model`` on ``rows`` (one padded batch, :func:`padded_batch`) on
    ``device``, under bfloat16 autocast when ``bf16``."""
    import torch

    input_ids, attn, labels = padded_batch(rows, pad)
    with torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=bf16):
        return model(
            input_ids=input_ids.to(device), attention_mask=attn.to(device), labels=labels.to(device)
        ).loss


def fit_lora(
    model: Any,
    rows: list[tuple[list[int], int]],
    *,
    pad: int,
    epochs: int,
    lr: float,
    batch_size: int,
    lora_r: int,
    lora_alpha: int,
    bf16: bool = False,
    device: str = "cpu",
    seed: int = 0,
    log_every: int = 10,
    label: str = "train",
) -> tuple[Any, list[float], list[list[float]], float]:
    """Train a new LoRA adapter on ``model`` with the language-model loss on ``rows`` of ``(token ids,
    prompt length)`` (the loss on the tokens after each prompt only): AdamW, a cosine schedule with 3%
    warm-up, the rows shuffled each epoch with ``seed``, ``batch_size`` rows per step.

    It needs torch, transformers and peft alone (no other part of kg-agents), so the same loop runs
    wherever the rows were encoded or were sent.

    Args:
        model: a causal LM (transformers); it is moved to ``device``.
        rows: the encoded examples.
        pad: the padding token id.
        epochs, lr, batch_size: the optimisation.
        lora_r, lora_alpha: the adapter's rank and scale (q/k/v/o; :func:`new_lora`).
        bf16: forward and backward under bfloat16 autocast.
        device: ``cpu`` or ``cuda``.
        seed: the data order.
        log_every: print ``"{label}: step i/n loss x (s)"`` to stderr every this many steps (0: silent).
        label: the log lines' prefix.

    Returns:
        ``(peft_model, losses per step, loss curve, seconds)``; the curve holds ``[step, mean loss of
        the last log_every steps]``.

    Raises:
        ConfigError: no rows, a bad ``device``, or ``epochs`` / ``batch_size`` below 1.
    """
    import math
    import random
    import sys
    import time

    import torch
    from transformers import get_cosine_schedule_with_warmup

    if not rows:
        raise ConfigError("no training rows")
    if epochs < 1 or batch_size < 1:
        raise ConfigError(f"epochs and batch_size must be at least 1, got {epochs} and {batch_size}")
    if device not in ("cpu", "cuda") or (device == "cuda" and not torch.cuda.is_available()):
        raise ConfigError(f"device must be cpu or an available cuda, got {device!r}")
    peft_model = new_lora(model, r=lora_r, alpha=lora_alpha)
    peft_model.to(device)
    peft_model.train()
    opt = torch.optim.AdamW([p for p in peft_model.parameters() if p.requires_grad], lr=lr)
    steps = epochs * math.ceil(len(rows) / batch_size)
    sched = get_cosine_schedule_with_warmup(opt, max(1, int(0.03 * steps)), steps)
    rng = random.Random(seed)
    losses: list[float] = []
    curve: list[list[float]] = []
    t0 = time.perf_counter()
    for _ in range(epochs):
        order = list(range(len(rows)))
        rng.shuffle(order)
        for i in range(0, len(order), batch_size):
            loss = lm_loss(peft_model, [rows[j] for j in order[i : i + batch_size]], pad, device, bf16)
            loss.backward()
            opt.step()
            sched.step()
            opt.zero_grad()
            losses.append(loss.item())
            if log_every > 0 and len(losses) % log_every == 0:
                window = losses[-log_every:]
                curve.append([len(losses), sum(window) / len(window)])
                print(
                    f"{label}: step {len(losses)}/{steps} loss {curve[-1][1]:.4f} "
                    f"({time.perf_counter() - t0:.0f} s)",
                    file=sys.stderr,
                    flush=True,
                )
    peft_model.to("cpu")
    return peft_model, losses, curve, time.perf_counter() - t0


def save_adapter(model: Any, folder: str | os.PathLike[str]) -> None:
    """Save a peft ``model``'s adapter to ``folder``, its config naming :data:`BASE_MODEL` instead of this
    machine's cache path (so the folder works on any machine)."""
    model.save_pretrained(str(folder))
    # peft's generated model card names this machine's cache path and says nothing of the training: the
    # training record beside the adapter is what describes it
    (Path(folder) / "README.md").unlink(missing_ok=True)
    path = Path(folder) / "adapter_config.json"
    cfg = json.loads(path.read_text())
    cfg["base_model_name_or_path"] = BASE_MODEL
    path.write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def is_adapter_dir(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a folder holding a LoRA adapter (``adapter_config.json``)."""
    return (Path(path) / "adapter_config.json").is_file()


def adapter_folder(adapter: str | os.PathLike[str]) -> Path:
    """The folder of a LoRA adapter, checked.

    Raises:
        ConfigError: no adapter there.
    """
    path = Path(adapter).expanduser()
    if not is_adapter_dir(path):
        raise ConfigError(
            f"{path} holds no adapter (no adapter_config.json); train one with "
            "`kg-agents train specialist --set out=DIR` and use --model local:DIR"
        )
    return path


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(path.glob("adapter_*")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:10]


def note_adapter(folder: str | os.PathLike[str]) -> None:
    """Record that this process loaded the LoRA adapter in ``folder`` (see :func:`adapters_used`)."""
    path = Path(folder).expanduser().resolve()
    entry = {"name": path.name, "digest": _digest(path), "path": str(path)}
    with _USED_LOCK:
        _USED[entry["path"]] = entry


def adapters_used() -> list[dict[str, str]]:
    """The LoRA adapters this process loaded on the embedded model (merged for a chat model, or GCR's
    path decoder): ``name`` (the folder's), ``digest`` (of its weights) and ``path``, sorted by path.
    An evaluation records them in ``run.json``."""
    with _USED_LOCK:
        return [dict(_USED[k]) for k in sorted(_USED)]


def merged_model_dir(adapter: str | os.PathLike[str]) -> Path:
    """A checkpoint folder of the embedded model with ``adapter`` merged (built once, then reused).

    Raises:
        ConfigError: no adapter at ``adapter``.
        ModelError: the adapter does not load on the embedded model.
    """
    from kg_agents.files import cache_root
    from kg_agents.llm.local_model import (
        DEFAULT_LOCAL_MODEL,
        ensure_converted,
        load_local_tokenizer,
        loading_output,
    )

    src = adapter_folder(adapter)
    target = cache_root("models") / f"{DEFAULT_LOCAL_MODEL}+{src.resolve().name}-{_digest(src)}"
    if (target / "config.json").is_file():
        note_adapter(src)
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".merge-", dir=target.parent))
    try:
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        with loading_output():
            base = AutoModelForCausalLM.from_pretrained(str(ensure_converted()), dtype=torch.float32)
            model = PeftModel.from_pretrained(base, str(src)).merge_and_unload()
            model.save_pretrained(str(tmp))
            load_local_tokenizer().save_pretrained(str(tmp))
        try:
            tmp.rename(target)
        except OSError:
            if not (target / "config.json").is_file():  # lost a race with another process: fine
                raise
    except (OSError, ValueError, RuntimeError, KeyError, ImportError) as exc:
        raise ModelError(f"could not merge the adapter at {src} into the embedded model: {exc}") from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    note_adapter(src)
    return target
