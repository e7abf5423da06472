# The two set-up commands: `make demo` and `make test`. Both create .venv themselves.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip install --quiet --disable-pip-version-check

.PHONY: demo test lint typecheck pytest clean

$(PY):
	$(PYTHON) -m venv $(VENV)

$(VENV)/.demo-installed: pyproject.toml | $(PY)
	$(PIP) -e .
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(PY)
	$(PIP) -e '.[dev]'
	touch $@ $(VENV)/.demo-installed

DEMO_STORE := .demo/corpus.duckdb
DEMO_Q := Which nation won the most gold medals?

demo: $(VENV)/.demo-installed
	$(VENV)/bin/tablequest ingest examples/corpus --store $(DEMO_STORE)
	$(VENV)/bin/tablequest search "$(DEMO_Q)" --store $(DEMO_STORE) -k 3
	@# exit 4: no model configured, so ask ran its LLM-free part (`tablequest doctor` checks a model)
	$(VENV)/bin/tablequest ask "$(DEMO_Q)" --store $(DEMO_STORE) || [ $$? -eq 4 ]

lint: $(VENV)/.dev-installed
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks

typecheck: $(VENV)/.dev-installed
	$(VENV)/bin/mypy

# Tests run in 3 processes (many wait on subprocesses and servers, so 3 beat 2 on 2 cores);
# each test file stays on one worker, so a file's shared server or browser starts once; the
# few files listed in tests/scheduling.py are shared out test by test.
PYTEST_WORKERS ?= 3

pytest: $(VENV)/.dev-installed
	$(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile \
		--durations=25 --cov=tablequest --cov-report=term-missing:skip-covered --cov-fail-under=85

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .demo .mypy_cache .pytest_cache .ruff_cache .coverage
