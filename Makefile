# Engram: `make run` (service on 127.0.0.1:8001 with a local OpenSearch when OPENSEARCH_URL is unset)
# and `make test` (the whole suite against a real OpenSearch node). `make help` lists the rest.

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.engram-installed
TOKEN_FILE ?= $(HOME)/.config/engram/token
# Dependencies come from pyproject.toml; the repo itself runs from the working tree (no install),
# so one environment can serve several checkouts.
DEPS = $(shell $(PYTHON) -c "import tomllib;p=tomllib.load(open('pyproject.toml','rb'))['project'];print(' '.join(repr(d) for d in p['dependencies']+p['optional-dependencies']['dev']))")

BENCH_STAMP := $(VENV)/.engram-bench-installed
BENCH_DEPS = $(shell $(PYTHON) -c "import tomllib;p=tomllib.load(open('pyproject.toml','rb'))['project'];print(' '.join(repr(d) for d in p['optional-dependencies']['bench']))")

.PHONY: help install run test test-unit engine-start engine-stop bench-locomo bench-latency bench-latency-1m bench-ingest bench-embedder fuzz clean

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*##' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@echo "installing dependencies into $(VENV) (torch is large: a few minutes on a fresh machine) ..."
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(DEPS)
	@touch $(STAMP)

install: $(STAMP) ## create the virtual environment and install dependencies

run: $(STAMP) ## run the service (starts/reuses a local OpenSearch unless OPENSEARCH_URL is set)
	@mkdir -p $(dir $(TOKEN_FILE))
	@test -s $(TOKEN_FILE) || ($(PY) -c "import secrets;print(secrets.token_urlsafe(32))" > $(TOKEN_FILE) && chmod 600 $(TOKEN_FILE))
	@if [ -z "$$AUTOMEM_API_TOKEN" ]; then \
	  echo "API token (stored in $(TOKEN_FILE)): $$(cat $(TOKEN_FILE))"; \
	  echo "  curl -H \"Authorization: Bearer \$$(cat $(TOKEN_FILE))\" http://$${HOST:-127.0.0.1}:$${PORT:-8001}/health"; fi
	AUTOMEM_API_TOKEN=$${AUTOMEM_API_TOKEN:-$$(cat $(TOKEN_FILE))} $(PY) -m service

test: $(STAMP) ## run the whole test suite (starts a local OpenSearch node for the session)
	$(PY) -m pytest -q

test-unit: $(STAMP) ## only the pure unit tests (no engine)
	$(PY) -m pytest -q -m unit

engine-start: $(STAMP) ## start (or reuse) the local OpenSearch node and print its URL
	$(PY) -m service.localnode start

engine-stop: $(STAMP) ## stop the local OpenSearch node
	$(PY) -m service.localnode stop

$(BENCH_STAMP): $(STAMP)
	$(PY) -m pip install --quiet $(BENCH_DEPS)
	@touch $(BENCH_STAMP)

bench-locomo: $(STAMP) ## recall quality and latency on ../shared/data/locomo-dev.json
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
