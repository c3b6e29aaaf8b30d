"""The real microphone and speaker path through a private PulseAudio with virtual devices.

A null sink `vmic` (16 kHz) is the microphone: `paplay` "speaks" a WAV into it and the
default source is its monitor. A null sink `vspk` (24 kHz) is the speaker; `parecord`
records its monitor. `duplex-cli live` runs as a subprocess with the real sounddevice /
PortAudio (ALSA → pulse plugin) against a reference server in this process. Skipped when
PulseAudio or PortAudio is missing or the daemon does not start; every wait is bounded
and the daemon this test started is always stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes.util
import json
import os
import shutil
import subprocess
import sys
import time
import wave
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from duplex_client.server import ReferenceServer
from duplex_client.server.config import speech_available
from tests.integration.live.helpers import write_wav

TOOLS = ("pulseaudio", "pactl", "paplay", "parecord")
CLI = str(Path(sys.executable).parent / "duplex-cli")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        any(shutil.which(t) is None for t in TOOLS), reason="PulseAudio is not installed"
    ),
    pytest.mark.skipif(
        ctypes.util.find_library("portaudio") is None, reason="libportaudio2 is not installed"
    ),
    pytest.mark.skipif(not speech_available(), reason="needs the server extra (speech engine)"),
]


def _env(base: Path) -> dict[str, str]:
    run = base / "xdg"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PULSE_")}
    env.update(
        XDG_RUNTIME_DIR=str(run),
        PULSE_RUNTIME_PATH=str(run / "pulse"),
        PULSE_SERVER=f"unix:{run / 'pulse' / 'native'}",
        HOME=str(base / "home"),
    )
    return env


@pytest.fixture
def pulse(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A private PulseAudio with `vmic` and `vspk` null sinks; yields the client environment."""
    env = _env(tmp_path)  # the socket path stays well under the 108-byte limit
    for key in ("XDG_RUNTIME_DIR", "HOME"):
        Path(env[key]).mkdir(parents=True, exist_ok=True)
    os.chmod(env["XDG_RUNTIME_DIR"], 0o700)
    daemon = subprocess.Popen(
        ["pulseaudio", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit", "-n",
         "--use-pid-file=no", "--load=module-native-protocol-unix",
         "--load=module-null-sink sink_name=vspk rate=24000 channels=1",
         "--load=module-null-sink sink_name=vmic rate=16000 channels=1"],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 10
        while True:
            if daemon.poll() is not None:
                pytest.skip(f"pulseaudio exited at start (code {daemon.returncode})")
            info = subprocess.run(
                ["pactl", "info"], env=env, capture_output=True, timeout=5, check=False
            )
            if info.returncode == 0:
                break
            if time.monotonic() > deadline:
                pytest.skip("pulseaudio did not become ready within 10 s")
            time.sleep(0.1)
        for args in (["set-default-source", "vmic.monitor"], ["set-default-sink", "vspk"]):
            subprocess.run(["pactl", *args], env=env, timeout=5, check=True)
        yield env
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=5)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(timeout=5)


async def _spawn(*args: str, env: dict[str, str]) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *args,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            proc.kill()
            await proc.wait()


def _rms(path: Path) -> float:
    with wave.open(str(path), "rb") as w:
        data = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").astype(np.float64)
    return float(np.sqrt(np.mean(data**2))) if data.size else 0.0


async def test_speech_through_a_virtual_microphone_and_speaker(
    pulse: dict[str, str], tmp_path: Path
) -> None:
    from duplex_client.server.engine.tts import speech_pcm16

    speech = write_wav(
        tmp_path / "speech.wav",
        speech_pcm16("what color do you see", 16000, lead_ms=300, tail_ms=1500),
    )
    run, recorded = tmp_path / "run", tmp_path / "speaker.wav"
    async with ReferenceServer(profile="joyai", engine="speech") as server:
        recorder = await _spawn(
            "parecord", "--device=vspk.monitor", "--file-format=wav", str(recorded), env=pulse
        )
        cli = await _spawn(
            CLI, "live", "--url", server.url, "--turn", "vad", "--no-camera",
            "--duration-s", "11", "--output-dir", str(run), "-q", env=pulse,
        )  # fmt: skip
        try:
            events = run / "events.jsonl"
            deadline = time.monotonic() + 20
            while not (events.exists() and "session.updated" in events.read_text()):
                assert cli.returncode is None, "duplex-cli exited early"
                assert time.monotonic() < deadline, "the live session did not open"
                await asyncio.sleep(0.05)
            await asyncio.sleep(1.5)  # the microphone stream is running by now
            player = await _spawn("paplay", "--device=vmic", str(speech), env=pulse)
            await asyncio.wait_for(player.wait(), 20)
            _, err = await asyncio.wait_for(cli.communicate(), 40)
        finally:
            await _stop(cli)
            with contextlib.suppress(ProcessLookupError):
                await _stop(recorder)
    assert cli.returncode == 0, err.decode()
    result = json.loads((run / "result.json").read_text())
    assert result["ok"], result["error"]
    answers = [d for d in result["decisions"] if d["decision"] == "speak"]
    assert answers, result["decisions"]
    assert "color" in answers[0]["transcript"]  # the server heard the microphone
    assert result["counts"]["played_ms"] > 0
    acked = [
        json.loads(line)["event"]
        for line in events.open()
        if json.loads(line)["type"] == "playback.acknowledged"
    ]
    assert acked and max(a["played_ms"] for a in acked) > 0
    assert _rms(recorded) > 100  # the answer reached the virtual speaker
