# hitl_app: `make run` serves the app on its embedded defaults; `make test` runs every test.
# While developing: `make check` (lint + unit tests, < 1 min) before each commit, `make test-fast` (no browser,
# no PostgreSQL, no `slow` test; about 3 min), `make test-one T=tests/path.py::name`. README "Developing" says when.
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
# Python writes its bytecode caches (__pycache__/, ignored by git) even where the environment says not to
# (PYTHONDONTWRITEBYTECODE=1 here): else every test server's gunicorn master compiles hitl_app from source
# (~0.3 s a start) and every pytest worker rewrites the tests' asserts again (collection 9 s -> 5 s a process).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run check test test-fast test-one lint setup setup-dev setup-browser setup-test bench bench-smoke bench-scale clean

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

# The test tools without a browser (ruff, mypy, pytest): all `make check` and `make test-fast` need.
setup-dev: $(VENV)/.installed-test

setup-browser: /usr/bin/chromium

setup-test: setup setup-dev setup-browser

# Prod mode serves with gunicorn + uvicorn (installed from requirements.txt, so Reflex picks them over
# granian): uvicorn's websockets negotiate permessage-deflate, which cuts streaming traffic ~14x
# (bench/README.md, round 3). GUNICORN_CMD_ARGS adds options, e.g. "--workers 3" with Redis.
export GUNICORN_CMD_ARGS ?= --graceful-timeout 5

run: setup
	$(VENV)/bin/reflex run --env prod --backend-host $(HOST) --frontend-port $(PORT) --backend-port $(PORT)

# pytest everywhere: no cache folder; a hang fails after `timeout` (pytest.ini), not after CI's 90 minutes.
PYTEST := $(PY) -m pytest -q -p no:cacheprovider
# The non-browser pass runs on PYTEST_WORKERS xdist workers (0 = no xdist). `loadfile`: a module's tests
# share a worker, so a module's app servers start once. (Not `loadgroup`: with pytest 9.2 and xdist 3.8 it
# groups nothing, pytest-xdist #1386, and every worker started its own copy of a module's servers.)
PYTEST_WORKERS ?= 4
XDIST = $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist loadfile)

lint: setup-dev
	$(VENV)/bin/ruff check hitl_app tests bench
	$(VENV)/bin/mypy hitl_app

# Before each commit: lint, incremental mypy (.mypy_cache) and the unit tests. No browser, no server.
check: lint
	$(PYTEST) -x tests/unit

# Everything but the browser, PostgreSQL, the packaging venv and the `slow` tests (pytest.ini: load, fault and
# restart tests of 10 s or more, a server that builds pages; make test runs them): unit, integration on SQLite,
# and the websocket tests against real (backend-only) app servers.
test-fast: setup setup-dev
	$(PYTEST) -n 4 --dist loadfile -m "not e2e and not postgres and not packaging and not slow" --durations=10 $(PYTEST_ARGS)

# One test, a module or a folder: make test-one T=tests/integration/ui/test_tab_state.py::test_name
test-one: setup setup-dev
	@[ -n "$(T)" ] || { echo 'usage: make test-one T=tests/path/test_x.py[::test_name]'; exit 2; }
	$(PYTEST) $(T) $(PYTEST_ARGS)

# The browser pass on E2E_WORKERS xdist workers, a test module per worker (`loadfile`: a module's servers
# and browser stay in one process).
E2E_WORKERS ?= 2
E2E_XDIST = $(if $(filter 0 1,$(E2E_WORKERS)),,-n $(E2E_WORKERS) --dist loadfile)

# Every test, in two pytest passes: sync Playwright (the browser tests) keeps an event loop running in the
# main thread for the rest of its session, which pytest-asyncio's tests cannot share. Both passes share one
# folder of front-end builds (tests/helpers/app_server.py: the pages are built once for the whole run).
# Each pass prints its 25 slowest tests; the browser pass runs also when the first failed (one CI run tells both).
test: lint setup setup-browser
	@shared=$$(mktemp -d -t hitl-shared-builds-XXXXXX); trap 'rm -rf "$$shared"' EXIT; \
	export HITL_TEST_SHARED_BUILDS="$$shared"; \
	echo '$(PYTEST) $(XDIST) -m "not e2e" --durations=25 $(PYTEST_ARGS)'; \
	$(PYTEST) $(XDIST) -m "not e2e" --durations=25 $(PYTEST_ARGS); first=$$?; \
	echo '$(PYTEST) $(E2E_XDIST) -m e2e --durations=25 $(PYTEST_ARGS)'; \
	$(PYTEST) $(E2E_XDIST) -m e2e --durations=25 $(PYTEST_ARGS); second=$$?; \
	echo "make test: non-browser pass exit $$first, browser pass exit $$second"; \
	[ $$first -eq 0 ] && [ $$second -eq 0 ]

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
