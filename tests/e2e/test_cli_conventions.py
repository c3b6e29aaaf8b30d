"""CLI conventions through `duplex-cli` subprocesses: flags, choices, help, version, streams."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from duplex_client.families import LIVE_PRESET_CHOICES, PRESET_CHOICES, PROFILE_FAMILIES
from tests.e2e.helpers import CLI, ENV, run_cli


def _choices(names: tuple[str, ...]) -> str:
    """A choice list as the help shows it (the families table's names, in its order)."""
    return "[" + "|".join(names) + "]"


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args], capture_output=True, text=True, env=ENV, timeout=timeout, check=False
    )


@pytest.mark.parametrize("command", ["stream", "live", "serve"])
def test_help_has_positive_flags_choices_and_metavars(command: str) -> None:
    done = _cli(command, "--help")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    assert "--no-no-" not in text
    for typed in ("<str>", "<int>", "<float>", "<list", "<path>", "<bool>"):
        assert typed not in text, typed  # not even on typer's own --help
    expected = {
        "stream": ["--realtime", "--burst", "--reconnect", "--no-reconnect", "[trim|pad|full]",
                   _choices(PRESET_CHOICES), "[off|basic|context]",
                   "SECONDS", "URL"],
        "live": ["--playback", "--no-playback", "--no-mic", "--no-camera", "[model|vad|ptt]",
                 "[toggle|hold]", _choices(LIVE_PRESET_CHOICES),
                 "MS:ACTION"],
        "serve": ["[reference|vllm-omni]", "[ga|beta]",
                  _choices(PROFILE_FAMILIES), "[speech|scripted]", "-v", "-q"],
    }[command]  # fmt: skip
    for needle in expected:
        assert needle in text, needle
    if command != "serve":
        for panel in ("Input", "Server", "Session", "Output", "Advanced"):
            assert f"─ {panel} ─" in text, panel


@pytest.mark.parametrize(
    "args",
    [
        ["stream", "--input-audio", "x.wav", "--preset", "bogus"],
        ["stream", "--input-audio", "x.wav", "--soundtrack", "loop"],
        ["stream", "--input-audio", "x.wav", "--sliding-window", "huge"],
        ["live", "--turn", "always"],
        ["serve", "--profile", "gpt"],
        ["serve", "--event-names", "alpha"],
        ["serve", "--backend", "tgi"],
    ],
)
def test_a_bad_choice_is_typers_usage_error(args: list[str], tmp_path: Path) -> None:
    done = _cli(*args, "--output-dir", str(tmp_path / "run")) if args[0] != "serve" else _cli(*args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Invalid value for '--" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "run").exists()


def test_version_comes_from_the_package_metadata() -> None:
    expected = importlib.metadata.version("duplex-cli")
    assert _cli("--version").stdout.strip() == f"duplex-cli {expected}"
    assert _cli("version").stdout.strip() == f"duplex-cli {expected}"


def test_the_old_pacing_flag_is_a_hidden_alias_of_burst(clip: Path, tmp_path: Path) -> None:
    """`--no-realtime-pacing` still parses (the annotations check sees no real-time pacing)."""
    speech = tmp_path / "speech.json"
    speech.write_text('[{"start_ms": 0, "end_ms": 100}]')
    args = ["stream", "--input-video", str(clip), "--annotations", str(speech)]
    for flag in ("--no-realtime-pacing", "--burst"):
        done = _cli(*args, flag)
        assert done.returncode == 2 and "real-time pacing" in done.stderr, done.stderr
    assert "--no-realtime-pacing" not in _cli("stream", "--help").stdout


async def test_verbose_logs_the_handshake_and_the_commit(clip: Path, tmp_path: Path) -> None:
    done = await run_cli(
        "--input-video", str(clip), "--burst", "-v", "--output-dir", str(tmp_path / "run")
    )
    assert done.returncode == 0, done.stderr
    assert "connecting to the embedded reference server" in done.stderr
    assert "handshake complete: session.created" in done.stderr
    assert "input committed" in done.stderr and "commit(s)" in done.stderr
    assert "decision: unit 0" in done.stderr


async def test_json_keeps_stdout_clean_and_the_summary_goes_to_stderr(
    clip: Path, tmp_path: Path
) -> None:
    done = await run_cli(
        "--input-video", str(clip), "--burst", "--json", "--output-dir", str(tmp_path / "a")
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"] is True  # nothing but the JSON on stdout
    plain = await run_cli(
        "--input-video", str(clip), "--burst", "--output-dir", str(tmp_path / "b")
    )
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout == "" and "run summary" in plain.stderr


_RAISING = """
import sys
import duplex_cli.stream as stream
from duplex_cli.app import app

async def broken(*args, **kwargs):
    raise {exc}("something went wrong inside")

stream.run_stream = broken
sys.argv = ["duplex-cli", "stream", *sys.argv[1:]]
app()
"""


@pytest.mark.parametrize("exc", ["RuntimeError", "ValueError", "KeyError"])
def test_an_unexpected_exception_is_one_line_and_exit_1(exc: str, tmp_path: Path) -> None:
    script = tmp_path / "wrapper.py"
    script.write_text(textwrap.dedent(_RAISING.format(exc=exc)))
    argv = [sys.executable, str(script), "--input-audio", "x.wav"]
    done = subprocess.run(argv, capture_output=True, text=True, env=ENV, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error: {exc}: ") and "something went wrong inside" in lines[0]
    assert lines[0].endswith("(run with -v for the traceback)")
    loud = subprocess.run([*argv, "-v"], capture_output=True, text=True, env=ENV, check=False)
    assert loud.returncode == 1 and "Traceback (most recent call last)" in loud.stderr
    assert "run with -v" not in loud.stderr


def test_a_usage_error_names_the_flag(tmp_path: Path) -> None:
    done = _cli(
        "stream", "--input-audio", "x.wav", "--chunk-ms", "0", "--output-dir", str(tmp_path)
    )
    assert done.returncode == 2
    assert "--chunk-ms" in done.stderr and "chunk_ms" not in done.stderr


@pytest.mark.parametrize("command", ["stream", "live", "serve", "check", "devices"])
def test_every_subcommand_takes_verbose_and_quiet(command: str) -> None:
    done = _cli(command, "--help")
    assert done.returncode == 0, done.stderr
    assert all(flag in done.stdout for flag in ("-v", "--verbose", "-q", "--quiet"))


async def test_verbose_never_logs_a_secret_from_the_url_or_the_key(
    clip: Path, tmp_path: Path
) -> None:
    from duplex_client.server import ReferenceServer

    run = tmp_path / "run"
    async with ReferenceServer(profile="minicpmo", engine="scripted", api_key="sk-k3y") as server:
        done = await run_cli(
            "--url", f"{server.url}?token=s3cret", "--api-key", "sk-k3y",
            "--input-video", str(clip), "--burst", "-v", "--output-dir", str(run),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "connecting to ws://127.0.0.1:" in done.stderr
    for text in (
        done.stdout,
        done.stderr,
        *(p.read_bytes().decode("latin-1") for p in run.rglob("*") if p.is_file()),
    ):
        assert "s3cret" not in text and "sk-k3y" not in text
