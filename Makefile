# Everything a fresh machine needs is done by these targets: `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: run test lint typecheck pytest bench clean

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

# Until the gateway exists, the main job migrates the embedded SQLite database (./var/agentfy.db, or
# $$AGENTFY_DATABASE_URL) and mints a few IDs.
run: $(VENV)/.installed
	$(BIN)/agentfy db upgrade
	$(BIN)/agentfy id new agent -n 5

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench scripts

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

pytest: $(VENV)/.installed-dev
	$(BIN)/pytest

test: lint typecheck pytest

bench: $(VENV)/.installed-dev
	$(BIN)/python -m bench.ids
	$(BIN)/python -m bench.store
	$(BIN)/python -m bench.router
	$(BIN)/python -m bench.events

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache .hypothesis
