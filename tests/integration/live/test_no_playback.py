"""`live` without a speaker: nothing counts as played, acks say 0 ms, file runs fall back.

Also the stop reasons a caller (the CLI's SIGTERM / SIGHUP handlers) records in the progress.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from duplex_client.media.devices.lookup import DeviceError
from duplex_client.run.live import LiveDevices, run_live
from duplex_client.run.options import RunOptions
from duplex_client.run.progress import RunProgress
from duplex_client.run.sources.devices import preflight
from duplex_client.server import ReferenceServer
from tests.integration.live.helpers import tone_pcm, write_wav
from tests.unit.live.fakes import FakeCameras, FakeSoundDevice

PACE = 4.0


def _acks(run_dir: Path) -> list[dict[str, Any]]:
    events = map(json.loads, (run_dir / "events.jsonl").open())
    return [e["event"] for e in events if e["type"] == "playback.acknowledged"]


@pytest.fixture
def tone_wav(tmp_path: Path) -> Path:
    return write_wav(tmp_path / "tone.wav", tone_pcm(8000))


async def test_no_playback_reports_nothing_played_and_acks_zero(
    tmp_path: Path, tone_wav: Path
) -> None:
    sd = FakeSoundDevice(wav=tone_wav, pace=PACE)
    devices = LiveDevices(sounddevice=sd, video_capture=FakeCameras(fps=10, pace=PACE))
    options = RunOptions(
        preset="minicpmo", turn="ptt", no_playback=True, no_camera=True, duration_s=6.0,
        actions=("200:talk_down", "1400:talk_up", "3000:talk_down", "4200:talk_up"),
        output_dir=tmp_path / "run",
    )  # fmt: skip
    async with ReferenceServer(engine="scripted") as server:
        result = await run_live(server.url, options, devices=devices)
    assert result.ok, result.error
    spoken = [d for d in result.decisions if d["decision"] == "speak"]
    assert spoken and spoken[0]["audio_ms"] > 0  # answers arrived ...
    assert result.counts["played_ms"] == 0  # ... and none was played
    acks = _acks(tmp_path / "run")
    assert acks, "the second commit acks the first answer first (ack-before-commit)"
    assert all(a["played_ms"] == 0 for a in acks)
    assert sd.outputs == []
    assert result.heard is not None and not result.heard.any()  # heard.wav: no answer audio


def test_a_real_microphone_without_a_speaker_is_still_an_error() -> None:
    devices = LiveDevices(sounddevice=FakeSoundDevice(speaker=False))
    with pytest.raises(DeviceError, match="speaker"):
        preflight(RunOptions(), devices)


def test_a_file_run_without_a_speaker_skips_playback_with_a_warning(tmp_path: Path) -> None:
    devices = LiveDevices(sounddevice=FakeSoundDevice(speaker=False))
    check = preflight(RunOptions(mic_file=str(tmp_path / "a.wav")), devices)
    assert not check.playback and check.warning is not None and "without playback" in check.warning
    no_devices = LiveDevices(sounddevice=FakeSoundDevice(devices=False))
    assert not preflight(RunOptions(no_mic=True), no_devices).playback
    with pytest.raises(DeviceError):  # a speaker asked for by name must exist
        preflight(RunOptions(no_mic=True, speaker="Studio"), devices)
    quiet = preflight(RunOptions(no_mic=True, no_playback=True), devices)
    assert not quiet.playback and quiet.warning is None


def test_a_file_run_without_portaudio_skips_playback(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> Any:
        raise DeviceError("PortAudio is not installed")

    monkeypatch.setattr("duplex_client.run.sources.devices.source.load_sounddevice", missing)
    check = preflight(RunOptions(no_mic=True), LiveDevices())
    assert check.sounddevice is None and not check.playback and check.warning
    with pytest.raises(DeviceError):
        preflight(RunOptions(), LiveDevices())


async def test_files_on_a_machine_without_a_speaker_run_after_one_warning(
    tmp_path: Path, tone_wav: Path
) -> None:
    sd = FakeSoundDevice(speaker=False)
    devices = LiveDevices(sounddevice=sd, video_capture=FakeCameras(fps=10, pace=None))
    progress = RunProgress()
    options = RunOptions(
        mic_file=str(tone_wav), camera_file=str(tmp_path / "clip.mp4"), duration_s=1.5,
        output_dir=tmp_path / "run",
    )  # fmt: skip
    async with ReferenceServer(engine="scripted") as server:
        result = await run_live(server.url, options, progress=progress, devices=devices)
    assert result.ok, result.error
    assert len([w for w in progress.warnings if "without playback" in w]) == 1
    assert result.counts["played_ms"] == 0 and sd.outputs == []


@pytest.mark.parametrize(
    ("reason", "status", "code"),
    [("terminated", "terminated", 143), ("hangup", "hangup", 129), (None, "interrupted", 130)],
)
async def test_a_stopped_run_records_why(
    tmp_path: Path, tone_wav: Path, reason: str | None, status: str, code: int
) -> None:
    progress = RunProgress()
    options = RunOptions(
        mic_file=str(tone_wav), no_camera=True, no_playback=True, output_dir=tmp_path / "run"
    )
    async with ReferenceServer(engine="scripted") as server:
        task = asyncio.create_task(run_live(server.url, options, progress=progress))
        while progress.phase != "live":
            await asyncio.sleep(0.02)
        progress.stop_reason = reason
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    written = json.loads((tmp_path / "run" / "result.json").read_text())
    assert written["status"] == status and written["exit_code"] == code
