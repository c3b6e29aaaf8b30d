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
