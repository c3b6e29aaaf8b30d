"""`duplex-cli stream --preset personaplex|nemotron` against `duplex-cli serve --profile …`.

Both sides are separate processes, as a user runs them; the clip is a short PyAV-written
.m4a and the input is sent in burst pacing (the tests stay fast).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import wave
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duplex_client.bundle.wavfile import read_wav_pcm16, write_wav
from duplex_client.eval.fdb import export_item
from duplex_client.eval.item import EvalItem
from duplex_client.report.bundle_reader import load_run_bundle
from tests.e2e.helpers import CLI, ENV, events, load, run_cli
from tests.support.media_files import write_audio_file


@pytest.fixture(scope="module")
def tone_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """1.2 s of a 330 Hz tone, 48 kHz AAC."""
    return write_audio_file(tmp_path_factory.mktemp("media") / "tone.m4a", 1.2, 48000, 330.0)


def serve(tmp: Path, profile: str, script: dict[str, Any]) -> Iterator[str]:
    """`duplex-cli serve --profile PROFILE` (scripted) in its own process; yields its URL."""
    path = tmp / f"{profile}.json"
    path.write_text(json.dumps(script))
    proc = subprocess.Popen(
        [CLI, "serve", "--port", "0", "--profile", profile, "--script", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    assert proc.stdout is not None
    try:
        url = None
        deadline = time.monotonic() + 30
        while url is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            assert line, "serve exited early"
            if match := re.search(r"(ws://\S+)", line):
                url = match.group(1)
        assert url is not None
        yield url
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


@pytest.fixture
def personaplex_url(tmp_path: Path) -> Iterator[str]:
    script = {"rules": [{"on": "unit", "index": 5, "do": "speak", "text": "hello there"}]}
    yield from serve(tmp_path, "personaplex", script)


@pytest.fixture
def nemotron_url(tmp_path: Path) -> Iterator[str]:
    script = {
        "chunk_ms": 200,
        "rules": [{"on": "unit", "index": 8, "do": "speak", "text": "one two three"}],
    }
    yield from serve(tmp_path, "nemotron", script)


@pytest.mark.parametrize("chunk_ms", [None, 160])
async def test_stream_preset_personaplex(
    personaplex_url: str, tone_clip: Path, tmp_path: Path, chunk_ms: int | None
) -> None:
    run = tmp_path / "run"
    chunk = [] if chunk_ms is None else ["--chunk-ms", str(chunk_ms)]
    done = await run_cli(
        "--url", personaplex_url, "--preset", "personaplex", "--input-audio", str(tone_clip),
        "--output-dir", str(run), "--burst", "--json", *chunk,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    # the default 200 ms cut to the 80 ms grid is expected; an asked-for 160 ms is noted
    noted = "chunk_ms 160 is longer than the server's units" in done.stderr
    assert noted == (chunk_ms == 160) and "chunk_ms 200" not in done.stderr, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] is True and result["closed_reason"] == "client_close"
    timeline = load(run, "input_timeline.json")
    assert timeline["input_format"] == {
        "encoding": "pcm_f32le",
        "sample_rate_hz": 24000,
        "channels": 1,
    }
    assert timeline["unit_grid"]["chunk_period_ms"] == 80
    rows = timeline["appends"]
    assert [r["duration_ms"] for r in rows[:-1]] == [80] * (len(rows) - 1)
    assert {r["audio_bytes"] for r in rows[:-1]} == {1920 * 4}
    assert timeline["commits"] == []
    types = [e["type"] for e in events(run)]
    assert "input_audio_buffer.committed" not in types
    assert "response.created" in types and "response.done" in types  # answered anyway
    assert any(d["decision"] == "speak" for d in result["decisions"])


async def test_stream_preset_nemotron_drains_at_close_and_records_22khz(
    nemotron_url: str, tone_clip: Path, tmp_path: Path
) -> None:
    """Nemotron's real shape end to end, in real time: 16 kHz float frames, trailing
    silence, `session.close` (no `session.end`), one response drained `stream_drained`, and
    its 22.05 kHz answer in heard.wav, conversation.wav, output.wav, the report and an FDB
    export."""
    run = tmp_path / "run"
    done = await run_cli(
        "--url", nemotron_url, "--preset", "nemotron", "--input-audio", str(tone_clip),
        "--tail-silence-s", "0.8", "--output-dir", str(run), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] is True and result["closed_reason"] == "client_close"
    assert result["server_errors"] == []  # no session.end (the server refuses it)
    timeline = load(run, "input_timeline.json")
    assert timeline["input_format"]["encoding"] == "pcm_f32le"
    assert timeline["input_format"]["sample_rate_hz"] == 16000
    frames = -(-timeline["appends"][-1]["audio_end_ms"] // 80)
    end = result["stream_end"]
    assert end["drained"] and end["reason"] == "stream_drained"
    assert end["drain"] == {
        "accepted_frames": frames,
        "text_frames": frames,
        "audio_frames": frames,
        "drained": True,
    }
    types = [e["type"] for e in events(run)]
    assert types.count("response.done") == 1 and types.count("response.created") == 1
    assert types.count("response.audio.delta") == frames  # beta names, one packet a frame
    assert types.index("response.done") < types.index("session.closed")
    media_ms = timeline["appends"][-1]["media_end_ms"]
    for name, channels in (("heard.wav", 1), ("conversation.wav", 2), ("output.wav", 1)):
        with wave.open(str(run / name)) as w:
            assert (w.getframerate(), w.getnchannels()) == (22050, channels), name
            if name == "output.wav":
                assert w.getnframes() == frames * 1764  # every 80 ms packet, back to back
            else:
                assert abs(w.getnframes() / 22.05 - media_ms) < 200, name
    heard, _ = read_wav_pcm16(run / "heard.wav")
    assert np.abs(np.frombuffer(heard, "<i2")).max() > 1000  # the spoken answer is there
    # the report draws the heard track on the media clock
    data = load_run_bundle(run)
    assert data.heard_wave is not None and abs(data.heard_wave.t_ms[-1] - media_ms) < 200
    # a Full-Duplex-Bench export resamples it to the item's input rate, input length
    item_dir = tmp_path / "fdb" / "1"
    item_dir.mkdir(parents=True)
    write_wav(item_dir / "input.wav", np.zeros(16000, np.int16), 16000)
    item = EvalItem(id="1", input_audio=str(item_dir / "input.wav"), fdb_dir="1")
    outcome = export_item(item, run, tmp_path / "export")
    assert outcome.path is not None
    with wave.open(str(outcome.path)) as w:
        assert (w.getframerate(), w.getnframes()) == (16000, 16000)
