"""`run_live` and `duplex-cli live` against the reference server's personaplex and nemotron.

The microphone is a fake sound device playing a 16 kHz WAV (it refuses 24 kHz, so the
package's resampler converts), or `--mic-file`; the appends' bytes are checked against the
source resampled independently here, through their `audio_sha256` in `input_timeline.json`.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from duplex_client.framing import check_timeline
from duplex_client.media.resample import Resampler, as_float
from duplex_client.run.live import LiveDevices, run_live
from duplex_client.run.options import RunOptions
from duplex_client.run.result import RunResult
from duplex_client.server import ReferenceServer, Script
from duplex_client.usage import UsageError
from tests.integration.live.helpers import tone_pcm, write_wav
from tests.unit.live.fakes import FakeSoundDevice

CLI = str(Path(sys.executable).parent / "duplex-cli")
PACE = 4.0
#: The scripted model answers once a few units have arrived (it is heard while input goes on).
SPEAK = {"rules": [{"on": "unit", "index": 4, "do": "speak", "text": "one two three"}]}
F32_24K = {"encoding": "pcm_f32le", "sample_rate_hz": 24000, "channels": 1}
S16_16K = {"encoding": "pcm16", "sample_rate_hz": 16000, "channels": 1}


@pytest.fixture
def tone_wav(tmp_path: Path) -> Path:
    return write_wav(tmp_path / "tone.wav", tone_pcm(1200))


def events(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "events.jsonl").open()]


def to_24k_float(wav_pcm: bytes, total_samples: int, *, flush: bool) -> bytes:
    """The 16 kHz int16 source as 24 kHz float32 LE, padded with silence to `total_samples`."""
    x = as_float(np.frombuffer(wav_pcm, dtype="<i2"))
    r = Resampler(16000, 24000, dtype=np.float32)
    if flush:  # a file is decoded whole (its resampler's tail included), then silence follows
        y = np.concatenate([r.process(x), r.flush()])
    else:  # a device goes on capturing silence after the speech
        y = r.process(np.concatenate([x, np.zeros(total_samples, np.float32)]))
    y = np.concatenate([y, np.zeros(max(0, total_samples - len(y)), np.float32)])
    return y[:total_samples].astype("<f4").tobytes()


def check_sent(rows: list[dict[str, Any]], expected: bytes) -> npt.NDArray[np.float32]:
    """Each append's bytes are the next slice of `expected`; returns the first append decoded."""
    at = 0
    for row in rows:
        piece = expected[at : at + row["audio_bytes"]]
        assert row["audio_sha256"] == hashlib.sha256(piece).hexdigest(), row["append_index"]
        at += row["audio_bytes"]
    first = np.frombuffer(expected[: rows[0]["audio_bytes"]], dtype="<f4")
    return first


def check_grid(timeline: dict[str, Any], fmt: dict[str, Any]) -> list[dict[str, Any]]:
    """The timeline is valid, in `fmt`, on the 80 ms grid, uncommitted; returns the rows."""
    assert check_timeline(timeline) == []
    assert timeline["input_format"] == fmt
    assert timeline["unit_grid"]["chunk_period_ms"] == 80
    assert timeline["commits"] == []
    rows = timeline["appends"]
    width = 4 if fmt["encoding"] == "pcm_f32le" else 2
    unit = fmt["sample_rate_hz"] * 80 // 1000
    assert rows and all(r["duration_ms"] == 80 for r in rows)
    assert {r["audio_bytes"] for r in rows} == {unit * width}
    assert [r["unit_index"] for r in rows] == list(range(len(rows)))
    return rows  # type: ignore[no-any-return]


async def live(
    url: str, tmp_path: Path, wav: Path, **options: Any
) -> tuple[RunResult, FakeSoundDevice]:
    sd = FakeSoundDevice(wav=wav, pace=PACE)  # takes 16 kHz only: 24 kHz is resampled
    options.setdefault("output_dir", tmp_path / "run")
    opts = RunOptions(no_camera=True, **options)
    return await run_live(url, opts, devices=LiveDevices(sounddevice=sd)), sd


