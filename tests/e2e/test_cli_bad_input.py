"""The bad-input matrix through `duplex-cli stream`: one line on stderr, the documented exit code.

Cases live in `tests/integration/resilience/bad_inputs.py` (the API test uses the same ones).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.e2e.helpers import load, run_cli
from tests.integration.resilience.bad_inputs import (
    CASES,
    Case,
    endpoints,
    fill,
    make_inputs,
    write_sample_clip,
)


@pytest.fixture
async def urls() -> AsyncIterator[dict[str, str]]:
    async with endpoints() as found:
        yield found


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_bad_input(case: Case, tmp_path: Path, urls: dict[str, str]) -> None:
    names = make_inputs(tmp_path, write_sample_clip(tmp_path / "clip.mp4"))
    args = [fill(a, names) for a in case.cli]
    run = tmp_path / "run"
    if "--output-dir" not in args:
        args += ["--output-dir", str(run)]
    if case.url is not None:
        args += ["--url", urls[case.url]]
    done = await run_cli(*args, "-q", timeout=60)
    assert done.returncode == case.exit_code, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert case.message in lines[0] and "Traceback" not in done.stderr
    if case.exit_code == 1:  # the session could not run: the bundle says why
        result = load(run, "result.json")
        assert result["ok"] is False and case.message in result["error"]
        assert str(run) in lines[0]
    else:  # refused before anything was sent: no bundle at all
        assert not run.exists()
