# Operator entry points. Each target installs what it needs first (idempotent).
# prefect-* targets use Docker Compose when a Docker engine answers, local processes otherwise.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
COMPOSE := docker compose -f docker/compose.yaml --env-file docker/.env
HAVE_DOCKER := $(shell docker info >/dev/null 2>&1 && echo yes)
FLOW ?= scrape-site
PROFILE ?= demo

.PHONY: bootstrap demo test test-e2e test-fast test-vectors lint bench demo-site job-board-site scaffold \
	prefect-up prefect-down prefect-flow prefect-ui prefect-build prefect-logs

bootstrap:
	@scripts/bootstrap.sh

## The main job on embedded defaults: the scrape-demo deployment end to end on the local stack.
demo: bootstrap
	$(PY) -m orchestration.local_stack demo

## Tests run on TEST_WORKERS pytest-xdist workers (each starts its own Redis, ES node,
## Prefect server on free loopback ports); a test file stays on one worker (its module
## fixtures are built once). TEST_WORKERS=0 runs in this process (pdb, -x).
TEST_WORKERS ?= 4
# The e2e tier's cases run whole stacks each (workers, browsers, Prefect runs) and mostly
# wait on them (1.3 of 2 cores busy with 2 workers): 3 at once, 889 -> 769 s on 2 cores.
E2E_WORKERS ?= 3
# Bytecode caches halve the import time of every worker and subprocess (some shells set
# PYTHONDONTWRITEBYTECODE; __pycache__ is ignored by git).
unexport PYTHONDONTWRITEBYTECODE
XDIST = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadfile)

## The suite but the long end-to-end cases: unit tests and the integration tests on real
## Redis, ES node, Chromium, proxies and sites; 14 min on 2 cores in CI (goal 8).
test: lint
	$(PY) -m pytest -m "not e2e" $(XDIST) $(PYTEST_ARGS)

## The long end-to-end cases: Prefect flow runs, Redis/ES clusters, the benchmarks' smoke
## runs, fault-injection crawls (tests/conftest.py marks them e2e); 31 min on 2 cores in CI (goal 15).
test-e2e: lint
	$(PY) -m pytest -m e2e $(if $(filter 0,$(E2E_WORKERS)),,-n $(E2E_WORKERS) --dist loadfile) $(PYTEST_ARGS)

## Rewrite the demo catalog's vectors kept for the tests (tests/indexing/vectors) after a change
## of the demo catalog, the item text or an offline model: the search package embeds live.
test-vectors: bootstrap
	WRITE_STORED_VECTORS=1 $(PY) -m pytest tests/search -q -p no:cacheprovider $(PYTEST_ARGS)

## Pure unit tests: no services, no subprocesses, nothing heavy on CPU (tests/conftest.py sorts
## them); budget 80 CPU-seconds (45 s on 2 cores), printed at the end.
test-fast: lint
	@TIMEFORMAT='test-fast: %U+%S CPU-seconds (budget 80), %R s wall'; \
	time $(PY) -m pytest -m "not integration" $(if $(filter 0,$(TEST_WORKERS)),,-n 2) $(PYTEST_ARGS)

## Ruff, the import contracts of .importlinter (layers, no cycles), the site profiles and
## what is generated from them (compose's site workers, the Kibana objects).
lint: bootstrap
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/mypy
	$(PY) -m crawlers.profiles check
	$(PY) -m orchestration.wiring --check

## Benchmarks: medians and same-run ratios (see bench/), each run's table written into
## docs/benchmarks.md with its date, machine and load (bench.results); `make bench
## BENCH=rendering` for one. Exit status 1 when one missed a goal or failed.
BENCH ?= frontier pipelines embedding search multilingual rendering reclaim scaling recrawl access blocks
bench: bootstrap
	$(PY) -m bench.results $(BENCH)

## Serve the demo shop on http://127.0.0.1:8000 in the foreground.
demo-site: bootstrap
	$(PY) -m standins.demo_site --port 8000

## Onboard a site from a sample of its pages (profile, fixtures, baseline; README "Adding a site"):
## make scaffold SITE=acme_shop URL=https://www.acme-shop.example/ [FORCE=1]
scaffold: bootstrap
	@test -n "$(SITE)" -a -n "$(URL)" || { echo "make scaffold needs SITE=<site> URL=<url>" >&2; exit 2; }
	$(PY) -m crawlers.scaffold $(SITE) $(URL) $(if $(FORCE),--force)

## Serve the jobs board (a profile-only site: docs/job-board-site.md) on http://127.0.0.1:8100.
job-board-site: bootstrap
	$(PY) -m standins.job_board_site --port 8100

prefect-up: bootstrap
ifeq ($(HAVE_DOCKER),yes)
	@test -f docker/.env || $(PY) docker/init_env.py
	$(COMPOSE) up -d
else
	$(PY) -m orchestration.local_stack up
endif

prefect-down:
ifeq ($(HAVE_DOCKER),yes)
	$(COMPOSE) down
else
	$(PY) -m orchestration.local_stack down
endif

## make prefect-flow FLOW=scrape-site PROFILE=idealista  |  FLOW=check-site-versions
## Flow parameters: PARAMS="base_url=http://127.0.0.1:8010 approval_timeout=0"
## (KEY=VALUE, space separated; a value is read as JSON when it parses, else as text).
## A paused deployment runs only with FORCE=1. Exit status 0 only when the run ends
## Completed; any other final state ends with one line naming it and its message.
BAD_PARAMS = $(strip $(foreach p,$(PARAMS),$(if $(findstring =,$(p)),$(filter =%,$(p)),$(p))))
FLOW_ARGS = $(FLOW) --site $(PROFILE) $(foreach param,$(PARAMS),--param $(param)) \
	$(if $(filter-out 0 no false,$(FORCE)),--force)
prefect-flow:
	$(if $(BAD_PARAMS),$(error flow parameter '$(firstword $(BAD_PARAMS))' is not KEY=VALUE (e.g. PARAMS="base_url=http://127.0.0.1:8010 approval_timeout=0")))
ifeq ($(HAVE_DOCKER),yes)
	$(COMPOSE) exec prefect-worker python -m orchestration.deployment_run $(FLOW_ARGS)
else
	$(PY) -m orchestration.local_stack flow $(FLOW_ARGS)
endif

prefect-ui:
ifeq ($(HAVE_DOCKER),yes)
	@echo "http://localhost:4200"
else
	@$(PY) -m orchestration.local_stack ui
endif

## Rebuild after code changes: images with Docker, else the venv and the ES node.
prefect-build: bootstrap
ifeq ($(HAVE_DOCKER),yes)
	@test -f docker/.env || $(PY) docker/init_env.py
	$(COMPOSE) build
endif

prefect-logs:
ifeq ($(HAVE_DOCKER),yes)
	$(COMPOSE) logs -f --tail 100
else
	$(PY) -m orchestration.local_stack logs
endif
