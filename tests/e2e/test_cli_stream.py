"""`duplex-cli stream` as a subprocess: the bundle it leaves, against real servers.

The reference server runs in this test's event loop (so the test can read its view of the
accepted appends) or as `duplex-cli serve` in its own process; the CLI is always a separate
process, exactly as a user runs it.
"""

from __future__ import annotations

import asyncio
import json
import signal
from pathlib import Path

import cv2
import numpy as np
import pytest

from duplex_client.server import ReferenceServer
from tests.e2e.helpers import (
    CLI,
    ENV,
    assert_received_once,
    assert_server_view_matches,
    events,
    load,
    run_cli,
    wav_ms,
)
from tests.support.media_files import write_audio_file, write_clip


@pytest.fixture(scope="module")
def silent_clip(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3 s of video, no audio track."""
    return write_clip(tmp_path_factory.mktemp("media") / "silent.mp4", video_seconds=3.0, fps=10)


async def test_stream_to_reference_server_bundle_matches_server_view(
    clip: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        done = await run_cli(
            "--url",
            server.url,
            "--input-video",
            str(clip),
            "--tail-silence-s",
            "1",
            "--output-dir",
            str(run),
            "--burst",
            "--json",
        )
        server_rows = server.appends()
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["ok"] is True and result["status"] == "ok" and result["exit_code"] == 0
    assert sorted(p.name for p in run.iterdir() if not p.name.startswith("response_")) == [
        "events.jsonl",
        "frames",
        "input_timeline.json",
        "output.wav",
        "result.json",
        "session.json",
        "transcript.txt",
    ]
    timeline = load(run, "input_timeline.json")
    rows = timeline["appends"]
    # 3.5 s soundtrack trimmed to 3 s + 1 s tail: 20 appends, frames on 1000..4000
    policy = timeline["soundtrack_policy"]
    assert policy["policy"] == "trim" and 3500 <= policy["original_ms"] < 3600  # AAC priming
    assert policy["trimmed_ms"] == policy["original_ms"] - 3000
    assert len(rows) == 20 and rows[-1]["audio_end_ms"] == 4000
    assert [r["audio_end_ms"] for r in rows if r["frames"]] == [1000, 2000, 3000, 4000]
    # the server accepted exactly what the timeline says was sent, row by row
    assert_server_view_matches(run, server_rows)
    # every event once, and output.wav holds every audio delta once
    evs = assert_received_once(run)
    # the transcript file and the result agree with each response's transcript deltas
    said: dict[str, str] = {}
    for e in evs:
        if e["type"] == "response.output_audio_transcript.delta":
            rid = e["event"]["response_id"]
            said[rid] = said.get(rid, "") + e["event"]["delta"]
    assert said and all(text for text in said.values())
    written = (run / "transcript.txt").read_text()
    # asap pacing: no listener clock, so no heard position
    where = {
        d["response_id"]: f"unit_index={d['unit_index']} heard_start_ms=-"
        for d in result["decisions"]
        if d["decision"] == "speak"
    }
    assert all(
        f"{rid} speak (completed) {where[rid]}: {text}" in written for rid, text in said.items()
    )
    assert result["transcript"] == "\n".join(said.values())
    session = load(run, "session.json")
    assert session["capabilities"]["first_unit_ms"] == 1000
    assert load(run, "result.json")["session_id"] == result["session_id"]


async def test_stream_with_embedded_default_server(clip: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = await run_cli(
        "--input-video", str(clip), "--output-dir", str(run), "--tail-silence-s", "0.6"
    )
    assert done.returncode == 0, done.stderr
    result = load(run, "result.json")
    assert result["ok"] and result["url"].startswith("ws://127.0.0.1:")
    assert result["counts"]["speak"] >= 1 and wav_ms(run / "output.wav") > 0
    # realtime pacing: nothing is sent ahead of its media deadline
    timeline = load(run, "input_timeline.json")
    assert timeline["clock"]["pacing"] == "realtime"
    assert all(r["sent_offset_ms"] >= r["scheduled_offset_ms"] for r in timeline["appends"])
    assert "run summary" in done.stderr  # not a terminal: the summary on stderr, no panel
    assert done.stdout == ""


async def test_clip_without_audio_sends_vision_units(silent_clip: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        done = await run_cli(
            "--url",
            server.url,
            "--input-video",
            str(silent_clip),
            "--tail-silence-s",
            "1",
            "--output-dir",
            str(run),
            "--burst",
        )
    assert done.returncode == 0, done.stderr
    rows = load(run, "input_timeline.json")["appends"]
    assert [(r["unit_kind"], r["media_start_ms"], r["duration_ms"]) for r in rows] == [
        ("VISION", 0, 0),
        ("VISION", 1000, 0),
        ("VISION", 2000, 0),
        ("VISION", 3000, 0),
    ]
    assert rows[-1]["segment"] == "tail" and rows[-1]["frames"][0]["held"] is True


async def test_require_audio_turns_vision_units_into_fallback(
    silent_clip: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"
    done = await run_cli(
        "--input-video",
        str(silent_clip),
        "--require-audio",
        "--output-dir",
        str(run),
        "--burst",
    )
    assert done.returncode == 0, done.stderr
    timeline = load(run, "input_timeline.json")
    assert timeline["unit_grid"]["input_unit_kinds"] == ["AUDIO", "OMNI"]
    rows = timeline["appends"]
    assert len(rows) == 15 and all(r["fallback"] and r["is_speech"] is False for r in rows)
    assert [r["audio_end_ms"] for r in rows if r["frames"]] == [1000, 2000, 3000]


async def test_external_wav_with_video_and_tail(clip: Path, tmp_path: Path) -> None:
    """A 1.4 s WAV with a 3 s video is padded to the video: every frame goes out (issue 32)."""
    wav = write_audio_file(tmp_path / "speech.wav", 1.4, 16000, 440.0)
    run = tmp_path / "run"
    done = await run_cli(
        "--input-video",
        str(clip),
        "--input-audio",
        str(wav),
        "--tail-silence-s",
        "1",
        "--output-dir",
        str(run),
        "--burst",
    )
    assert done.returncode == 0, done.stderr
    timeline = load(run, "input_timeline.json")
    rows = timeline["appends"]
    assert timeline["audio_source"]["kind"] == "wav" and timeline["soundtrack_policy"] is None
    assert timeline["audio_source"]["fitted_to_video"] == {
        "policy": "trim",
        "audio_ms": 1400,
        "video_ms": 3000,
        "padded_ms": 1600,
    }
    assert len(rows) == 20 and [r["segment"] for r in rows] == ["clip"] * 15 + ["tail"] * 5
    framed = [(r["audio_end_ms"], r["frames"][0]["source_pts_ms"]) for r in rows if r["frames"]]
    assert framed[:3] == [(1000, 0), (2000, 1000), (3000, 2000)]
    # the WAV's audio is sent as it is; what follows it is silence, marked as such
    assert [r["is_speech"] for r in rows[:7]] == [None] * 7
    assert all(r["is_speech"] is False for r in rows[8:])
    assert "shorter than" not in done.stderr


async def test_external_wav_with_soundtrack_full_stops_with_the_audio(
    clip: Path, tmp_path: Path
) -> None:
    """`--soundtrack full` sends the WAV as is: the video after it is not sent, and said so."""
    wav = write_audio_file(tmp_path / "speech.wav", 1.4, 16000, 440.0)
    run = tmp_path / "run"
    done = await run_cli(
        "--input-video", str(clip), "--input-audio", str(wav), "--soundtrack", "full",
        "--output-dir", str(run), "--burst",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    timeline = load(run, "input_timeline.json")
    assert timeline["audio_source"]["fitted_to_video"] == {
        "policy": "full",
        "audio_ms": 1400,
        "video_ms": 3000,
        "video_not_sent_ms": 1600,
    }
    rows = timeline["appends"]
    assert rows[-1]["media_end_ms"] == 1400
    assert [r["audio_end_ms"] for r in rows if r["frames"]] == [1000]
    assert "speech.wav (1400 ms) is shorter than" in done.stderr
    assert "the video after its end is not sent" in done.stderr


async def test_manual_commit_then_response_create(clip: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        done = await run_cli(
            "--url",
            server.url,
            "--input-video",
            str(clip),
            "--manual-commit",
            "--output-dir",
            str(run),
            "--burst",
        )
    assert done.returncode == 0, done.stderr
    session = load(run, "session.json")
    assert session["config_sent"]["extra_body"]["auto_response"] is False
    types = [e["type"] for e in events(run)]
    committed = types.index("input_audio_buffer.committed")
    assert "response.created" in types[committed:]
    assert load(run, "result.json")["counts"]["speak"] >= 1


async def test_ctrl_c_keeps_a_partial_bundle(clip: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    proc = await asyncio.create_subprocess_exec(
        CLI,
        "stream",
        "--input-video",
        str(clip),
        "--tail-silence-s",
        "5",
        "--output-dir",
        str(run),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=ENV,
    )
    log = run / "events.jsonl"
    for _ in range(400):  # wait until the session is up and streaming
        if log.exists() and len(log.read_text().splitlines()) > 4:
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 130, err.decode()
    result = load(run, "result.json")
    assert result["status"] == "interrupted" and result["ok"] is False
    assert load(run, "input_timeline.json")["appends"]


async def test_stream_to_duplex_cli_serve_process(tmp_path: Path) -> None:
    """Two processes, as a user runs them: `duplex-cli serve`, then `duplex-cli stream --url`."""
    wav = write_audio_file(tmp_path / "q.wav", 2.2, 16000, 440.0)
    image = tmp_path / "red.png"
    cv2.imwrite(str(image), np.full((48, 64, 3), (0, 0, 255), np.uint8))
    server = await asyncio.create_subprocess_exec(
        CLI, "serve", "--port", "0", "--engine", "scripted",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, env=ENV,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        line = ""
        while "ws://" not in line:
            line = (await asyncio.wait_for(server.stdout.readline(), 30)).decode()
            assert line, "duplex-cli serve printed no URL"
        url = next(w for w in line.split() if w.startswith("ws://"))
        run = tmp_path / "run"
        done = await run_cli("--url", url, "--input-audio", str(wav), "--input-image", str(image),
                             "--output-dir", str(run), "-q")  # fmt: skip
    finally:
        server.send_signal(signal.SIGINT)
        await asyncio.wait_for(server.wait(), 30)
    assert done.returncode == 0, done.stderr
    assert server.returncode == 0
    timeline = load(run, "input_timeline.json")
    rows = timeline["appends"]
    assert timeline["video"]["kind"] == "image" and timeline["audio_source"]["kind"] == "wav"
    # 2.2 s of audio at realtime pacing: 11 appends, the image held on both unit closes
    assert len(rows) == 11 and [r["audio_end_ms"] for r in rows if r["frames"]] == [1000, 2000]
    assert all(f["held"] for r in rows for f in r["frames"])
    assert all(r["sent_offset_ms"] >= r["scheduled_offset_ms"] for r in rows)
    assert_received_once(run)
    assert load(run, "result.json")["ok"] is True


async def test_the_sample_clip_run_prints_a_heard_latency(tmp_path: Path) -> None:
    """What `make run` does: the summary's heard latency is the result's first answer."""
    sample = Path(__file__).resolve().parents[2] / "examples" / "sample.mp4"
    run = tmp_path / "run"
    done = await run_cli(
        "--input-video", str(sample), "--tail-silence-s", "1", "--output-dir", str(run)
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = load(run, "result.json")
    first = result["metrics"]["first_answer_latency_ms"]
    assert result["timing"] == "realtime" and first["count"] >= 1
    assert 0 < first["p50"] < 3000  # the spoken question is answered within seconds
    summary = " ".join(done.stderr.split())  # stdout is not a terminal: stderr
    assert "heard latency" in summary and f"first answer p50 {first['p50']:.1f} ms" in summary
    assert (run / "heard.wav").exists() and (run / "conversation.wav").exists()
    assert not (run / ".sent_input.pcm").exists()


async def test_a_truncated_faststart_clip_is_one_warning_line(tmp_path: Path) -> None:
    """The CLI shows a media warning as one `warning:` line, no Python warning display."""
    from tests.support.media_files import write_clip

    whole = write_clip(tmp_path / "fast.mp4", video_seconds=3.0, audio_seconds=3.0, faststart=True)
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        done = await run_cli(
            "--url", server.url, "--input-video", str(cut), "--burst", "-q",
            "--output-dir", str(tmp_path / "run"),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines and all(line.startswith(f"warning: {cut}: ") for line in lines)
    assert any(line.startswith(f"warning: {cut}: truncated: audio ends at") for line in lines)
    assert len(set(lines)) == len(lines)  # each said once
    assert "MediaWarning" not in done.stderr and ".py:" not in done.stderr


async def test_video_fps_above_the_frames_sent_is_explained(clip: Path, tmp_path: Path) -> None:
    """`--video-fps 3` with one frame a unit is said, not ignored (#32; stacking 3 frames sends
    them without a word: `test_frames_note_says_when_video_fps_is_more_than_is_sent`)."""
    said = "video_fps 3 asks for more frames than are sent: each 1000 ms unit carries"
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        done = await run_cli(
            "--url", server.url, "--input-video", str(clip), "--video-fps", "3", "--burst",
            "--output-dir", str(tmp_path / "a"),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"warning: {said} the frame shown at its start (1 a second); raise stack_frames" in (
        done.stderr
    )
    assert said in " ".join(load(tmp_path / "a", "result.json")["warnings"])


async def test_a_truncated_wav_is_streamed_with_a_warning(tmp_path: Path) -> None:
    """A WAV cut short says so, as a cut MP4 does, and what it holds is sent (issue 32)."""
    full = write_audio_file(tmp_path / "full.wav", 3.0, 16000, 440.0)
    data = full.read_bytes()
    cut = tmp_path / "cut.wav"
    cut.write_bytes(data[: len(data) // 2])
    run = tmp_path / "run"
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        done = await run_cli(
            "--url", server.url, "--input-audio", str(cut), "--burst", "--output-dir", str(run)
        )
    assert done.returncode == 0, done.stderr
    said = (
        f"{cut}: truncated WAV: its header declares 3.00 s of audio, the file holds 1.50 s; "
        "using what is readable"
    )
    assert f"warning: {said}" in done.stderr
    assert load(run, "result.json")["warnings"] == [said]
    assert load(run, "input_timeline.json")["audio_source"]["duration_ms"] == 1499
