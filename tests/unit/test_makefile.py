"""The Makefile's front door: `help` says what `clean` keeps, `distclean` removes the rest."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs make")


def make(*args: str) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", "-C", str(ROOT), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout


def test_help_says_what_clean_keeps() -> None:
    text = make("help")
    assert "keeps runs/, .hypothesis/ and *.egg-info" in text
    assert "make distclean" in text


def test_distclean_removes_what_clean_keeps() -> None:
    clean, dist = make("-n", "clean"), make("-n", "distclean")
    assert "runs" not in clean.split() and ".hypothesis" not in clean
    removed = dist.split()
    for path in ("runs", ".hypothesis", "duplex_client.egg-info", "cli/duplex_cli.egg-info"):
        assert path in removed, dist
    assert clean.strip() in dist  # distclean does everything clean does


def test_run_and_test_still_do_what_the_readme_says() -> None:
    run = make("-n", "-W", "pyproject.toml", "run")  # -W: as if the stamp were stale
    assert "duplex-cli stream --input-video examples/sample.mp4" in run
    test = make("-n", "test")
    assert "ruff check" in test and "mypy --strict duplex_client" in test and "pytest" in test
    assert "lint-imports" in make("-n", "lint")  # the layering contracts (pyproject.toml)


def test_make_run_ends_with_the_next_commands_and_where_the_cli_is() -> None:
    """`make run` ends with `make next`: the CLI's place in .venv/bin, then report and eval."""
    run = make("-n", "-W", "pyproject.toml", "run")
    assert run.index("duplex-cli stream") < run.index("duplex-cli report")
    text = make("-s", "next")
    assert "duplex-cli is in .venv/bin/" in text
    lines = [line.strip() for line in text.splitlines()]
    assert any(line.startswith(".venv/bin/duplex-cli report runs/") for line in lines)
    assert any(line.startswith(".venv/bin/duplex-cli eval examples") for line in lines)


def test_the_readme_says_where_the_cli_is_and_how_to_install_without_make() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "`.venv/bin/duplex-cli`" in readme
    assert "pip install -c constraints.txt -e '.[" in readme and "-e ./cli" in readme
