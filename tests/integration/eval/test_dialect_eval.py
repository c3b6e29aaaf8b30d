"""`eval --url A --url B --dialect duplex,openai`: one Full-Duplex-Bench item twice, each copy
on an endpoint of its own wire (reference servers in-process, the same script behind each):
the same turns and latencies within a 20 ms frame, exports of one shape."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from duplex_client.bundle.wavfile import read_wav_pcm16, write_wav
from duplex_client.eval.api import run_eval_async
from duplex_client.server import ReferenceServer, Script
from duplex_client.usage import UsageError

pytestmark = pytest.mark.timeout(120)
FRAME_MS = 20
SCRIPT = {
    "rules": [{"on": "unit", "index": 0, "do": "speak", "audio_ms": 400}],
    "defaults": {"unit": {"do": "listen"}, "commit": {"do": "listen"}},
}


def _tree(root: Path) -> Path:
    for sample in ("1", "2"):  # the same item twice: one for each endpoint
        turn = root / "candor_turn_taking" / sample
        turn.mkdir(parents=True)
        write_wav(turn / "input.wav", np.zeros(24000, dtype=np.int16), 16000)
        (turn / "turn_taking.json").write_text(
            json.dumps([{"text": "[TURN-TAKING]", "timestamp": [0.2, 0.7]}]), encoding="utf-8"
        )
    return root


async def test_one_eval_over_two_wires_gives_the_same_turns_and_export(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "v1_0")
    script = Script.from_dict(SCRIPT)
    async with (
        ReferenceServer(engine="scripted", script=script) as duplex,
        ReferenceServer(engine="scripted", script=script, dialect="openai") as openai,
    ):
        result = await run_eval_async(
            str(tree), output_dir=tmp_path / "eval", urls=[duplex.url, openai.url],
            dialects=["duplex", "openai"], export="fdb", tail_silence_s=0.6,
        )  # fmt: skip
    assert result.exit_code == 0, (result.error, result.rows)
    by_dialect = {}
    for row in result.rows:
        bundle = tmp_path / "eval" / row["bundle"]
        by_dialect[json.loads((bundle / "result.json").read_text())["dialect"]] = row
    a, b = by_dialect["duplex"], by_dialect["openai"]  # one item on each endpoint
    assert a["turns"] == b["turns"] == 1
    assert abs(a["latency_p50_ms"] - b["latency_p50_ms"]) <= FRAME_MS
    outputs = sorted((tmp_path / "eval" / "fdb").rglob("output.wav"))
    assert len(outputs) == 2
    (pcm_a, rate_a), (pcm_b, rate_b) = (read_wav_pcm16(p) for p in outputs)
    assert rate_a == rate_b and abs(len(pcm_a) - len(pcm_b)) <= 2 * rate_a * FRAME_MS // 1000
    tree_files = [sorted(p.name for p in o.parent.iterdir()) for o in outputs]
    assert tree_files[0] == tree_files[1]


async def test_one_dialect_per_url_or_one_for_all(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="2 dialects for 1 url"):
        await run_eval_async(
            str(_tree(tmp_path / "v1_0")), output_dir=tmp_path / "eval",
            urls=["ws://127.0.0.1:9"], dialects=["duplex", "openai"],
        )  # fmt: skip
