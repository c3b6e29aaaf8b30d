"""`duplex-cli replay --sweep`: one recorded input, one condition varied, a table of the turns.

The input is real speech (eSpeak NG): "yes" at 200 ms, an 800 ms pause, "hello", then silence,
recorded with its annotation. The scripted server speaks when units 2 and 4 close (about
3000 and 5000 ms), whatever it hears: so the pause length decides which user turn each answer
follows, and the replays' turn metrics (VAD over what was sent) show it.
"""

from __future__ import annotations

import json
import statistics
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.e2e.eval_support import servers, write_script
from tests.e2e.helpers import CLI, ENV

pytestmark = pytest.mark.timeout(300)

RATE = 16000
SCRIPT: dict[str, Any] = {
    "rules": [
        {"on": "unit", "index": 2, "do": "speak", "audio_ms": 400, "text": "one"},
        {"on": "unit", "index": 4, "do": "speak", "audio_ms": 400, "text": "two"},
        {"on": "commit", "do": "listen"},
    ],
    "defaults": {"unit": {"do": "listen"}},
}
PAUSES = "-500,0,1200,3200"  # the 800 ms pause becomes 300, 800, 2000 and 4000 ms


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """`duplex-cli ARGS` to its end."""
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=ENV, timeout=120)


def write_talk(root: Path) -> tuple[Path, Path]:
    """The WAV and its annotation file (the audible span of each phrase)."""
    from duplex_client.bundle.wavfile import write_wav
    from duplex_client.server.engine.tts import synthesize

    def phrase(text: str) -> Any:
        samples = synthesize(text, RATE).samples
        audible = np.flatnonzero(np.abs(samples.astype(np.int32)) > 64)
        return samples[audible[0] : audible[-1] + 1]

    yes, hello = phrase("yes"), phrase("hello")
    gap = [np.zeros(ms * RATE // 1000, dtype=np.int16) for ms in (200, 800, 300)]
    write_wav(root / "talk.wav", np.concatenate([gap[0], yes, gap[1], hello, gap[2]]), RATE)
    a_end = 200 + len(yes) * 1000 / RATE
    b_start = a_end + 800
    segments = [
        {"start_ms": 200, "end_ms": round(a_end, 3)},
        {"start_ms": round(b_start, 3), "end_ms": round(b_start + len(hello) * 1000 / RATE, 3)},
    ]
    (root / "talk.json").write_text(json.dumps(segments), encoding="utf-8")
    return root / "talk.wav", root / "talk.json"


@dataclass
class Sweeps:
    """The original bundle and the sweeps run on it."""

    original: Path
    root: Path
    pause: subprocess.CompletedProcess[str]
    done: dict[str, subprocess.CompletedProcess[str]]

    def doc(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = json.loads((self.root / name / "sweep.json").read_text())
        return out


def sent_sha256(bundle: Path) -> str:
    digest: str = json.loads((bundle / "input_timeline.json").read_text())["totals"]["sent_sha256"]
    return digest


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> Sweeps:
    """Record once, then replay it under each condition (most side by side)."""
    for module in ("onnxruntime", "espeakng_loader"):
        pytest.importorskip(module, reason="needs the server and vad extras (speech, VAD)")
    root = tmp_path_factory.mktemp("sweep")
    wav, annotations = write_talk(root)
    script = write_script(root / "script.json", SCRIPT)
    with servers(script, max_sessions=8) as (server,):
        recorded = cli(
            "stream", "--input-audio", str(wav), "--annotations", str(annotations),
            "--tail-silence-s", "3.5", "--url", server.url, "--keep-payloads",
            "--output-dir", str(root / "original"), "-q",
        )  # fmt: skip
        assert recorded.returncode == 0, recorded.stderr
        original = str(root / "original")

        def replay(name: str, spec: str, *seed: str) -> subprocess.Popen[str]:
            return subprocess.Popen(
                [CLI, "replay", original, "--url", server.url, "--sweep", spec, *seed,
                 "-o", str(root / name)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
            )  # fmt: skip

        # The jitter pair, whose send offsets are compared, runs one run after the other
        # beside the pause sweep alone; then the sweeps whose checks hold under any timing
        # run side by side.
        running = {"pause": replay("pause", f"pause_ms={PAUSES}")}
        done = {}
        for name in ("jitter_a", "jitter_b"):
            done[name] = cli("replay", original, "--url", server.url, "--sweep", "jitter_ms=60",
                             "--seed", "4", "-o", str(root / name), "-q")  # fmt: skip
        running["noise_a"] = replay("noise_a", "noise_db=10", "--seed", "9")
        running["noise_b"] = replay("noise_b", "noise_db=10", "--seed", "9")
        running["drop"] = replay("drop", "drop_at_ms=1500", "--seed", "0")
        for name, process in running.items():
            out, err = process.communicate(timeout=120)
            done[name] = subprocess.CompletedProcess(process.args, process.returncode, out, err)
    return Sweeps(root / "original", root, done.pop("pause"), done)


def test_a_pause_sweep_gives_the_expected_turn_table(sweeps: Sweeps) -> None:
    assert sweeps.pause.returncode == 0, sweeps.pause.stderr
    doc = sweeps.doc("pause")
    rows = doc["rows"]
    assert doc["condition"] == "pause_ms" and [r["value"] for r in rows] == [-500, 0, 1200, 3200]
    assert all(r["ok"] for r in rows)
    # 300 ms: one user turn, answered. 800 ms: both answers follow "hello" ("yes" unanswered).
    # 2000 ms: the first answer falls in the pause ("yes"), the second follows "hello".
    # 4000 ms: both answers fall in the pause: "hello" is unanswered.
    table = [(r["user_turns"], r["speak_decisions"], r["unanswered_turns"], r["turn_over"])
             for r in rows]  # fmt: skip
    assert table == [(1, 2, 0, 1.0), (2, 2, 1, 0.5), (2, 2, 0, 1.0), (2, 2, 1, 0.5)]
    digests = [r["sent_sha256"] for r in rows]
    assert len(set(digests)) == 4
    assert digests[1] == sent_sha256(sweeps.original)  # a 0 ms change re-cuts the same input
    for row in rows:
        bundle = Path(row["bundle_dir"])
        assert sent_sha256(bundle) == row["sent_sha256"]
        sent = (bundle / "input.pcm").stat().st_size
        original = (sweeps.original / "input.pcm").stat().st_size
        assert sent - original == row["value"] * 32  # 16 kHz PCM16: 32 bytes a ms
    md = (sweeps.root / "pause" / "sweep.md").read_text()
    assert "| pause_ms | ok |" in md and "| -500 | yes |" in md
    assert "| 0 | yes |" in sweeps.pause.stdout and "| 0.5 |" in sweeps.pause.stdout


def test_jitter_with_the_same_seed_sends_at_the_same_offsets_and_the_same_input(
    sweeps: Sweeps,
) -> None:
    logs = []
    for name in ("jitter_a", "jitter_b"):
        assert sweeps.done[name].returncode == 0, sweeps.done[name].stderr
        (row,) = sweeps.doc(name)["rows"]
        assert row["sent_sha256"] == sent_sha256(sweeps.original)
        logs.append(json.loads((Path(row["bundle_dir"]) / "condition.json").read_text()))
    a, b = (log["sends"] for log in logs)
    assert len(a) == len(b) > 20
    assert [s["delay_ms"] for s in a] == [s["delay_ms"] for s in b]
    assert max(s["delay_ms"] for s in a) > 30 and all(0 <= s["delay_ms"] <= 60 for s in a)
    # The delay comes on top of the schedule (the deadline is the append's media end): never
    # before it, and typically within 15 ms of it (one send may be tens of ms late on a loaded
    # machine, so the bound is on the median).
    for run in (a, b):
        late = [s["sent_offset_ms"] - s["media_end_ms"] - s["delay_ms"] for s in run]
        assert min(late) >= -1 and statistics.median(late) <= 15, late
    apart = [abs(x["sent_offset_ms"] - y["sent_offset_ms"]) for x, y in zip(a, b, strict=True)]
    assert statistics.median(apart) <= 15, apart


def test_noise_with_the_same_seed_is_the_same_input_unlike_the_original(sweeps: Sweeps) -> None:
    digests = []
    for name in ("noise_a", "noise_b"):
        assert sweeps.done[name].returncode == 0, sweeps.done[name].stderr
        (row,) = sweeps.doc(name)["rows"]
        digests.append(row["sent_sha256"])
        assert row["ok"] and row["speak_decisions"] == 2
    assert digests[0] == digests[1] != sent_sha256(sweeps.original)


def test_a_drop_at_a_media_time_resumes_and_sends_the_same_input(sweeps: Sweeps) -> None:
    assert sweeps.done["drop"].returncode == 0, sweeps.done["drop"].stderr
    (row,) = sweeps.doc("drop")["rows"]
    bundle = Path(row["bundle_dir"])
    timeline = json.loads((bundle / "input_timeline.json").read_text())
    assert [r["outcome"] for r in timeline["reconnects"]] == ["resumed"]
    log = json.loads((bundle / "condition.json").read_text())
    assert log["dropped"]["before_media_end_ms"] == 1600  # the first append ending >= 1500
    assert 1500 <= timeline["reconnects"][0]["started_offset_ms"] < 1800
    assert row["sent_sha256"] == sent_sha256(sweeps.original) and row["speak_decisions"] == 2


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("loudness=1", "--sweep: unknown condition 'loudness' (pause_ms, jitter_ms, drop_at_ms, "
                       "noise_db)"),
        ("pause_ms=0,x", "--sweep: pause_ms: 'x' is not a number"),
        ("drop_at_ms=60000", "--sweep: drop_at_ms: 60000 is after the recording's end"),
    ],
)  # fmt: skip
def test_a_bad_sweep_is_refused_in_one_line_and_nothing_is_sent(
    sweeps: Sweeps, tmp_path: Path, spec: str, message: str
) -> None:
    out = tmp_path / "sweep"
    done = cli("replay", str(sweeps.original), "--url", "ws://127.0.0.1:9", "--sweep", spec,
               "-o", str(out))  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert message in line
    assert not out.exists()
