# Front door: `make run` streams the bundled sample clip, `make test` runs every check.
# `make help` lists the targets; `make clean` keeps run bundles, `make distclean` does not.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: help install upstream run next test lint typecheck unit bench clean distclean

help:
	@echo "make install    create .venv and install the client, the CLI and the dev extras"
	@echo "make run        stream examples/sample.mp4 to the embedded server (bundle in runs/)"
	@echo "make next       what to try after make run (report, eval)"
	@echo "make test       lint, typecheck and the whole test suite"
	@echo "make lint | typecheck | unit | bench"
	@echo "make upstream   fetch and unzip the vllm-omni wheel the fidelity tests read (install does)"
	@echo "make clean      remove .venv and the tool caches (.mypy_cache .pytest_cache"
	@echo "                .ruff_cache .import_linter_cache __pycache__);"
	@echo "                keeps runs/, .hypothesis/ and *.egg-info"
	@echo "make distclean  clean, and also remove runs/ (every run bundle), .hypothesis/"
	@echo "                and the *.egg-info folders: back to a fresh clone"

$(STAMP): pyproject.toml cli/pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --disable-pip-version-check --upgrade "pip>=24"
	$(BIN)/python -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev,server,mic,vad,notebook,ray,report,benchmarks]' -e ./cli
	$(MAKE) --no-print-directory upstream
	touch $(STAMP)

# Upstream's own code, read by the fidelity tests (the appendix's evidence, vLLM-Omni's own
# client against our server): the wheel alone, unzipped, never installed (it needs torch).
UPSTREAM := $(VENV)/upstream/vllm-omni
upstream:
	rm -rf $(UPSTREAM) $(VENV)/upstream/wheel
	$(BIN)/python -m pip download -q --disable-pip-version-check --no-deps vllm-omni==0.30.0 -d $(VENV)/upstream/wheel \
	  && $(BIN)/python -m zipfile -e $(VENV)/upstream/wheel/vllm_omni-0.30.0-py3-none-any.whl $(UPSTREAM) \
	  || echo "warning: the vllm-omni 0.30.0 wheel was not downloaded; the tests that read it will skip" >&2

install: $(STAMP)

run: $(STAMP)
	$(BIN)/duplex-cli stream --input-video examples/sample.mp4 --tail-silence-s 1
	@$(MAKE) --no-print-directory next

# What to try after `make run`, with the newest bundle's path (runs/<time> before any run).
next:
	@last=$$(ls -1td runs/*/ 2>/dev/null | head -n 1); last=$${last%/}; \
	echo ""; \
	echo "duplex-cli is in $(BIN)/ (or: . $(BIN)/activate). Next, try:"; \
	echo "  $(BIN)/duplex-cli report $${last:-runs/<time>}    # the run as one HTML page"; \
	echo "  $(BIN)/duplex-cli eval examples --output-dir evals/sample --tail-silence-s 1"; \
	echo "  $(BIN)/duplex-cli stream --help    # your own clip, a real server (--url)"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy --strict duplex_client cli/duplex_cli

# Three workers on two cores: most tests wait on real time (loopback sessions paced like a
# microphone, subprocesses), not the CPU; the whole suite keeps about one core busy. One file
# per worker (loadfile): a module's shared fixture (a recorded run, a browser) is set up once.
unit: $(STAMP)
	$(BIN)/pytest -q -n 3 --dist loadfile tests

test: lint typecheck unit

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# Keeps runs/ (your run bundles), .hypothesis/ (found examples) and *.egg-info.
clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .import_linter_cache
	find . -name __pycache__ -type d -not -path './.git/*' -prune -exec rm -rf {} +

# Everything `clean` removes, plus run bundles, hypothesis data and build metadata.
distclean: clean
	rm -rf runs .hypothesis duplex_client.egg-info cli/duplex_cli.egg-info build dist cli/build
