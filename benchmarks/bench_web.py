"""`duplex-cli web` against terminal live mode, in the same run: capture and playback latency.

Both paths talk to the same reference server (a child process, scripted engine: a 1 s answer
every third unit, sent in 40 ms deltas 40 ms apart as a streaming voice would) for the same
length of speech-like input:

- **web**: Chromium (headless, fake devices: the WAV as its microphone, no camera) drives the
  page; its AudioWorklet captures and plays; one `duplex-cli web` process (`WebApp`) holds
  the session.
- **terminal live**: `run_live` with the fake `sounddevice` of the live tests (a microphone
  paced in real time from the same WAV, a speaker rendering in real time, 20 ms blocks).

Figures, from each run's bundle:

- **capture-to-append**: from the capture of the first sample of the block that completed an
  append (the block's `captured_at`, 20 ms blocks) to the append leaving the client:
  `lateness_ms` of the timeline row (on the capture clock) plus the block. Target for the
  web: p99 ≤ block + 30 ms.
- **first-delta-to-playback**: from an answer's first audio delta arriving to its first
  sample at the speaker (`heard_start_ms - first_audio_ms` of `result.json`'s turns). Target
  for the web: p99 ≤ the jitter buffer (80 ms) + 20 ms.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import wave
from pathlib import Path
from typing import Any

from benchmarks._common import machine, percentile, quick_mode, speech_like_pcm, table

BLOCK_MS = 20
JITTER_MS = 80
SECONDS, QUICK_SECONDS = 60, 12
#: A 1 s answer every third unit, in 40 ms deltas 40 ms apart.
ANSWER = {"on": "unit", "do": "speak", "audio_ms": 1000}
SCRIPT = {
    "rules": [{**ANSWER, "index": i} for i in range(1, 200, 3)],
    "chunk_ms": 40,
    "chunk_interval_ms": 40,
}


def write_wav(path: Path, seconds: int) -> Path:
    """Speech-like 16 kHz PCM16 (the content does not matter: the engine is scripted)."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(speech_like_pcm(seconds * 1000))
    return path


def figures(bundle: Path) -> dict[str, list[float]]:
    """Capture-to-append and first-delta-to-playback samples (ms) from a bundle."""
    timeline = json.loads((bundle / "input_timeline.json").read_text())
    result = json.loads((bundle / "result.json").read_text())
    capture = [r["lateness_ms"] + BLOCK_MS for r in timeline["appends"] if r["audio_bytes"]]
    playback = [
        t["heard_start_ms"] - t["first_audio_ms"]
        for t in result["turns"] or []
        if t["heard_start_ms"] is not None and t["first_audio_ms"] is not None
    ]
    return {"capture": capture, "playback": playback, "ok": [float(result["ok"])]}


async def terminal_live(url: str, wav: Path, seconds: int, out: Path) -> Path:
    """A terminal live run with the live tests' fake sound device (paced in real time)."""
    from duplex_client.run.live import LiveDevices, run_live
    from duplex_client.run.options import RunOptions
    from tests.unit.live.fakes import FakeSoundDevice

    sd = FakeSoundDevice(wav=wav, pace=1.0)
    options = RunOptions(
        preset="minicpmo", no_camera=True, duration_s=seconds, jitter_ms=JITTER_MS, output_dir=out
    )
    await run_live(url, options, devices=LiveDevices(sounddevice=sd))
    return out


async def web(url: str, wav: Path, seconds: int, out: Path) -> Path:
    """A browser session: Chromium's fake microphone plays the WAV, no camera."""
    from duplex_client.run.options import RunOptions
    from duplex_client.web import WebApp, WebConfig

    options = RunOptions(preset="minicpmo", duration_s=seconds, jitter_ms=JITTER_MS)
    app = WebApp(WebConfig(url=url, options=options, output_dir=out))
    async with app:
        await asyncio.to_thread(_drive_page, app.page_url, wav, seconds)
    return app.bundles[1]


def _drive_page(url: str, wav: Path, seconds: int) -> None:
    from tests.support.web import chromium_with, fake_device_args, open_web

    with chromium_with(fake_device_args(wav)) as browser, open_web(browser, url) as page:
        page.page.wait_for_selector("#start:not([disabled])")
        page.page.select_option("#camera-select", "none")
        page.start(mode="model")
        page.wait_status("stopped", "error", timeout_s=seconds + 60)


async def run(seconds: int, root: Path) -> dict[str, dict[str, list[float]]]:
    from duplex_client.run.embedded import embedded_server

    script = root / "script.json"
    script.write_text(json.dumps(SCRIPT))
    wav = write_wav(root / "input.wav", seconds + 10)
    out: dict[str, dict[str, list[float]]] = {}
    async with embedded_server(profile="minicpmo", script=str(script)) as url:
        out["terminal live"] = figures(await terminal_live(url, wav, seconds, root / "live"))
    async with embedded_server(profile="minicpmo", script=str(script)) as url:
        out["web"] = figures(await web(url, wav, seconds, root / "web"))
    return out


def main(argv: list[str] | None = None) -> None:
    """Run both paths and print the table and the verdicts."""
    quick = quick_mode(argv)
    seconds = QUICK_SECONDS if quick else SECONDS
    print(machine())
    print("load average before:", ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    with tempfile.TemporaryDirectory() as tmp:
        got = asyncio.run(run(seconds, Path(tmp)))
    rows: list[list[Any]] = []
    for path, f in got.items():
        cap, play = f["capture"], f["playback"]
        rows.append(
            [
                path,
                len(cap),
                f"{percentile(cap, 0.5):.1f}",
                f"{percentile(cap, 0.99):.1f}",
                len(play),
                f"{percentile(play, 0.5):.1f}",
                f"{percentile(play, 0.99):.1f}",
                "yes" if f["ok"] == [1.0] else "NO",
            ]
        )
    heads = (
        "path", "appends", "capture→append p50 ms", "p99 ms", "answers",
        "first delta→playback p50 ms", "p99 ms", "ok",
    )  # fmt: skip
    print(f"{seconds} s each, {BLOCK_MS} ms blocks, jitter buffer {JITTER_MS} ms")
    print(table(heads, rows))
    web_f = got["web"]
    cap99, play99 = percentile(web_f["capture"], 0.99), percentile(web_f["playback"], 0.99)
    cap_ok = cap99 <= BLOCK_MS + 30
    play_ok = bool(web_f["playback"]) and play99 <= JITTER_MS + 20
    print(f"web capture→append p99 {cap99:.1f} ms (target ≤ {BLOCK_MS + 30}): "
          f"{'met' if cap_ok else 'MISSED'}")  # fmt: skip
    print(f"web first delta→playback p99 {play99:.1f} ms (target ≤ {JITTER_MS + 20}): "
          f"{'met' if play_ok else 'MISSED'}")  # fmt: skip
    if quick:
        print("(quick run: the figures mean nothing)")


if __name__ == "__main__":
    main()
