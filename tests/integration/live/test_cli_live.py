"""`duplex-cli live` and `devices` as subprocesses: file sources, Ctrl-C, missing PortAudio."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from duplex_client.framing import check_timeline
from tests.integration.live.helpers import tone_pcm, write_wav
from tests.support.media_files import write_clip

CLI = str(Path(sys.executable).parent / "duplex-cli")

FAKE_NO_PORTAUDIO = "raise OSError('PortAudio library not found')\n"
FAKE_NO_DEVICES = """
class PortAudioError(Exception):
    pass
class default:
    device = (-1, -1)
def query_devices(device=None, kind=None):
    return []
def query_hostapis():
    return [{"name": "ALSA"}]
"""


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> Any:
    return subprocess.run(
        [CLI, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def load(run: Path, name: str) -> Any:
    return json.loads((run / name).read_text())


@pytest.fixture
def wav(tmp_path: Path) -> Path:
    return write_wav(tmp_path / "tone.wav", tone_pcm(1500))


def fake_sounddevice(tmp_path: Path, body: str) -> dict[str, str]:
    mods = tmp_path / "fake_modules"
    mods.mkdir()
    (mods / "sounddevice.py").write_text(body)
    return {"PYTHONPATH": f"{mods}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}


def test_file_sources_stream_live_and_leave_a_bundle(tmp_path: Path, wav: Path) -> None:
    clip = write_clip(tmp_path / "cam.mp4", video_seconds=2.0, fps=10)
    run = tmp_path / "run"
    done = run_cli(
        "live", "--mic-file", str(wav), "--camera-file", str(clip), "--no-playback",
        "--duration-s", "2.5", "--preset", "minicpmo", "--output-dir", str(run), "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] and result["status"] == "ok" and result["closed_reason"] == "client_close"
    timeline = load(run, "input_timeline.json")
    assert check_timeline(timeline) == []
    assert {r["segment"] for r in timeline["appends"]} == {"live"}
    assert timeline["audio_source"]["kind"] == "wav" and timeline["audio_source"]["sha256"]
    assert timeline["video"]["kind"] == "file" and timeline["video"]["path"] == str(clip)
    assert timeline["video"]["sampling"] == "latest_at_unit_close"
    assert [r["unit_kind"] for r in timeline["appends"] if r["unit_kind"]] == ["OMNI", "OMNI"]
    for name in ("events.jsonl", "session.json", "result.json", "output.wav", "transcript.txt"):
        assert (run / name).exists(), name


def test_ctrl_c_closes_the_session_and_writes_the_bundle(tmp_path: Path, wav: Path) -> None:
    run = tmp_path / "run"
    proc = subprocess.Popen(
        [CLI, "live", "--mic-file", str(wav), "--no-camera", "--no-playback",
         "--preset", "minicpmo", "--output-dir", str(run), "-q"],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        events = run / "events.jsonl"
        while time.monotonic() < deadline:
            if events.exists() and events.read_text().count("\n") >= 4:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the live session did not start")
        time.sleep(1.0)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    result = load(run, "result.json")
    assert result["status"] == "ok" and result["closed_reason"] == "client_close"
    timeline = load(run, "input_timeline.json")
    assert timeline["appends"] and check_timeline(timeline) == []
    types = [json.loads(line)["type"] for line in (run / "events.jsonl").open()]
    assert types[-1] == "session.closed"


def test_missing_portaudio_is_one_clear_line(tmp_path: Path) -> None:
    env = fake_sounddevice(tmp_path, FAKE_NO_PORTAUDIO)
    done = run_cli("live", "--no-camera", "--output-dir", str(tmp_path / "run"), env=env)
    assert done.returncode == 2
    assert "install libportaudio2" in done.stderr and "Traceback" not in done.stderr
    listed = run_cli("devices", "--cameras", "0", env=env)
    assert listed.returncode == 1 and "install libportaudio2" in listed.stderr
    # file sources need no PortAudio
    ok = run_cli(
        "live", "--mic-file", str(write_wav(tmp_path / "a.wav", tone_pcm(300))), "--no-camera",
        "--no-playback", "--duration-s", "0.5", "-q", "--output-dir", str(tmp_path / "r2"),
        env=env,
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr


def test_no_sound_device_names_the_way_out(tmp_path: Path) -> None:
    env = fake_sounddevice(tmp_path, FAKE_NO_DEVICES)
    done = run_cli("live", "--no-camera", "--output-dir", str(tmp_path / "run"), env=env)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no audio microphone (input) device found" in done.stderr
    assert "--mic-file" in done.stderr
    listed = run_cli("devices", "--cameras", "0", "--json", env=env)
    assert listed.returncode == 0
    assert json.loads(listed.stdout) == {"audio": [], "audio_error": None, "cameras": []}


def test_bad_options_are_usage_errors(tmp_path: Path) -> None:
    done = run_cli("live", "--turn", "telepathy", "--output-dir", str(tmp_path / "run"))
    assert done.returncode == 2 and "Invalid value for '--turn'" in done.stderr
    done = run_cli("live", "--at", "soon:mute", "--output-dir", str(tmp_path / "run"))
    assert done.returncode == 2 and "MS:ACTION" in done.stderr
