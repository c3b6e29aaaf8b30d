"""The notebook API: `stream_clip` returns the same result the CLI writes to result.json."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from duplex_client.run import UsageError, stream_clip
from duplex_client.server import ReferenceServer
from tests.support.media_files import write_clip

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
