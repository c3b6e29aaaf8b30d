"""`eval --url A --url B --dialect duplex,openai`: a comparison, every item on both endpoints
(reference servers in-process, the same script behind each wire): the same turns per item,
latencies that differ by what each wire adds (within a 20 ms frame), exports of one shape per
endpoint, and a resumed comparison that runs only what is missing."""

from __future__ import annotations

import json
import shutil
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
SAMPLES = ("1", "2")


def _tree(root: Path) -> Path:
    for sample in SAMPLES:
        turn = root / "candor_turn_taking" / sample
        turn.mkdir(parents=True)
        write_wav(turn / "input.wav", np.zeros(24000, dtype=np.int16), 16000)
        (turn / "turn_taking.json").write_text(
            json.dumps([{"text": "[TURN-TAKING]", "timestamp": [0.2, 0.7]}]), encoding="utf-8"
        )
    return root


#: The endpoints of the comparison, in order: their folders and the dialect each speaks.
DIALECTS = {"endpoint-0": "duplex", "endpoint-1": "openai", "endpoint-2": "gpt-live"}
FOLDERS = list(DIALECTS)


def _wire_ms(bundle: Path) -> list[tuple[float, float]]:
    """Per turn: from the answer's start on the wire (`decided_ms`) to the listener hearing
    it, and what it heard. What the wire and its mapping add, not the real-time run's
    absolute latency (when the server got to unit 0 varies with the machine's load)."""
    turns = json.loads((bundle / "result.json").read_text())["turns"]
    return [(t["heard_start_ms"] - t["decided_ms"], t["heard_ms"]) for t in turns]


async def test_a_comparison_runs_every_item_on_every_wire_and_resumes(tmp_path: Path) -> None:
    tree, out = _tree(tmp_path / "v1_0"), tmp_path / "eval"
    script = Script.from_dict(SCRIPT)
    async with (
        ReferenceServer(engine="scripted", script=script) as duplex,
        ReferenceServer(engine="scripted", script=script, dialect="openai") as openai,
        ReferenceServer(engine="scripted", script=script, dialect="gpt-live") as live,
    ):
        urls = [duplex.url, openai.url, live.url]
        result = await run_eval_async(
            str(tree), output_dir=out, urls=urls, dialects=list(DIALECTS.values()), export="fdb",
            tail_silence_s=0.6,
        )  # fmt: skip
        assert result.exit_code == 0, (result.error, result.rows)
        assert result.total == 6 and len(result.rows) == 6
        compare = json.loads((out / "compare.json").read_text())
        assert [(e["folder"], e["dialect"], e["items"], e["ok"]) for e in compare["endpoints"]] == [
            (folder, dialect, 2, 2) for folder, dialect in DIALECTS.items()
        ]
        for item in compare["items"]:
            assert [item["endpoints"][f]["turns"] for f in FOLDERS] == [1, 1, 1], item
        for row in result.rows:  # each record says where and in which wire it ran
            folder = row["bundle"].split("/")[0]
            assert row["dialect"] == DIALECTS[folder]
            side = json.loads((out / row["bundle"] / "eval_item.json").read_text())
            assert side["dialect"] == row["dialect"]
        for sample in SAMPLES:
            item = f"items/candor_turn_taking/{sample}"
            [(added_a, heard_a)] = _wire_ms(out / "endpoint-0" / item)
            for folder in FOLDERS[1:]:
                [(added_b, heard_b)] = _wire_ms(out / folder / item)
                assert abs(added_a - added_b) <= FRAME_MS and heard_a == heard_b == 400, folder
        # each endpoint's folder is an eval of its own: its summary, its FDB export
        for folder in FOLDERS:
            rows = [json.loads(line) for line in (out / folder / "summary.jsonl").open()]
            assert sorted(r["bundle"] for r in rows) == [
                f"items/candor_turn_taking/{s}" for s in SAMPLES
            ]
        outputs = {f: sorted((out / f / "fdb").rglob("output.wav")) for f in FOLDERS}
        shapes = {f: [p.relative_to(out / f) for p in o] for f, o in outputs.items()}
        assert len(shapes["endpoint-0"]) == 2 and all(
            s == shapes["endpoint-0"] for s in shapes.values()
        )
        for folder in FOLDERS[1:]:
            for pa, pb in zip(outputs["endpoint-0"], outputs[folder], strict=True):
                (pcm_a, rate_a), (pcm_b, rate_b) = read_wav_pcm16(pa), read_wav_pcm16(pb)
                assert rate_a == rate_b, folder
                assert abs(len(pcm_a) - len(pcm_b)) <= 2 * rate_a * FRAME_MS // 1000, folder

        # an interrupted comparison: one item gone on the openai endpoint only
        gone = out / "endpoint-1" / "items" / "candor_turn_taking" / "2"
        shutil.rmtree(gone)
        kept = (
            (out / "endpoint-0" / "items/candor_turn_taking/2" / "result.json").stat().st_mtime_ns
        )
        again = await run_eval_async(
            str(tree), output_dir=out, urls=urls, dialects=list(DIALECTS.values()),
            tail_silence_s=0.6,
        )  # fmt: skip
    assert again.exit_code == 0, (again.error, again.rows)
    assert (gone / "result.json").exists() and len(again.rows) == 6
    after = (out / "endpoint-0" / "items/candor_turn_taking/2" / "result.json").stat().st_mtime_ns
    assert after == kept  # what was finished was not run again


async def test_one_dialect_per_url_or_one_for_all(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="2 dialects for 1 url"):
        await run_eval_async(
            str(_tree(tmp_path / "v1_0")), output_dir=tmp_path / "eval",
            urls=["ws://127.0.0.1:9"], dialects=["duplex", "openai"],
        )  # fmt: skip
    with pytest.raises(UsageError, match="each_endpoint compares endpoints"):
        await run_eval_async(
            str(_tree(tmp_path / "v1_1")), output_dir=tmp_path / "eval",
            urls=["ws://127.0.0.1:9"], each_endpoint=True,
        )  # fmt: skip


def test_cli_each_endpoint_needs_two_urls(tmp_path: Path) -> None:
    import subprocess

    from tests.e2e.helpers import CLI, ENV

    done = subprocess.run(
        [CLI, "eval", str(_tree(tmp_path / "v1_0")), "--output-dir", str(tmp_path / "eval"),
         "--url", "ws://127.0.0.1:9", "--each-endpoint"],
        capture_output=True, text=True, env=ENV, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        "error: --each-endpoint compares endpoints: give two or more urls, got 1"
    ]
    assert not (tmp_path / "eval").exists()
