"""One Full-Duplex-Bench item evaluated over the duplex and OpenAI wires (the embedded server
speaking each): the same turns and latencies within a 20 ms frame, and exports of one shape.
GPT-Live's stream runs are compared in tests/integration/test_dialects.py."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from duplex_client.bundle.wavfile import read_wav_pcm16, write_wav
from duplex_client.eval import run_eval

pytestmark = pytest.mark.timeout(120)
FRAME_MS = 20
SCRIPT = {
    "rules": [{"on": "unit", "index": 0, "do": "speak", "audio_ms": 400}],
    "defaults": {"unit": {"do": "listen"}, "commit": {"do": "listen"}},
}


def _tree(root: Path) -> Path:
    turn = root / "candor_turn_taking" / "1"
    turn.mkdir(parents=True)
    write_wav(turn / "input.wav", np.zeros(24000, dtype=np.int16), 16000)
    (turn / "turn_taking.json").write_text(
        json.dumps([{"text": "[TURN-TAKING]", "timestamp": [0.2, 0.7]}]), encoding="utf-8"
    )
    return root


def test_both_wires_give_the_same_turns_and_export(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    tree = _tree(tmp_path / "v1_0")
    rows, exports = {}, {}
    for dialect in ("duplex", "openai"):
        out = tmp_path / dialect
        result = run_eval(
            str(tree), output_dir=out, export="fdb", server_engine="scripted",
            server_script=str(script), tail_silence_s=0.6, dialect=dialect,
        )  # fmt: skip
        assert result.exit_code == 0, (dialect, result.error, result.rows)
        (rows[dialect],) = result.rows
        exports[dialect] = out / "fdb"
    files = {
        d: sorted(p.relative_to(e).as_posix() for p in e.rglob("*")) for d, e in exports.items()
    }
    assert files["openai"] == files["duplex"], files
    for dialect in ("openai",):
        a, b = rows["duplex"], rows[dialect]
        assert a["latency_p50_ms"] is not None and b["latency_p50_ms"] is not None
        assert abs(a["latency_p50_ms"] - b["latency_p50_ms"]) <= FRAME_MS, dialect
        wav_a = read_wav_pcm16(next(exports["duplex"].rglob("output.wav")))
        wav_b = read_wav_pcm16(next(exports[dialect].rglob("output.wav")))
        frame_bytes = 2 * wav_a[1] * FRAME_MS // 1000
        assert wav_a[1] == wav_b[1] and abs(len(wav_a[0]) - len(wav_b[0])) <= frame_bytes
        assert a["turns"] == b["turns"] == 1, dialect
