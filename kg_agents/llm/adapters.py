"""LoRA adapters on the embedded model: merged into a copy of its weights, cached once.

``resolve_chat_model("local:specialist")`` (``--model local:specialist``) is the embedded model with the
bundled specialist adapter (trained by ``kg-agents train specialist`` on the MetaQA dev-train split, for
every ranked decision of the methods); ``"local:DIR"`` with a folder holding ``adapter_config.json`` (one
you trained) works the same way. The
adapter is merged into the base weights once and saved as a checkpoint under the kg-agents cache
(``models/<base>+<adapter hash>``, written to a temporary folder and renamed into place), so every route
of the embedded model (generation, option ranking, batching) runs on it unchanged.

Example:
    >>> merged_model_dir("specialist").name                                            # doctest: +SKIP
    'SmolLM2-135M-Instruct+specialist-3f2a9c1b0d'
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from kg_agents.errors import ConfigError, ModelError

__all__ = ["BUNDLED_SPECIALIST", "is_adapter_dir", "merged_model_dir", "resolve_specialist"]

#: The specialist adapter shipped in the package (trained on the MetaQA dev-train split).
BUNDLED_SPECIALIST = Path(__file__).resolve().parent / "checkpoints" / "specialist-metaqa"


def is_adapter_dir(path: str | os.PathLike[str]) -> bool:
    """True when ``path`` is a folder holding a LoRA adapter (``adapter_config.json``)."""
    return (Path(path) / "adapter_config.json").is_file()


def resolve_specialist(adapter: str | os.PathLike[str]) -> Path:
    """The folder of a specialist adapter: ``"specialist"`` (the bundled one) or a trained folder.

    Raises:
        ConfigError: no adapter there.
    """
    path = BUNDLED_SPECIALIST if str(adapter) == "specialist" else Path(adapter).expanduser()
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


def merged_model_dir(adapter: str | os.PathLike[str]) -> Path:
    """A checkpoint folder of the embedded model with ``adapter`` merged (built once, then reused).

    Raises:
        ConfigError: no adapter at ``adapter``.
        ModelError: the adapter does not load on the embedded model.
    """
    from kg_agents.files import cache_root
    from kg_agents.llm.local_model import DEFAULT_LOCAL_MODEL, ensure_converted, load_local_tokenizer

    src = resolve_specialist(adapter)
    name = "specialist" if src == BUNDLED_SPECIALIST else src.name
    target = cache_root("models") / f"{DEFAULT_LOCAL_MODEL}+{name}-{_digest(src)}"
    if (target / "config.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".merge-", dir=target.parent))
    try:
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

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
    return target
