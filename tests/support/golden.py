"""A run bundle reduced to what must not change when the code moves: times and ids aside.

`bundle_digest(dir)` reads every file of a bundle and keeps its deterministic content: JSON
documents with wall-clock times dropped and ids, ports and paths replaced by placeholders
(numbered by first appearance, so references between files still have to agree), the lines
of `events.jsonl` likewise, `transcript.txt` with its placements masked, WAV headers with the
sha256 of answer audio (the scripted engine's answers are the same bytes every run), and the
sha256 of every kept payload and thumbnail. Playback acks (their number follows the
ack timer) are left out of the events. Two runs of the same scripted stream give equal digests.

`SCENARIOS` are `duplex-cli` runs against a scripted reference server; `python -m
tests.support.golden DIR` records their digests as `DIR/<scenario>.json`. The files in
`tests/data/golden/` were recorded by the code before the run layer's move (c1c145a), with
this module copied into that tree: `tests/integration/test_golden_bundles.py` runs the same
scenarios now and compares. The thumbnails' digests (`frames/*.jpg`) were recorded again when
a JPEG of known size began to be decoded at a reduced scale for its thumbnail (issue 31);
nothing else in those files changed then.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import wave
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "examples" / "sample.mp4"
#: Unit 1 opens a 1 s answer; the commit (end of input) is a listen; other units listen.
SCRIPT: dict[str, Any] = {
    "rules": [
        {"on": "unit", "index": 1, "do": "speak", "audio_ms": 1000, "text": "an answer"},
        {"on": "commit", "do": "listen"},
    ],
    "defaults": {"unit": {"do": "listen"}},
}
#: Event types left out of the digest (how many there are follows the ack timer).
TIMED_EVENTS = frozenset({"playback.acknowledged"})

#: Keys whose values depend on the wall clock (receive times, lateness, latencies, durations).
TIME_KEY = re.compile(
    r"^(t_ms|media_ms|lateness(_ms)?|latency_ms|latencies_ms|server_ms|gap_ms|overlap_ms"
    r"|created_ms|decided_ms|first_audio_ms|done_ms|heard_(start|end)_ms|heard_ms|played_ms"
    r"|received_ms|committed_ms|acked_ms|events|duration_s|started_at|wall_s|user_end_ms|cut_ms|metrics|rtt_ms"
    r"|\w+_offset_ms|\w+_at|\w+_at_ms)$"
)
#: Ids the client or the server draws at random, by prefix.
ID = re.compile(r"(?<![a-z])([a-z]+(?:_[a-z]+)*)[_-]([0-9a-f]{16,})\b")
PORT = re.compile(r"127\.0\.0\.1:\d+")
#: WAVs whose samples are placed by arrival time (a few samples of jitter): header only.
PLACED_WAVS = ("heard.wav", "conversation.wav")


class _Names:
    """Placeholders numbered by first appearance: the same id gets the same name everywhere."""

    def __init__(self) -> None:
        self.ids: dict[str, str] = {}

    def sub(self, text: str, roots: tuple[str, ...]) -> str:
        def one(match: re.Match[str]) -> str:
            found = match.group(0)
            if found not in self.ids:
                self.ids[found] = f"<{match.group(1)}#{len(self.ids) + 1}>"
            return self.ids[found]

        text = ID.sub(one, text)
        text = PORT.sub("127.0.0.1:<port>", text)
        for n, root in enumerate(roots):
            text = text.replace(root, f"<root{n}>")
        return text


def _clean(value: Any, names: _Names, roots: tuple[str, ...]) -> Any:
    if isinstance(value, dict):
        return {
            k: _clean(v, names, roots) for k, v in sorted(value.items()) if not TIME_KEY.match(k)
        }
    if isinstance(value, list):
        return [_clean(v, names, roots) for v in value]
    if isinstance(value, str):
        return names.sub(value, roots)
    if isinstance(value, float):
        return round(value, 3)
    return value


def _wav(path: Path) -> dict[str, Any]:
    with wave.open(str(path), "rb") as w:
        out: dict[str, Any] = {
            "channels": w.getnchannels(),
            "rate": w.getframerate(),
            "width": w.getsampwidth(),
        }
        if path.name not in PLACED_WAVS:
            frames = w.readframes(w.getnframes())
            out["frames"] = w.getnframes()
            out["sha256"] = hashlib.sha256(frames).hexdigest()
    return out


def bundle_digest(bundle: Path, roots: tuple[str, ...] = ()) -> dict[str, Any]:
    """Every file of `bundle` by its (placeholder) name → its deterministic content."""
    names = _Names()
    roots = (*roots, str(bundle))
    digest: dict[str, Any] = {}
    for path in sorted(p for p in bundle.rglob("*") if p.is_file()):
        key = names.sub(str(path.relative_to(bundle)), roots)
        if path.suffix == ".json":
            digest[key] = _clean(json.loads(path.read_text(encoding="utf-8")), names, roots)
        elif path.name == "events.jsonl":
            lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
            digest[key] = [
                _clean(line, names, roots) for line in lines if line["type"] not in TIMED_EVENTS
            ]
        elif path.suffix == ".txt":
            text = re.sub(r"heard_start_ms=[-\d.]+", "heard_start_ms=<t>", path.read_text())
            digest[key] = names.sub(text, roots).splitlines()
        elif path.suffix == ".wav":
            digest[key] = _wav(path)
        else:
            digest[key] = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    return digest


def _tone_wav(path: Path, seconds: float = 3.0, rate: int = 16000) -> Path:
    """A 440 Hz tone as a 16-bit mono WAV (the same bytes on every machine)."""
    import math

    samples = bytearray()
    for n in range(int(seconds * rate)):
        value = int(0.3 * 32767 * math.sin(2 * math.pi * 440 * n / rate))
        samples += value.to_bytes(2, "little", signed=True)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(bytes(samples))
    return path


def _image(path: Path) -> Path:
    """A 64x48 colour-bar PNG (the same bytes on every machine)."""
    import cv2
    import numpy as np

    bars = np.zeros((48, 64, 3), dtype=np.uint8)
    for i, colour in enumerate(((255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0))):
        bars[:, i * 16 : (i + 1) * 16] = colour
    cv2.imwrite(str(path), bars)
    return path


#: name → the `duplex-cli` arguments, given the work dir and the server URL (in this order:
#: `replay` sends the bundle `stream` wrote).
SCENARIOS: dict[str, Any] = {
    "stream": lambda work, url: [
        *("stream", "--input-video", str(SAMPLE), "--tail-silence-s", "1", "--url", url),
        *("--keep-payloads", "--output-dir", str(work / "stream"), "-q"),
    ],
    "replay": lambda work, url: [
        *("replay", str(work / "stream"), "--url", url, "-o", str(work / "replay"), "-q"),
    ],
    "live": lambda work, url: [
        *("live", "--url", url, "--mic-file", str(_tone_wav(work / "tone.wav"))),
        *("--camera-file", str(_image(work / "bars.png")), "--no-playback"),
        *("--duration-s", "3", "--preset", "minicpmo", "--output-dir", str(work / "live"), "-q"),
    ],
}


#: Runs of a scenario whose timing a loaded machine lost (a stall of a few hundred ms makes it
#: timing-invalid, with a warning in `result.json`): such a run is a different run, not a
#: changed record, so it is run again; the last attempt is compared whatever it says.
TIMING_ATTEMPTS = 3


def _timing_kept(bundle: Path) -> bool:
    """Whether the run kept its timing (a bundle without `result.json` has nothing to lose)."""
    result = bundle / "result.json"
    return not result.exists() or json.loads(result.read_text()).get("timing_valid") is not False


def run_scenarios(work: Path, cli: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run every scenario against one scripted server; their digests by name."""
    (work / "script.json").write_text(json.dumps(SCRIPT))
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "duplex_client.server", "--port", "0"),
            *("--engine", "scripted", "--max-sessions", "2"),
            *("--script", str(work / "script.json")),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("listening "), line
        url = line.split()[1]
        digests = {}
        for name, args in SCENARIOS.items():
            for attempt in range(TIMING_ATTEMPTS):
                shutil.rmtree(work / name, ignore_errors=True)
                done = subprocess.run(
                    [cli, *args(work, url)], capture_output=True, text=True, env=env, timeout=120
                )
                assert done.returncode == 0, f"{name}: {done.stderr}"
                if _timing_kept(work / name) or attempt == TIMING_ATTEMPTS - 1:
                    break
            digests[name] = bundle_digest(work / name, (str(work), str(ROOT)))
        return digests
    finally:
        server.terminate()
        server.wait(10)


def main(argv: list[str]) -> int:
    """`DIR`: record every scenario's digest as `DIR/<scenario>.json`."""
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    cli = str(Path(sys.executable).with_name("duplex-cli"))
    with tempfile.TemporaryDirectory() as work:
        digests = run_scenarios(Path(work), cli, dict(os.environ))
    for name, digest in digests.items():
        (out / f"{name}.json").write_text(json.dumps(digest, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
