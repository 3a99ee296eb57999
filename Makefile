# Everything a fresh machine needs is done by these targets: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test test-fast lint typecheck pytest pytest-fast fuzz browser constraints bench bench-cutover bench-changefeed bench-instructions bench-openai-latency bench-openai-rate bench-scheduler bench-search bench-mcp clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Every install takes the exact versions the test-suite passed with (constraints.txt; `make constraints`
# refreshes them). Stamps make re-runs instant; they are rebuilt whenever pyproject.toml or the pins change.
$(VENV)/.installed: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[server,postgres]'
	touch $@

$(VENV)/.installed-dev: pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
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

# The suite runs on two worker processes (pytest-xdist): serially it takes longer than its budget of
# 20 minutes on a 2-core machine.  Each worker has its own PostgreSQL databases, SQLite files and temporary
# directory; `--dist worksteal` lets an idle worker take queued tests from a busy one, so a few long tests at the
# end do not leave the other worker waiting.  `make pytest PYTEST_WORKERS=4` for a bigger machine; to debug,
# run serially: `$(BIN)/pytest -n 0 tests/...`.
PYTEST_WORKERS ?= 2
PYTEST_PARALLEL = -n $(PYTEST_WORKERS) --dist worksteal

pytest: $(VENV)/.installed-dev browser
	$(BIN)/pytest $(PYTEST_PARALLEL)

test: lint typecheck pytest

# The inner loop: the same checks without the tests marked slow (wheel builds, forks, threads, full files).
pytest-fast: $(VENV)/.installed-dev
	$(BIN)/pytest $(PYTEST_PARALLEL) -m "not slow"

test-fast: lint typecheck pytest-fast

# Opt-in exploration, never part of `make test`: Schemathesis with fresh random data and every check against a
# live `agentfy serve` on its own database (a SQLite file, or a PostgreSQL database created on
# $$AGENTFY_TEST_PG_URL and dropped), two organizations seeded, for SECONDS.  Fails on any failure; the summary
# gives the seed that replays the run (SEED=...) and the reports directory under var/fuzz/.
SECONDS ?= 300
ENGINE  ?= sqlite
fuzz: $(VENV)/.installed-dev
	$(BIN)/python -m tests.fuzz --seconds $(SECONDS) --engine $(ENGINE) $(if $(SEED),--seed $(SEED),) \
		$(if $(WORKERS),--workers $(WORKERS),)

# Newest versions pyproject.toml allows, installed into a throw-away environment and pinned, transitive
# dependencies included. Run it to take updates (then `make test`), and commit constraints.txt with the result.
CONSTRAINTS_VENV := $(VENV)-constraints
constraints:
	rm -rf $(CONSTRAINTS_VENV)
	$(PYTHON) -m venv $(CONSTRAINTS_VENV)
	$(CONSTRAINTS_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(CONSTRAINTS_VENV)/bin/python -m pip install --quiet -e '.[dev]'
	{ echo "# Every package of \`pip install -e '.[dev]'\` (transitive ones included) at the version the test-suite"; \
	  echo "# passed with; the Makefile installs with -c constraints.txt. Regenerate with \`make constraints\`."; \
	  $(CONSTRAINTS_VENV)/bin/python -m pip freeze --all --exclude-editable | grep -v '^pip=='; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf $(CONSTRAINTS_VENV)

bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench.ids
	$(BIN)/python -m bench.store
	$(BIN)/python -m bench.router
	$(BIN)/python -m bench.events
	$(BIN)/python -m bench.gateway
	$(BIN)/python -m bench.runtime
	$(BIN)/python -m bench.api_mix
	$(BIN)/python -m bench.openai_rate

# Instruction counts (callgrind) of the store's one-per-transaction look-up vs the raw driver: a ratio that load
# on the machine cannot move (needs valgrind: apt-get install valgrind).
bench-instructions: $(VENV)/.installed-dev
	$(BIN)/python -m bench.instructions

# The change feed on PostgreSQL (commit -> another process's cache; gateway with 1, 2, 4 processes): needs the
# server at $$AGENTFY_TEST_PG_URL and, for the throughput part, wrk (apt-get install wrk).
bench-changefeed: $(VENV)/.installed-dev
	$(BIN)/python -m bench.changefeed

# The OpenAI-compatible endpoint: streaming first-token latency vs the upstream's own (a fake upstream on a local
# port), and its rate vs calling the runtime directly (offline model).
bench-openai-latency: $(VENV)/.installed-dev
	$(BIN)/python -m bench.openai_latency

bench-openai-rate: $(VENV)/.installed-dev
	$(BIN)/python -m bench.openai_rate

# The cron scheduler's claiming (Scheduler.tick) vs a raw FOR UPDATE SKIP LOCKED claim-and-advance loop on
# PostgreSQL (the server at $$AGENTFY_BENCH_PG_URL).
bench-scheduler: $(VENV)/.installed-dev
	$(BIN)/python -m bench.scheduler

# The ID cutover against plain UPDATE ... FROM statements on both engines: 100,000 organizations by default
# (long: generation alone takes many minutes); `make bench-cutover ORGS=30000` for a smaller valid run,
# `ENGINE=sqlite` (or postgresql) for one engine; `SMALL=1` for the small-database comparison (3,000
# organizations unless ORGS, the baseline with the plain backup and FK check included).
bench-cutover: $(VENV)/.installed-dev
	$(BIN)/python -m bench.cutover $(if $(ORGS),--organizations $(ORGS),) $(if $(ENGINE),--engine $(ENGINE),) \
		$(if $(SMALL),--small,)

# Full-text search (ours vs the engine's raw query, same filters) on 100,000 memory documents in one tenant of
# ten, both engines (PostgreSQL at $$AGENTFY_BENCH_PG_URL); `make bench-search DOCUMENTS=10000` for a quick
# run, `SEARCH_ENGINE=sqlite` (or postgresql) for one engine (not ENGINE: `fuzz` gives that a default),
# `HYBRID=1` for the hybrid search (vectors) against full-text only.
# Loading takes minutes.
bench-search: $(VENV)/.installed-dev
	$(BIN)/python -m bench.search $(if $(DOCUMENTS),--documents $(DOCUMENTS),) \
		$(if $(SEARCH_ENGINE),--engine $(SEARCH_ENGINE),) $(if $(HYBRID),--hybrid,)

bench-mcp: $(VENV)/.installed-dev
	$(BIN)/python -m bench.mcp_calls

clean:
	rm -rf $(VENV) $(CONSTRAINTS_VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
