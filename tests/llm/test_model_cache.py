"""The embedded model's converted checkpoints (:mod:`kg_agents.llm.local_model`): one per cached dtype,
written whole or not at all, checked against their manifest, rebuilt when damaged, loaded as they are and
quietly; and ``dtype="auto"`` following the CPU probe.

Unit tests use stand-in checkpoints (no weights); integration tests (marker ``integration``) the real
SmolLM2-135M-Instruct, some in a cache of their own under ``tmp_path`` that borrows the real float32
checkpoint (a symlink, never written to).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from kg_agents.errors import ConfigError, ModelError
from kg_agents.llm import LocalChatModel, local_model
from kg_agents.llm.local_model import (
    MANIFEST,
    checkpoint_problem,
    converted_checkpoint_dir,
    ensure_converted,
    load_local_model,
    prepare_local_model,
    resolve_dtype,
)

ROOT = Path(__file__).resolve().parents[2]


def _fake_checkpoint(directory: Path, dtype: str, weights: bytes = b"weights" * 100) -> None:
    """What ``_convert`` writes, with stand-in contents: a config, weights and the manifest."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text('{"model_type": "llama"}', encoding="utf-8")
    (directory / "model.safetensors").write_bytes(weights)
    local_model._write_manifest(directory, dtype)


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty kg-agents cache for this test; nothing loaded in this process is reused."""
    monkeypatch.setenv("KG_AGENTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(local_model, "_LOADED", {})
    return tmp_path / "cache" / "models"


# --------------------------------------------------------------------------- unit: no weights
def test_checkpoint_problem_names_what_is_wrong(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    assert checkpoint_problem(ckpt, "float32") == f"no checkpoint at {ckpt}"
    ckpt.mkdir()
    (ckpt / "config.json").write_text("{}", encoding="utf-8")
    assert "no readable" in str(checkpoint_problem(ckpt, "float32"))  # an older or unfinished one
    _fake_checkpoint(ckpt, "float32")
    assert checkpoint_problem(ckpt, "float32") is None
    assert checkpoint_problem(ckpt, "float32", full=True) is None
    assert "not bfloat16" in str(checkpoint_problem(ckpt, "bfloat16"))
    weights = ckpt / "model.safetensors"
    weights.write_bytes(b"x" * weights.stat().st_size)  # same size, other bytes: only the hashes see it
    assert checkpoint_problem(ckpt, "float32") is None
    assert "SHA-256" in str(checkpoint_problem(ckpt, "float32", full=True))
    weights.write_bytes(b"half")  # cut short
    assert "bytes" in str(checkpoint_problem(ckpt, "float32"))
    weights.unlink()
    assert "missing" in str(checkpoint_problem(ckpt, "float32"))
    (ckpt / MANIFEST).write_text("{not json", encoding="utf-8")
    assert "no readable" in str(checkpoint_problem(ckpt, "float32"))


def test_each_cached_dtype_has_its_own_folder(own_cache: Path) -> None:
    assert converted_checkpoint_dir() == own_cache / "smollm2-135m-instruct"
    assert converted_checkpoint_dir("bfloat16") == own_cache / "smollm2-135m-instruct-bfloat16"
    with pytest.raises(ConfigError, match="cached dtypes"):
        converted_checkpoint_dir("int8")


def test_a_failed_conversion_leaves_no_cache(own_cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def killed(dtype: str, tmp: Path) -> None:
        (tmp / "model.safetensors").write_bytes(b"half of the weights")
        raise KeyboardInterrupt  # as a Ctrl-C mid-way

    monkeypatch.setattr(local_model, "_convert", killed)
    with pytest.raises(KeyboardInterrupt):
        ensure_converted("bfloat16")
    assert not own_cache.exists() or list(own_cache.iterdir()) == []  # no target, no temporary folder
    # a failed rebuild leaves the whole checkpoint there as it was
    target = converted_checkpoint_dir("bfloat16")
    _fake_checkpoint(target, "bfloat16")
    monkeypatch.setattr(local_model, "_convert", lambda dtype, tmp: 1 / 0)
    with pytest.raises(ModelError, match="could not convert"):
        ensure_converted("bfloat16", rebuild=True)
    assert checkpoint_problem(target, "bfloat16") is None
    assert [p.name for p in own_cache.iterdir()] == [target.name]


def test_prepare_converts_once_and_rebuilds_what_is_damaged(
    own_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[str] = []

    def convert(dtype: str, tmp: Path) -> None:
        made.append(dtype)
        _fake_checkpoint(tmp, dtype)

    monkeypatch.setattr(local_model, "_convert", convert)
    own_cache.mkdir(parents=True)
    stale = own_cache / ".smollm2-135m-instruct.k2j4.tmp"  # what a killed conversion left
    fresh = own_cache / ".smollm2-135m-instruct-bfloat16.x9q1.tmp"  # one running now, elsewhere
    stale.mkdir()
    fresh.mkdir()
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    first = prepare_local_model()
    assert [(w.dtype, w.converted) for w in first] == [("float32", True), ("bfloat16", True)]
    assert "no checkpoint" in str(first[0].reason) and made == ["float32", "bfloat16"]
    assert not stale.exists() and fresh.exists()
    again = prepare_local_model(["int8", "auto", "float32"])  # int8 loads float32's; auto one of them
    assert all(not w.converted for w in again) and made == ["float32", "bfloat16"]
    assert again[0].path == converted_checkpoint_dir("float32")
    weights = converted_checkpoint_dir("bfloat16") / "model.safetensors"
    weights.write_bytes(b"y" * weights.stat().st_size)
    assert not any(w.converted for w in prepare_local_model())  # sizes match: not seen without verify
    checked = prepare_local_model(verify=True)
    assert [w.converted for w in checked] == [False, True] and "SHA-256" in str(checked[1].reason)
    assert made == ["float32", "bfloat16", "bfloat16"]
    with pytest.raises(ConfigError, match="dtype"):
        prepare_local_model(["half"])


def test_auto_follows_the_cpu_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``auto`` is float32 on a CPU without native bfloat16 and bfloat16 where the probe says so, in
    ``resolve_dtype`` and in what ``load_local_model`` loads (its checkpoint and its dtype)."""
    loads: list[tuple[str, str]] = []

    def load(directory: Path, name: str) -> tuple[Any, Any]:
        loads.append((directory.name, name))
        return object(), object()

    for dtype in ("float32", "bfloat16"):
        (tmp_path / f"ckpt-{dtype}").mkdir()
    monkeypatch.setattr(
        local_model, "ensure_converted", lambda dtype="float32", **kw: tmp_path / f"ckpt-{dtype}"
    )
    monkeypatch.setattr(local_model, "_load", load)
    monkeypatch.setattr(local_model, "_LOADED", {})
    monkeypatch.setenv(local_model.DTYPE_ENV, "auto")
    monkeypatch.setattr(local_model, "cpu_has_bf16", lambda: False)
    assert resolve_dtype("auto") == resolve_dtype() == "float32"
    assert LocalChatModel(dtype="auto")._identifying_params["dtype"] == "float32"
    no_bf16 = load_local_model(dtype="auto")
    assert loads == [("ckpt-float32", "float32")] and load_local_model() is no_bf16
    assert load_local_model(dtype="float32") is no_bf16  # the same model: auto did not load another
    monkeypatch.setattr(local_model, "cpu_has_bf16", lambda: True)
    assert resolve_dtype("auto") == "bfloat16"
    assert load_local_model(dtype="auto") is not no_bf16
    assert loads[-1] == ("ckpt-bfloat16", "bfloat16")