async def test_personaplex_microphone_goes_out_as_24k_float_with_no_commits(
    tmp_path: Path, tone_wav: Path
) -> None:
    async with ReferenceServer(
        engine="scripted", profile="personaplex", script=Script.from_dict(SPEAK)
    ) as server:
        result, sd = await live(
            server.url, tmp_path, tone_wav, preset="personaplex", duration_s=1.6
        )
    assert result.ok, result.error
    run = tmp_path / "run"
    timeline = json.loads((run / "input_timeline.json").read_text())
    rows = check_grid(timeline, F32_24K)
    assert sum(r["duration_ms"] for r in rows) == 1600
    samples = sum(r["audio_bytes"] for r in rows) // 4
    wav_pcm = tone_pcm(1200)
    first = check_sent(rows, to_24k_float(wav_pcm, samples, flush=False))
    assert float(np.sqrt(np.mean(first.astype(np.float64) ** 2))) > 0.15  # the tone, not silence
    types = [e["type"] for e in events(run)]
    assert "input_audio_buffer.commit" not in types and "input_audio_buffer.committed" not in types
    assert "session.end" not in types
    # the answer is played as before: the fake speaker rendered it
    assert "response.done" in types and any(sd.outputs[0].played)
    assert result.counts["played_ms"] > 0 and result.counts["commits"] == 0


