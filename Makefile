# Each target bootstraps its own virtual environment; nothing needs installing by hand.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test lint typecheck bench conformance clean

$(STAMP): pyproject.toml
	@echo "make: setting up $(VENV) (first run, or pyproject.toml changed): mcp-elicit with every extra and its test tools"
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@echo "make: $(VENV) is ready"
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m mcp_elicit.demo

lint: $(STAMP)
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench

typecheck: $(STAMP)
	$(BIN)/mypy

test: lint typecheck
	$(BIN)/pytest -q -p no:cacheprovider

bench: $(STAMP)
	$(BIN)/python bench/roundtrip.py

conformance: $(STAMP)
	bash .ci/conformance.sh

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
