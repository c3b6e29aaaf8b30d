"""The front door's figures and messages, as a user meets them: `duplex-cli` as a subprocess."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
from pathlib import Path

import numpy as np

from duplex_client.server import ReferenceServer, Script
from tests.e2e.helpers import CLI, ENV, load, run_cli
from tests.integration.live.helpers import write_wav

#: One question (0–500 ms, annotated) answered twice: at unit 1's close, and again, queued,
#: at unit 3's close: the second answer is a follow-up, not the turn's latency.
TWICE = {
    "rules": [
        {"on": "unit", "index": 1, "do": "speak", "text": "first", "audio_ms": 300},
        {"on": "unit", "index": 3, "do": "speak", "text": "again", "audio_ms": 300},
    ],
    "defaults": {"unit": {"do": "listen"}, "commit": {"do": "listen"}},
}


def _tone(ms: int, rate: int = 16000) -> bytes:
    t = np.arange(ms * rate // 1000) / rate
    return (0.3 * 32767 * np.sin(2 * np.pi * 440 * t)).astype("<i2").tobytes()


async def test_the_headline_is_the_first_answer_per_user_turn(tmp_path: Path) -> None:
    wav = write_wav(tmp_path / "q.wav", _tone(500) + bytes(2 * 16 * 4500))
    notes = tmp_path / "speech.json"
    notes.write_text(json.dumps([{"start_ms": 0, "end_ms": 500}]))
    run = tmp_path / "run"
    script = Script.from_dict(TWICE)
    async with ReferenceServer(profile="minicpmo", engine="scripted", script=script) as server:
        done = await run_cli(
            "--url", server.url, "--input-audio", str(wav), "--annotations", str(notes),
            "--output-dir", str(run),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    metrics = load(run, "result.json")["metrics"]
    first, later = metrics["first_answer_latency_ms"], metrics["follow_up_latency_ms"]
    assert first["count"] == 1 and later["count"] == 1
    assert 1000 < first["p50"] < 2000 < 3000 < later["p50"] < 4000
    assert metrics["latency_ms"]["count"] == 2  # pooled, not the headline
    summary = " ".join(done.stderr.split())
    assert f"heard latency first answer p50 {first['p50']:.1f} ms" in summary
    assert f"1 follow-up answer(s) p50 {later['p50']:.1f} ms" in summary
    page = subprocess.run(
        [CLI, "report", str(run)], capture_output=True, text=True, env=ENV, timeout=120
    )
    assert page.returncode == 0, page.stderr
    html = (run / "report.html").read_text()
    assert f"first-answer latency p50 {first['p50']:.1f} ms" in html
    assert f"follow-up answers: 1, p50 {later['p50']:.1f} ms" in html
