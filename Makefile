# The two set-up commands: `make demo` and `make test`. Both create .venv themselves.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
# --no-compile: pip would byte-compile every installed module (torch, transformers, ray: about
# 90 of its 160 CPU seconds here); Python compiles the modules a run imports, once, itself
PIP := $(PY) -m pip install --quiet --disable-pip-version-check --no-compile
# Python caches the bytecode of what it imports (and pytest its rewritten test modules) only
# when PYTHONDONTWRITEBYTECODE is unset; with it set (as on some CI images) every test worker,
# CLI subprocess and Ray worker compiles every module it imports again: collecting the suite
# took 21 s of CPU per worker against 8.5 s with the cache
unexport PYTHONDONTWRITEBYTECODE

.PHONY: demo test lint typecheck pytest clean

$(PY):
	$(PYTHON) -m venv $(VENV)

# ...except what the sandbox's child imports: it runs with -B on read-only mounts, so it would
# compile these again at every start (tablequest/sandbox/_child.py preloads them); and ray
# and our own sources, which many processes import at once (Ray workers, test workers): each
# would compile them anew (ray: 3.3 s of CPU per cold import, against 4 s to compile it once)
AHEAD_LIBS := pandas numpy scipy matplotlib PIL fontTools pyarrow dateutil kiwisolver \
	cycler pyparsing packaging cloudpickle charset_normalizer ray
COMPILE_AHEAD = $(PY) -m compileall -q -j 0 src/tablequest $$($(PY) -c \
	'import sys, importlib.util as u; print(*(u.find_spec(m).submodule_search_locations[0] \
	for m in sys.argv[1:] if u.find_spec(m)))' $(AHEAD_LIBS))

$(VENV)/.demo-installed: pyproject.toml | $(PY)
	$(PIP) -e .
	$(COMPILE_AHEAD)
	touch $@

$(VENV)/.dev-installed: pyproject.toml | $(PY)
	$(PIP) -e '.[dev]'
	$(COMPILE_AHEAD)
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

# lint and mypy (one core, ~40 s) run beside pytest, which leaves a core idle at times
test: $(VENV)/.dev-installed
	$(MAKE) --no-print-directory -j 3 lint typecheck pytest

clean:
	rm -rf $(VENV) .demo .mypy_cache .pytest_cache .ruff_cache .coverage
