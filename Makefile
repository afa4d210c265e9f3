# hitl_app: `make run` serves the app on its embedded defaults; `make test` runs every test.
# Nothing here downloads anything but packages from PyPI, npm and Debian.

SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
PORT ?= 3000
# Loopback only unless a host is given: HOST=0.0.0.0 make run listens on every interface.
HOST ?= 127.0.0.1
BUN_VERSION := 1.4.4
TOOLS := $(CURDIR)/.tools

# Reflex, offline: no telemetry, no version check, bun from the npm registry (not its installer).
export PATH := $(TOOLS)/node_modules/.bin:$(CURDIR)/$(VENV)/bin:$(PATH)
export REFLEX_TELEMETRY_ENABLED := false
export REFLEX_CHECK_LATEST_VERSION := false
export REFLEX_USE_SYSTEM_BUN := true
export NPM_CONFIG_REGISTRY ?= $(shell npm config get registry 2>/dev/null || echo https://registry.npmjs.org/)
export PYTHONUNBUFFERED := 1

.PHONY: run test lint setup setup-test bench bench-smoke bench-scale clean

# The stamps hold a copy of the requirements they installed: a file whose time changed but whose
# content did not (Reflex touches requirements.txt on start) does not reinstall anything.
$(VENV)/.installed: requirements.txt
	@if cmp -s requirements.txt $@; then touch $@; else \
	  set -e; [ -x $(PY) ] || $(PYTHON) -m venv $(VENV); \
	  $(PY) -m pip install -q --upgrade pip; \
	  $(PY) -m pip install -q -r requirements.txt; \
	  cp requirements.txt $@; fi

$(VENV)/.installed-test: $(VENV)/.installed requirements-test.txt
	@if cmp -s requirements-test.txt $@; then touch $@; else \
	  set -e; $(PY) -m pip install -q -r requirements-test.txt; cp requirements-test.txt $@; fi

$(TOOLS)/node_modules/.bin/bun:
	npm install --prefix $(TOOLS) --no-audit --no-fund --loglevel=error bun@$(BUN_VERSION)

setup: $(VENV)/.installed $(TOOLS)/node_modules/.bin/bun

# Debian's Chromium for the end-to-end tests (Playwright never downloads a browser here).
/usr/bin/chromium:
	if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; fi

setup-test: setup $(VENV)/.installed-test /usr/bin/chromium

# Prod mode serves with gunicorn + uvicorn (installed from requirements.txt, so Reflex picks them over
# granian): uvicorn's websockets negotiate permessage-deflate, which cuts streaming traffic ~14x
# (bench/README.md, round 3). GUNICORN_CMD_ARGS adds options, e.g. "--workers 3" with Redis.
export GUNICORN_CMD_ARGS ?= --graceful-timeout 5

run: setup
	$(VENV)/bin/reflex run --env prod --backend-host $(HOST) --frontend-port $(PORT) --backend-port $(PORT)

# Lint first (seconds), then two pytest processes: sync Playwright (tests/e2e) keeps an event loop running
# in the main thread for the rest of its session, which pytest-asyncio's tests cannot share. The non-browser
# tests run on PYTEST_WORKERS xdist workers (a test file stays on one worker; 0 = no xdist).
PYTEST_WORKERS ?= 3
XDIST = $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

lint: setup-test
	$(VENV)/bin/ruff check hitl_app tests bench
	$(VENV)/bin/mypy hitl_app

test: lint
	$(PY) -m pytest -q -p no:cacheprovider $(XDIST) --ignore=tests/e2e $(PYTEST_ARGS)
	$(PY) -m pytest -q -p no:cacheprovider tests/e2e $(PYTEST_ARGS)

bench: setup-test
	$(PY) -m bench $(BENCH_ARGS)

bench-smoke: setup-test
	$(PY) -m bench --smoke

# 3 workers + Redis + PostgreSQL: sessions, idle tabs, concurrent submits, the inbox (docs/scale.md).
# SCALE_ARGS e.g. "--rows sessions --sessions 50" or "--smoke".
bench-scale: setup-test
	$(PY) -m bench scale $(SCALE_ARGS)

clean:
	rm -rf .web .states $(VENV) $(TOOLS)
