"""`live` and `web` in another dialect: the endpoint's wire detected (or named with
`--dialect`), audio only (no default camera, a named one refused before anything is sent)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pytest

from duplex_client.run.live import LiveDevices, run_live
from duplex_client.run.options import RunOptions
from duplex_client.server import ReferenceServer, Script
from duplex_client.usage import UsageError
from tests.e2e.helpers import CLI, ENV
from tests.integration.live.helpers import tone_pcm, write_wav
from tests.unit.live.fakes import FakeCameras, FakeSoundDevice

PACE = 4.0
SPEAK = {"rules": [{"on": "unit", "index": 0, "do": "speak", "text": "fine thanks"}]}


async def test_live_detects_an_openai_endpoint_and_sends_audio_only(tmp_path: Path) -> None:
    sd = FakeSoundDevice(wav=write_wav(tmp_path / "tone.wav", tone_pcm(1200)), pace=PACE)
    cameras = FakeCameras(fps=10, pace=PACE)
    devices = LiveDevices(sounddevice=sd, video_capture=cameras)
    options = RunOptions(duration_s=2.5, output_dir=tmp_path / "run")  # no dialect, no camera named
    script = Script.from_dict(SPEAK)
    async with ReferenceServer(engine="scripted", script=script, dialect="openai") as server:
        result = await run_live(server.url, options, devices=devices)
    assert result.ok, result.error
    assert result.dialect == "openai"
    assert any(w.startswith("dialect openai detected: ") for w in result.warnings)
    assert cameras.opened == []  # the default camera stays closed: the wire carries no frames
    timeline = json.loads((tmp_path / "run" / "input_timeline.json").read_text())
    assert timeline["input_format"]["sample_rate_hz"] == 24000
    assert timeline["appends"] and all(not r.get("video_frames") for r in timeline["appends"])
    assert [d for d in result.decisions if d["decision"] == "speak"]
    assert result.counts["played_ms"] > 0  # the answer came back and was played


def test_a_named_camera_with_an_audio_only_dialect_is_refused() -> None:
    for name, value in (("camera", "0"), ("camera_file", "clip.mp4")):
        with pytest.raises(UsageError, match=f"{name}: the gpt-live dialect carries audio only"):
            RunOptions(dialect="gpt-live", **{name: value}).validate(inputs="devices")


@pytest.mark.parametrize(
    ("command", "args", "message"),
    [
        ("live", ["--dialect", "openai", "--camera-file", "clip.mp4", "--no-playback"],
         "--camera-file: the openai dialect carries audio only, no video frames"),
        ("live", ["--dialect", "gpt-9"], "--dialect must be one of auto, duplex, openai"),
        ("web", ["--dialect", "gpt-9", "--no-open"], "--dialect must be one of auto, duplex"),
    ],
)  # fmt: skip
def test_cli_dialect_refusals_are_one_line(command: str, args: list[str], message: str) -> None:
    done = subprocess.run(
        [CLI, command, *args], capture_output=True, text=True, env=ENV, timeout=60,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


async def test_web_resolves_the_dialect_once_and_offers_no_camera(tmp_path: Path) -> None:
    from duplex_client.web import WebApp, WebConfig
    from duplex_client.web.protocol import StartRequest
    from duplex_client.web.session import ready_message
    from duplex_client.web.source import BrowserSource

    said: list[str] = []
    async with ReferenceServer(engine="scripted", dialect="gpt-live") as server:
        url = server.url.replace("/v1/realtime", "/v1/live/sessions")
        config = WebConfig(url=url, options=RunOptions(), output_dir=tmp_path)
        async with WebApp(config, say=said.append) as app:
            ready = ready_message(app)
    assert app.config.options.dialect == "gpt-live"
    assert any(line.startswith("dialect gpt-live detected: ") for line in said)
    assert ready["video"] is False and ready["rates"]["model"] == {"input": 24000, "output": 24000}
    request = StartRequest("model", 0, False, True, {})  # a page that starts its camera anyway
    source = BrowserSource(lambda msg: None, SimpleNamespace(), request, SimpleNamespace())  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="camera: the gpt-live dialect carries audio only"):
        await source.open(app.config.options, SimpleNamespace())  # type: ignore[arg-type]