def test_the_probe_reads_the_cpu_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model, "_cpu_flags", lambda: frozenset({"avx2", "avx512_bf16"}))
    assert local_model.cpu_has_bf16() is True
    monkeypatch.setattr(local_model, "_cpu_flags", lambda: frozenset({"amx_bf16"}))
    assert local_model.cpu_has_bf16() is True
    monkeypatch.setattr(local_model, "_cpu_flags", lambda: frozenset({"avx2", "avx512f"}))
    assert local_model.cpu_has_bf16() is False


def test_quiet_loading_restores_the_library_settings() -> None:
    from transformers import modeling_gguf_pytorch_utils as gguf_utils
    from transformers.utils import logging as hf_logging

    bars, verbosity, bar = hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity(), gguf_utils.tqdm
    with local_model.loading_output(), local_model._quiet_gguf():
        assert not hf_logging.is_progress_bar_enabled() and gguf_utils.tqdm is not bar
    assert (hf_logging.is_progress_bar_enabled(), hf_logging.get_verbosity()) == (bars, verbosity)
    assert gguf_utils.tqdm is bar
    local_model.set_loading_progress(True)
    try:
        with local_model._quiet_gguf():
            assert gguf_utils.tqdm is bar  # shown: left alone
    finally:
        local_model.set_loading_progress(False)


