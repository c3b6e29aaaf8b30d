"""The notebook API: `stream_clip` returns the same result the CLI writes to result.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from duplex_client.framing import check_timeline
from duplex_client.run import UsageError, stream_clip
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
    assert result.transcript and result.latencies_ms["first_audio_from_commit"] is not None


async def test_stream_clip_rejects_bad_options_before_sending(tmp_path: Path) -> None:
    try:
        await stream_clip(None, input_video=str(tmp_path / "x.mp4"), chunk_ms=0)
    except UsageError as exc:
        assert "--chunk-ms" in str(exc)
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
    # Both answers were acked at response.done, before the next server commit: no
    # playback_ack_too_late, so the run is ok and both answers are in the history, whole.
    assert result.ok, result.error
    spoken = [d for d in result.decisions if d["decision"] == "speak"]
    assert len(spoken) == 2
    assert [i["audio_ms"] for i in remembered] == [d["audio_ms"] for d in spoken]
    timeline = result.timeline
    assert timeline is not None
    commits = timeline["server_commits"]
    assert len(commits) == 2 and all(c["audio_end_ms"] % 1000 for c in commits)  # inside units
    ours, theirs = numbering_pairs(timeline, accepted)
    assert len(ours) > 25 and ours == theirs
    assert check_timeline(timeline) == []
