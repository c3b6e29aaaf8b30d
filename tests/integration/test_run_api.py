"""The notebook API: `stream_clip` returns the same result the CLI writes to result.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duplex_client.framing import check_timeline
from duplex_client.run.stream import UsageError, stream_clip
from duplex_client.server import ReferenceServer
from duplex_client.server.config import speech_available
from tests.integration.live.helpers import write_wav
from tests.support.media_files import write_clip
from tests.support.numbering import numbering_pairs

ROOT = Path(__file__).resolve().parents[2]


async def test_stream_clip_returns_result_matching_bundle(tmp_path: Path) -> None:
    clip = write_clip(tmp_path / "c.mp4", video_seconds=2.0, audio_seconds=2.0, fps=10)
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        result = await stream_clip(
            server.url,
            input_video=str(clip),
            tail_silence_s=0.4,
            realtime=False,
            output_dir=tmp_path / "run",
        )
    assert result.ok and result.exit_code == 0 and result.bundle_dir == tmp_path / "run"
    on_disk = json.loads((tmp_path / "run" / "result.json").read_text())
    assert on_disk == json.loads(json.dumps(result.to_dict()))
    assert isinstance(result.audio, np.ndarray) and result.audio.dtype == np.int16
    assert len(result.audio) == result.counts["output_audio_ms"] * 24
    assert result.timeline is not None and result.timeline["totals"]["appends"] == 12
    assert [d["decision"] for d in result.decisions].count("speak") == result.counts["speak"]
    assert result.transcript
    # asap pacing has no listener clock: nothing heard-time is measured, and the bundle says why
    assert result.timing == "not_realtime" and on_disk["timing"] == "not_realtime"
    assert "turns" not in on_disk and "metrics" not in on_disk
    assert "heard.wav" in on_disk["omitted"] and not (tmp_path / "run" / "heard.wav").exists()
    assert not (tmp_path / "run" / "conversation.wav").exists()


async def test_stream_clip_rejects_bad_options_before_sending(tmp_path: Path) -> None:
    try:
        await stream_clip(None, input_video=str(tmp_path / "x.mp4"), chunk_ms=0)
    except UsageError as exc:
        assert str(exc).startswith("chunk_ms must be positive") and exc.param == "chunk_ms"
    else:
        raise AssertionError("expected UsageError")


def test_notebook_example_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "notebook_stream.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "ok: True" in done.stdout and "closes unit 0" in done.stdout
    assert (tmp_path / "runs" / "notebook-example" / "result.json").exists()


@pytest.mark.skipif(not speech_available(), reason="needs the server extra (speech engine)")
async def test_a_server_vad_stream_follows_the_servers_commits(tmp_path: Path) -> None:
    """JoyAI-style: the server commits at speech end; the client re-anchors and acks in time."""
    from duplex_client.server.engine.tts import speech_pcm16

    first = speech_pcm16("what color do you see", 16000, lead_ms=300, tail_ms=1500)
    second = speech_pcm16("tell me what color you see", 16000, tail_ms=1200)
    wav = write_wav(tmp_path / "talk.wav", first + second)
    clip = write_clip(tmp_path / "c.mp4", video_seconds=6.0, fps=5)
    async with ReferenceServer(profile="joyai", engine="speech") as server:
        result = await stream_clip(
            server.url,
            input_video=str(clip),
            input_audio=str(wav),
            preset="joyai",
            output_dir=tmp_path / "run",
        )
        accepted = server.appends()
        remembered = [i for i in server.history() if i.get("role") == "assistant"]
    # Acks carry what the virtual listener heard, before each next commit: no
    # playback_ack_too_late, so the run is ok, and the history holds exactly what was acked.
    assert result.ok, result.error
    spoken = [d for d in result.decisions if d["decision"] == "speak"]
    assert len(spoken) == 2
    acked: dict[str, dict[str, Any]] = {}
    for line in (tmp_path / "run" / "events.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["type"] == "playback.acknowledged":
            acked[row["event"]["response_id"]] = row["event"]
    assert [i["audio_ms"] for i in remembered] == [
        acked[d["response_id"]]["played_ms"] for d in spoken
    ]
    turns = {t.response_id: t for t in result.turns or []}
    for d in spoken:
        turn, ack = turns[d["response_id"]], acked[d["response_id"]]
        assert ack["played_ms"] <= turn.heard_ms <= turn.received_ms
        if turn.cut:  # stopped by the user's speech: acked whole-heard, truncating
            assert ack["truncate"] and ack["played_ms"] == int(turn.heard_ms)
    # the first answer was still playing when the second question began: the SDK stops it
    first = turns[spoken[0]["response_id"]]
    assert first.cut == "input_audio_buffer.speech_started" and first.heard_ms < first.received_ms
    timeline = result.timeline
    assert timeline is not None
    commits = timeline["server_commits"]
    assert len(commits) == 2 and all(c["audio_end_ms"] % 1000 for c in commits)  # inside units
    ours, theirs = numbering_pairs(timeline, accepted)
    assert len(ours) > 25 and ours == theirs
    assert check_timeline(timeline) == []
