# Operator entry points. Each target installs what it needs first (idempotent).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: bootstrap demo test lint bench demo-site services

bootstrap:
	@scripts/bootstrap.sh

## The main job on embedded defaults: demo site + Redis + ES node, crawl, show the result.
demo: bootstrap
	$(PY) -m orchestration.demo_job

## The whole test suite (real Redis, ES node, Chromium, Prefect server on loopback).
test: bootstrap
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m pytest $(PYTEST_ARGS)

lint: bootstrap
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

## Serve the demo shop on http://127.0.0.1:8000 in the foreground.
demo-site: bootstrap
	$(PY) -m demo_site --port 8000
