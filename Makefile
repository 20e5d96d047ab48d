# Everything runs from a project-local virtual environment built from the lock file.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The package itself, with its compiled hot path (setup.py): rebuilt when a compiled source changes.
BUILT  := $(VENV)/.built
COMPILED_SOURCES := setup.py pyproject.toml bot/core/book.py bot/core/book.pxd

.PHONY: run test bench lock clean

$(STAMP): requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.lock
	touch $(STAMP)

$(BUILT): $(STAMP) $(COMPILED_SOURCES)
	$(BIN)/python -m pip install --quiet --no-deps -e .
	touch $(BUILT)

run: $(BUILT)
	$(BIN)/bot demo

test: $(BUILT)
	$(BIN)/python -m pytest

bench: $(BUILT)
	$(BIN)/python -m bench

lock:
	$(BIN)/python -m pip freeze --exclude-editable | grep -v '^pmbot' > requirements.lock

clean:
	rm -rf $(VENV) build bot/core/book.c bot/core/*.so
