# Everything runs from a project-local virtual environment built from the lock file.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The compiled hot path (setup.py, bot/compiled.py): rebuilt, incrementally, when a source changes.
BUILT   := $(VENV)/.built
# The optional dependencies the tests use (Ray and Optuna for sweeps; hadolint and check-jsonschema
# lint deploy/; the venue's official client, py-clob-client-v2, trades against the local exchange
# in tests/conformance; Sphinx builds the API reference, docs/api): requirements-extras.lock.
EXTRAS  := $(VENV)/.extras
SOURCES := $(wildcard bot/*.py bot/*/*.py bot/*/*.pxd strategies/*.py strategies/*.pxd)

.PHONY: run test bench docs lock clean mutation

$(STAMP): requirements.lock pyproject.toml setup.py
	@echo "setting up $(VENV): the locked dependencies of requirements.lock (a first install takes a minute or two)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	BOT_NO_COMPILE=1 $(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

$(BUILT): $(STAMP) $(SOURCES)
	$(BIN)/python setup.py --quiet build_ext --inplace
	touch $(BUILT)

$(EXTRAS): $(STAMP) requirements-extras.lock
	@echo "adding to $(VENV) the optional dependencies the tests use: requirements-extras.lock (Ray, Optuna, the official client, Sphinx)"
	$(BIN)/python -m pip install --quiet -r requirements-extras.lock
	touch $(EXTRAS)

run: $(BUILT)
	$(BIN)/bot demo

# The suite runs on TEST_JOBS workers (pytest-xdist); a file's tests, and the documents, stay together (conftest.py).
TEST_JOBS ?= 2
test: $(BUILT) $(EXTRAS)
	$(BIN)/python -m pytest -n $(TEST_JOBS)

bench: $(BUILT)
	$(BIN)/python -m bench

docs: $(BUILT) $(EXTRAS)  # the API reference for strategy authors, from the docstrings: build/api/index.html
	$(BIN)/python -m sphinx -W --keep-going -q -b html docs/api build/api

lock:  # --all keeps setuptools, which builds the hot path; the optional dependencies keep their own lock
	$(BIN)/python -m pip freeze --all --exclude-editable | grep -v -e '^pmbot' -e '^pip==' \
		| grep -v -x -F -f requirements-extras.lock -f requirements-mutation.lock > requirements.lock

clean:
	rm -rf $(VENV) build
	find bot strategies -name '*.so' -delete

# Mutation scores of the money- and order-safety modules (bench/mutation.toml), run interpreted.
MUTATION := $(VENV)/.mutation
$(MUTATION): $(STAMP) requirements-mutation.lock
	$(BIN)/python -m pip install --quiet -r requirements-mutation.lock
	touch $(MUTATION)

mutation: $(MUTATION)
	$(BIN)/python -m bench.mutation
