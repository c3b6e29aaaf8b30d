"""`duplex-cli cache info|clear` and the plan cache flags, as a user runs them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from duplex_client.server import ReferenceServer
from tests.e2e.helpers import CLI, ENV, run_cli
from tests.support.media_files import write_audio_file


def _cache(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "cache", *args], capture_output=True, text=True, env=env or ENV, timeout=60
    )


async def test_a_stream_fills_the_cache_info_shows_it_and_clear_empties_it(tmp_path: Path) -> None:
    wav = write_audio_file(tmp_path / "a.wav", 1.0, 44100, 440.0, channels=2)  # resampled
    cache = str(tmp_path / "cache")
    empty = _cache("info", "--dir", cache, "--json")
    assert empty.returncode == 0 and json.loads(empty.stdout)["entries"] == 0
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        for run in ("a", "b"):
            done = await run_cli(
                "--url", server.url, "--input-audio", str(wav), "--burst", "--plan-cache",
                "--plan-cache-dir", cache, "--output-dir", str(tmp_path / run), "-q",
            )  # fmt: skip
            assert done.returncode == 0, done.stderr
    a, b = (json.loads((tmp_path / r / "input_timeline.json").read_text()) for r in "ab")
    assert [r["audio_sha256"] for r in a["appends"]] == [r["audio_sha256"] for r in b["appends"]]
    info = json.loads(_cache("info", "--dir", cache, "--json").stdout)
    assert info["entries"] == 1 and info["bytes"] > 32000 and info["max_bytes"] == 2048 << 20
    shown = _cache("info", "--dir", cache)
    assert shown.stdout.splitlines() == [
        f"plan cache: {cache}",
        f"entries: 1, {info['bytes'] / 2**20:.1f} MiB of at most 2048.0 MiB",
    ]
    cleared = _cache("clear", "--dir", cache)
    assert cleared.returncode == 0 and "deleted 1 entries" in cleared.stdout
    assert json.loads(_cache("info", "--dir", cache, "--json").stdout)["entries"] == 0


def test_the_cache_variables_are_checked_in_one_line(tmp_path: Path) -> None:
    bad = _cache("info", env={**ENV, "DUPLEX_PLAN_CACHE_MAX_MB": "lots"})
    assert bad.returncode == 2
    assert bad.stderr.strip() == (
        "error: DUPLEX_PLAN_CACHE_MAX_MB must be a whole number of MiB (0 or more), got 'lots'"
    )
    wav = write_audio_file(tmp_path / "a.wav", 0.5, 16000, 440.0)
    env = {**ENV, "DUPLEX_PLAN_CACHE": "maybe"}
    done = subprocess.run(
        [CLI, "stream", "--input-audio", str(wav), "--output-dir", str(tmp_path / "run")],
        capture_output=True, text=True, env=env, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2 and not (tmp_path / "run").exists()
    assert done.stderr.strip() == "error: DUPLEX_PLAN_CACHE must be on or off, got 'maybe'"
