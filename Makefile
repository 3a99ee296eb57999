# Everything a fresh machine needs is done by these targets: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test lint typecheck pytest browser bench bench-cutover bench-changefeed clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Stamps make re-runs instant; they are rebuilt whenever pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(VENV)/.installed

# The main job: migrate the embedded SQLite database (./var/agentfy.db, or $$AGENTFY_DATABASE_URL), create
# the platform organization, print a one-time admin key on the first start, run the workers, serve.
run: $(VENV)/.installed
	$(BIN)/agentfy serve

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench scripts

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# The web chat page's test drives Debian's headless Chromium.  As root (CI) a missing browser is installed
# from the distribution; otherwise the test skips with the reason (under CI=true it fails instead).  Never a
# downloaded browser build.
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get install -y -q chromium chromium-driver >/dev/null \
		|| { apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null; }; \
	else echo "chromium/chromium-driver absent and not root: the web chat page's browser test will be skipped"; fi

pytest: $(VENV)/.installed-dev browser
	$(BIN)/pytest

test: lint typecheck pytest

bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench.ids
	$(BIN)/python -m bench.store
	$(BIN)/python -m bench.router
	$(BIN)/python -m bench.events

# The change feed on PostgreSQL (commit -> another process's cache; gateway with 1, 2, 4 processes): needs the
# server at $$AGENTFY_TEST_PG_URL and, for the throughput part, wrk (apt-get install wrk).
bench-changefeed: $(VENV)/.installed-dev
	$(BIN)/python -m bench.changefeed

# The ID cutover against plain UPDATE ... FROM statements on both engines: 100,000 organizations by default
# (long: generation alone takes many minutes); `make bench-cutover ORGS=30000` for a smaller valid run,
# `ENGINE=sqlite` (or postgresql) for one engine; `SMALL=1` for the small-database comparison (3,000
# organizations unless ORGS, the baseline with the plain backup and FK check included).
bench-cutover: $(VENV)/.installed-dev
	$(BIN)/python -m bench.cutover $(if $(ORGS),--organizations $(ORGS),) $(if $(ENGINE),--engine $(ENGINE),) \
		$(if $(SMALL),--small,)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