async def test_nemotron_quit_closes_and_the_stream_drains(tmp_path: Path, tone_wav: Path) -> None:
    async with ReferenceServer(
        engine="scripted", profile="nemotron", script=Script.from_dict(SPEAK)
    ) as server:
        # auto (the turn-based default): the opened session's capabilities end the stream
        result, sd = await live(
            server.url, tmp_path, tone_wav, preset="auto", actions=("1200:quit",)
        )
    assert result.ok, result.error
    run = tmp_path / "run"
    timeline = json.loads((run / "input_timeline.json").read_text())
    # auto asked for the default family's 16 kHz PCM16, which our nemotron profile also takes
    rows = check_grid(timeline, S16_16K)
    evs = events(run)
    types = [e["type"] for e in evs]
    assert "session.end" not in types and "input_audio_buffer.committed" not in types
    (done,) = [e["event"] for e in evs if e["type"] == "response.done"]
    assert done["response"]["status_details"]["reason"] == "stream_drained"
    frames = -(-rows[-1]["audio_end_ms"] // 80)  # a partial last frame is padded
    assert done["response"]["metadata"]["drain"]["accepted_frames"] == frames
    assert types.index("response.done") < types.index("session.closed")
    assert result.stream_end is not None and result.stream_end["drained"]
    assert any(sd.outputs[0].played)


async def test_commit_needing_turn_on_a_commit_free_session_is_a_usage_error(
    tmp_path: Path, tone_wav: Path
) -> None:
    async with ReferenceServer(engine="scripted", profile="nemotron") as server:
        # preset none: nothing known before connecting; the session's capabilities refuse it
        with pytest.raises(UsageError) as refused:
            await live(server.url, tmp_path, tone_wav, preset="none", turn="ptt")
    message = str(refused.value)  # the SDK names its keyword, the CLI its flag
    assert message.startswith("turn ptt") and "continuous stream takes no commits" in message
    assert refused.value.render().startswith("--turn ptt")
    run = tmp_path / "run"
    result = json.loads((run / "result.json").read_text())  # the bundle is still finished
    assert result["exit_code"] == 2 and result["error"] == message
    timeline = json.loads((run / "input_timeline.json").read_text())
    assert timeline["appends"] == [] and timeline["commits"] == []


async def cli(*args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        CLI, "live", *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


async def test_cli_personaplex_mic_file_is_decoded_to_24k_float(
    tmp_path: Path, tone_wav: Path
) -> None:
    run = tmp_path / "run"
    code, out, err = await cli(
        "--preset", "personaplex", "--mic-file", str(tone_wav), "--no-camera", "--no-playback",
        "--duration-s", "1.6", "--output-dir", str(run), "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["ok"] is True
    timeline = json.loads((run / "input_timeline.json").read_text())
    rows = check_grid(timeline, F32_24K)
    samples = sum(r["audio_bytes"] for r in rows) // 4
    first = check_sent(rows, to_24k_float(tone_pcm(1200), samples, flush=True))
    assert float(np.sqrt(np.mean(first.astype(np.float64) ** 2))) > 0.15
    assert timeline["audio_source"]["kind"] == "wav"
    assert "input_audio_buffer.committed" not in [e["type"] for e in events(run)]


async def test_cli_nemotron_ends_the_stream_on_quit(tmp_path: Path, tone_wav: Path) -> None:
    run = tmp_path / "run"
    code, out, err = await cli(
        "--preset", "nemotron", "--mic-file", str(tone_wav), "--no-camera", "--no-playback",
        "--duration-s", "1.2", "--output-dir", str(run), "--json",
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["ok"] is True
    evs = events(run)
    types = [e["type"] for e in evs]
    (done,) = [e["event"] for e in evs if e["type"] == "response.done"]
    assert done["response"]["status_details"]["reason"] == "stream_drained"
    assert types.index("response.done") < types.index("session.closed")
    assert "session.end" not in types


@pytest.mark.parametrize("turn", ["ptt", "vad"])
async def test_cli_commit_needing_turn_is_one_line_exit_2(tmp_path: Path, turn: str) -> None:
    code, out, err = await cli("--preset", "personaplex", "--turn", turn, "--no-mic", "-q")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and f"--turn {turn}" in lines[0], err
    assert "the personaplex preset takes no commits" in lines[0]


async def test_cli_auto_on_a_commit_free_server_refuses_ptt_as_the_session_opens(
    tmp_path: Path,
) -> None:
    async with ReferenceServer(engine="scripted", profile="personaplex") as server:
        code, out, err = await cli(
            "--url", server.url, "--turn", "ptt", "--no-mic", "--no-camera", "-q",
            "--output-dir", str(tmp_path / "run"),
        )  # fmt: skip
    assert code == 2 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "this session takes no commits" in lines[0], err
    assert json.loads((tmp_path / "run" / "result.json").read_text())["exit_code"] == 2


async def test_cli_turn_refused_by_the_opened_session_is_one_line_exit_2(tmp_path: Path) -> None:
    async with ReferenceServer(engine="scripted", profile="nemotron") as server:
        code, out, err = await cli(
            "--url", server.url, "--preset", "none", "--turn", "ptt", "--no-mic", "--no-camera",
            "--no-playback", "--output-dir", str(tmp_path / "run"),
        )  # fmt: skip
    assert code == 2 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "this continuous stream takes no commits" in lines[0], err
    assert json.loads((tmp_path / "run" / "result.json").read_text())["exit_code"] == 2


async def test_live_session_over_an_sdk_client_follows_its_format_and_drains() -> None:
    """The Python API: `LiveSession` over a client opened with a preset, no `run_live`."""
    from duplex_client import presets
    from tests.integration.live.helpers import Harness

    async with ReferenceServer(engine="scripted", profile="personaplex") as server:
        h = Harness(server.url, config=presets.personaplex(), turn="model", mic_rate=24000)
        async with h:
            await h.feed(400)
            assert h.session.fmt == h.client.input_pcm_format
            assert (h.session.fmt.encoding, h.session.fmt.sample_rate_hz) == ("pcm_f32le", 24000)
            assert len(h.session.append_ids) == 5  # 400 ms in 80 ms units
        assert h.session.timeline.input_format == F32_24K
        assert h.session.commit_ids == [] and h.session.drained is None
    async with ReferenceServer(engine="scripted", profile="nemotron") as server:
        h = Harness(server.url, config=presets.nemotron(), turn="model")
        async with h:
            await h.feed(240)
        assert h.session.drained is not None  # quit closed the stream, which drained
        assert h.session.drained.drained
        assert h.session.drained.drain["accepted_frames"] == len(h.session.append_ids) == 3
