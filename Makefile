# deidweb — every command a developer or operator needs. `make` alone lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml 2>/dev/null | sha256sum | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 8000
export DJANGO_SETTINGS_MODULE ?= deidweb.settings.local

.PHONY: help install warm browser java run web worker migrate demo test test-fast lint format bench bench-grid bench-scale bench-spark bench-load up down schema clean

help: ## List the targets
	@echo "deidweb make targets:"
	@grep -E '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "} {printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "Python 3.11 is required ($(PYTHON) not found)"; exit 1; }
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e ".[dev]"
	@rm -f $(VENV)/.installed-*
	@touch $(STAMP)

install: $(STAMP) ## Create .venv and install deidweb with its dependencies (idempotent)
	@mkdir -p var/media var/broker/queue var/broker/processed && chmod 700 var var/media

# The engine's numba kernels, compiled into var/numba/sources-<digest> once per change of
# the engine's sources (cli_warmup.py; numba_cache.py: the settings set NUMBA_CACHE_DIR to
# var/numba and the engine picks its sources' folder under it). `make run` does not wait
# for them: the worker starts the compilation in the background on a cold cache
# (deidweb/celery.py).
warm: install ## Compile the engine's numba kernels into var/numba (nothing to do when they are current)
	$(BIN)/python manage.py deid warmup --if-cold

java: ## Install Java 17 for the Apache Spark (local mode) tests if it is missing
	@if ! command -v java >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless; \
	  else echo "Java is missing: run 'sudo apt-get install openjdk-17-jre-headless'"; exit 1; fi; \
	fi

browser: ## Install Debian's Chromium for the browser tests if it is missing
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else echo "Chromium is missing: run 'sudo apt-get install chromium'"; exit 1; fi; \
	fi

migrate: install ## Apply database migrations (embedded SQLite unless DATABASE_URL is set)
	$(BIN)/python manage.py migrate --noinput

demo: migrate ## Load the demo organization, users and data set (prints the logins)
	$(BIN)/python manage.py seed_demo

run: demo ## Set up everything, then serve the app and two workers on http://127.0.0.1:8000 (Ctrl-C stops them)
	@HOST=$(HOST) PORT=$(PORT) BIN=$(BIN) bash bin/run

web: install ## Serve the web app only
	$(BIN)/python manage.py runserver $(HOST):$(PORT)

worker: install ## Start a Celery worker only (it takes every queue)
	$(BIN)/celery -A deidweb worker --loglevel=INFO --concurrency=2

test: install warm browser java ## Run the whole test suite (PostgreSQL, Redis, a real worker, Chromium, Java for Spark); ends with its 25 slowest tests
	DJANGO_SETTINGS_MODULE=deidweb.settings.test $(BIN)/pytest --durations=25

test-fast: install warm ## Run the tests without the browser, worker, API-contract and slow tests
	DJANGO_SETTINGS_MODULE=deidweb.settings.test $(BIN)/pytest -m "not browser and not services and not contract and not slow"

lint: install ## Ruff (lint + format check), mypy and the layers' import contracts
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy apps deidweb
	$(BIN)/lint-imports

format: install ## Format the code with ruff
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: install warm ## Run the benchmarks and write docs/benchmarks.md
	$(BIN)/python bench/run.py

ROWS ?= 100000000
bench-scale: install warm ## ROWS (default 100 M) synthetic rows as CSV through upload, profile, measure, search and apply in bounded memory, engine and product path; into docs/benchmarks.md
	$(BIN)/python bench/bench_scale.py --rows $(ROWS)
	$(BIN)/python bench/bench_web_scale.py --csv /tmp/deidweb-bench-scale/scale_$(ROWS)_20260101.csv
	$(BIN)/python bench/run.py --assemble-only

bench-spark: install warm ## ROWS (default 100 M) rows through the Spark path (Apache Spark local mode via Spark Connect) beside the polars engine; into docs/benchmarks.md
	$(BIN)/python bench/bench_spark.py --rows $(ROWS)
	$(BIN)/python bench/run.py --assemble-only

bench-load: install warm ## Load test: 50 users browsing, uploading and polling while 10 jobs run (gunicorn, Celery, PostgreSQL, Redis; 2 minutes); into docs/benchmarks.md
	$(BIN)/python bench/bench_load.py
	$(BIN)/python bench/run.py --assemble-only

ARX_SRC ?=
bench-grid: install warm ## ARX's k-anonymity grid under ARX's protocol, deidweb and ARX 3.9.2 interleaved (ARX_SRC=a checkout of arx-deidentifier/arx at aacd487; ARX_BENCHMARK=a folder of ARX's benchmark data sets, optional), into docs/bench/grid.md
	@test -n "$(ARX_SRC)" || { echo "bench-grid measures ARX here: make bench-grid ARX_SRC=/path/to/arx (git clone https://github.com/arx-deidentifier/arx; git checkout aacd487)"; exit 1; }
	$(BIN)/python bench/bench_grid.py --arx-src $(ARX_SRC) $(if $(ARX_BENCHMARK),--benchmark $(ARX_BENCHMARK))

schema: install ## Write the OpenAPI schema to docs/openapi.yaml
	$(BIN)/python manage.py spectacular --file docs/openapi.yaml

up: ## Start the deployment stack with docker compose (PostgreSQL, Redis, web, worker)
	docker compose up --build

down: ## Stop the docker compose stack
	docker compose down

clean: ## Remove the embedded database, stored files and the broker folder (var/)
	rm -rf var