# --------------------------------------------------------------------------- integration: real weights
def _logits(model: Any, tok: Any) -> Any:
    import torch

    ids = tok("Who directed Splash? Ron", return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        return model(ids).logits.float()


@pytest.fixture
def borrowed_float32(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache of this test's own (its ``models`` folder returned) with the real float32 checkpoint
    linked in (converted first in the real cache if need be); nothing loaded before is reused."""
    source = ensure_converted("float32")
    monkeypatch.setenv("KG_AGENTS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(local_model, "_LOADED", {})
    models = tmp_path / "cache" / "models"
    models.mkdir(parents=True)
    (models / source.name).symlink_to(source, target_is_directory=True)
    return models


@pytest.mark.integration
def test_cached_weights_give_the_logits_of_converting() -> None:
    """Loading a cached checkpoint is converting the GGUF file again (in bfloat16: its parameters cast as
    ``cast_model`` does, the rotary frequencies left float32): the same weights and buffers, bit for bit,
    and logits within 1e-5 (float32 and bfloat16)."""
    import torch
    from transformers import AutoModelForCausalLM

    prepare_local_model()
    gguf = local_model.smollm2_gguf_path()
    with local_model.loading_output(), local_model._quiet_gguf():
        fresh = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name).eval()
    for dtype in ("float32", "bfloat16"):
        reference = local_model.cast_model(fresh, dtype)
        cached, tok = load_local_model(dtype=dtype)
        assert cached.dtype == reference.dtype == getattr(torch, dtype)
        want, got = dict(reference.named_buffers()), dict(cached.named_buffers())
        want.update(reference.state_dict())
        got.update(cached.state_dict())
        assert want.keys() == got.keys() and all(torch.equal(want[k], got[k]) for k in want)
        assert got["model.rotary_emb.inv_freq"].dtype == torch.float32
        torch.testing.assert_close(_logits(cached, tok), _logits(reference, tok), atol=1e-5, rtol=0)


@pytest.mark.integration
def test_a_load_from_the_cache_prints_nothing(
    capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prepare_local_model()
    capfd.readouterr()
    monkeypatch.setattr(local_model, "_LOADED", {})
    for dtype in ("float32", "bfloat16", "int8"):
        model, _ = load_local_model(dtype=dtype)
        assert model is not None
    local_model.load_local_tokenizer()
    assert capfd.readouterr() == ("", "")


@pytest.mark.integration
def test_a_damaged_cache_is_rebuilt(borrowed_float32: Path) -> None:
    import torch

    target = converted_checkpoint_dir("bfloat16")
    model, tok = load_local_model(dtype="bfloat16")  # converted from the float32 checkpoint
    assert checkpoint_problem(target, "bfloat16", full=True) is None
    want = _logits(model, tok)
    weights = target / "model.safetensors"
    for damage in ("cut", "header"):
        local_model._LOADED.clear()
        raw = weights.read_bytes()
        if damage == "cut":  # as a disk that filled up: the manifest's size shows it
            weights.write_bytes(raw[: len(raw) // 2])
            assert "bytes" in str(checkpoint_problem(target, "bfloat16"))
        else:  # the same size, an unreadable header: loading fails, and the cache is rebuilt once
            weights.write_bytes(b"\xff" * 8 + raw[8:])
            assert checkpoint_problem(target, "bfloat16") is None
        again, tok = load_local_model(dtype="bfloat16")
        assert checkpoint_problem(target, "bfloat16", full=True) is None
        assert again.dtype == torch.bfloat16
        torch.testing.assert_close(_logits(again, tok), want, atol=1e-5, rtol=0)


@pytest.mark.integration
def test_a_killed_conversion_leaves_no_half_cache(borrowed_float32: Path) -> None:
    """``kg-agents prepare`` killed (SIGKILL) while it writes the bfloat16 weights: the checkpoint is
    absent (or whole, had it just finished), never half; the next ``prepare`` makes it whole."""
    target = converted_checkpoint_dir("bfloat16")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "kg_agents.cli", "prepare", "--dtypes", "bfloat16"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            writing = [p for p in borrowed_float32.glob(f".{target.name}.*") if (p / "config.json").exists()]
            if writing:
                break
            time.sleep(0.005)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    assert not target.exists() or checkpoint_problem(target, "bfloat16", full=True) is None
    [w] = prepare_local_model(["bfloat16"])
    assert checkpoint_problem(w.path, "bfloat16", full=True) is None
    manifest = json.loads((w.path / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["dtype"] == "bfloat16" and "model.safetensors" in manifest["files"]


@pytest.mark.integration
def test_merging_an_adapter_prints_nothing(borrowed_float32: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A specialist adapter merged on its first use (a conversion too) is as quiet as a load."""
    from kg_agents.core.models import BUNDLED_SPECIALIST
    from kg_agents.llm.adapters import merged_model_dir

    capfd.readouterr()
    merged = merged_model_dir(BUNDLED_SPECIALIST)
    assert merged.parent == borrowed_float32 and (merged / "config.json").is_file()
    assert capfd.readouterr() == ("", "")
