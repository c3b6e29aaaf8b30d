# Front door: `make run` streams the bundled sample clip, `make test` runs every check.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test lint typecheck unit bench clean

$(STAMP): pyproject.toml cli/pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade "pip>=24"
	$(BIN)/python -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev,server,mic,vad,notebook]' -e ./cli
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(BIN)/duplex-cli stream --input-video examples/sample.mp4 --tail-silence-s 1

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy --strict duplex_client

unit: $(STAMP)
	$(BIN)/pytest -q tests

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
