"""The bad-input matrix through `duplex-cli stream`: one line on stderr, the documented exit code.

Cases live in `tests/integration/resilience/bad_inputs.py` (the API test uses the same ones).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from duplex_cli.options import server_url

from duplex_client.server import ReferenceServer
from duplex_client.usage import UsageError
from tests.e2e.helpers import CLI, ENV, load, run_cli
from tests.integration.resilience.bad_inputs import (
    CASES,
    Case,
    endpoints,
    fill,
    make_inputs,
    write_sample_clip,
)
from tests.support.media_files import write_audio_file


@pytest.fixture
async def urls() -> AsyncIterator[dict[str, str]]:
    async with endpoints() as found:
        yield found


@pytest.fixture(scope="module")
def names(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The input files of every case, made once (no case changes them)."""
    folder = tmp_path_factory.mktemp("bad_inputs")
    return make_inputs(folder, write_sample_clip(folder / "clip.mp4"))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_bad_input(
    case: Case, tmp_path: Path, urls: dict[str, str], names: dict[str, str]
) -> None:
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


EMPTY_DUPLEX_URL = (
    "DUPLEX_URL is set but empty: give ws://host:port or http://host:port, or unset it for the "
    "embedded reference server"
)


def test_server_url_falls_back_to_duplex_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """`--url` wins; without it `DUPLEX_URL`; set but empty or blank, a usage error (#32)."""
    monkeypatch.delenv("DUPLEX_URL", raising=False)
    assert server_url(None) is None  # the embedded server
    monkeypatch.setenv("DUPLEX_URL", "ws://gpu:8000")
    assert server_url(None) == "ws://gpu:8000"
    assert server_url("ws://other:9") == "ws://other:9"
    assert server_url("") == ""  # given: `run_session` refuses it (the `empty URL` case)
    for value in ("", "  "):
        monkeypatch.setenv("DUPLEX_URL", value)
        with pytest.raises(UsageError) as info:
            server_url(None)
        assert info.value.render() == EMPTY_DUPLEX_URL
        assert server_url("ws://other:9") == "ws://other:9"  # --url wins over it


@pytest.mark.parametrize(
    ("command", "value"), [("stream", ""), ("eval", "  "), ("replay", ""), ("web", " ")]
)
def test_an_empty_duplex_url_is_a_usage_error(command: str, value: str, tmp_path: Path) -> None:
    """`DUPLEX_URL=` (set, but empty or blank) never falls back to the embedded server."""
    wav = write_audio_file(tmp_path / "q.wav", 0.5, 16000, 440.0)
    out = tmp_path / "out"
    args = {
        "stream": ["stream", "--input-audio", str(wav), "--output-dir", str(out)],
        "eval": ["eval", str(tmp_path), "--output-dir", str(out)],
        "replay": ["replay", str(tmp_path), "-o", str(out)],
        "web": ["web", "--no-open", "--output-dir", str(out)],
    }[command]
    done = subprocess.run(
        [CLI, *args], env={**ENV, "DUPLEX_URL": value}, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip() == f"error: {EMPTY_DUPLEX_URL}"
    assert not out.exists()


async def test_duplex_url_names_the_server(tmp_path: Path) -> None:
    """Without `--url`, `DUPLEX_URL` is the server."""
    wav = write_audio_file(tmp_path / "q.wav", 0.5, 16000, 440.0)
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        proc = await asyncio.create_subprocess_exec(
            CLI, "stream", "--input-audio", str(wav), "--burst", "--json", "-q",
            "--output-dir", str(tmp_path / "run"),
            env={**ENV, "DUPLEX_URL": server.url},
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert json.loads(out)["url"].startswith(server.url)
