"""`run_eval` from Python: EvalItems in, an EvalResult (records, summary, DataFrame) out."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from duplex_client.eval import EvalItem, ItemSetError, run_eval_async
from duplex_client.server import ReferenceServer
from duplex_client.server.engine.script import Script
from duplex_client.usage import UsageError
from tests.e2e.eval_support import ANSWER_SCRIPT
from tests.support.media_files import write_audio_file

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.timeout(180)


async def test_items_run_into_records_a_summary_and_a_frame(tmp_path: Path) -> None:
    wav = write_audio_file(tmp_path / "a.wav", 2.0, 16000, 440.0)
    items = [
        EvalItem("one", input_audio=str(wav), extra={"speaker": "x"}, expected="hello"),
        EvalItem("two", input_audio=str(wav), tail_silence_s=1.0),
        EvalItem("bad", error="m.jsonl line 3: input_audio gone.wav: no such file"),
    ]
    script = Script.from_dict(ANSWER_SCRIPT)
    async with ReferenceServer(engine="scripted", script=script) as server:
        result = await run_eval_async(
            items, output_dir=tmp_path / "eval", urls=[server.url], concurrency=2
        )
    assert result.exit_code == 1 and result.error is None and result.unfinished == 0
    assert (result.summary["items"], result.summary["ok"], result.summary["failed"]) == (3, 2, 1)
    assert [r.id for r in result.items] == ["one", "two", "bad"]
    one, two, bad = result.items
    assert one.result["ok"] and one.extra == {"speaker": "x"} and one.expected == "hello"
    assert two.result["counts"]["audio_ms"] == 3000  # the item's own tail silence
    assert bad.result["error"].endswith("no such file") and bad.result["exit_code"] == 2
    frame = result.frame()
    assert list(frame["id"]) == ["one", "two", "bad"]
    assert list(frame["ok"]) == [True, True, False] and frame.loc[0, "speaker"] == "x"
    assert result.summary["failures"][0]["ids"] == ["bad"]


async def test_a_directory_takes_the_audio_files_stream_takes(tmp_path: Path) -> None:
    """`.ogg` and `.m4a` are items, as `stream --input-audio` reads them (issue 32): each is
    decoded (its float samples) and sent whole."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("a.ogg", "b.m4a"):
        write_audio_file(src / name, 0.6, 16000, 440.0)
    script = Script.from_dict(ANSWER_SCRIPT)
    async with ReferenceServer(engine="scripted", script=script) as server:
        result = await run_eval_async(
            src, output_dir=tmp_path / "eval", urls=[server.url], realtime=False
        )
    assert result.exit_code == 0, [r.result.get("error") for r in result.items]
    assert [(r.id, r.result["ok"]) for r in result.items] == [("a.ogg", True), ("b.m4a", True)]
    for item in result.items:
        bundle = tmp_path / "eval" / item.bundle
        timeline = json.loads((bundle / "input_timeline.json").read_text(encoding="utf-8"))
        source = timeline["audio_source"]
        assert source["path"].endswith(item.id) and source["original_format"]["sample_format"] == (
            "float32"
        )
        assert 550 <= source["duration_ms"] <= 700 and timeline["totals"]["audio_ms"] >= 550


async def test_bad_eval_options_raise_before_anything_runs(tmp_path: Path) -> None:
    items = [EvalItem("a", input_audio="x.wav")]
    out = tmp_path / "eval"
    with pytest.raises(UsageError, match=r"concurrency must be an integer in 1\.\.256, got 0"):
        await run_eval_async(items, output_dir=out, concurrency=0)
    with pytest.raises(UsageError, match="chunk_ms must be positive"):
        await run_eval_async(items, output_dir=out, chunk_ms=0)
    with pytest.raises(UsageError, match=r"cpu_budget must be a share of the cores in \(0, 1\]"):
        await run_eval_async(items, output_dir=out, cpu_budget=float("nan"))
    with pytest.raises(UsageError, match="tail_silence is not an option of run_eval"):
        await run_eval_async(items, output_dir=out, tail_silence=1)
    with pytest.raises(ItemSetError, match="duplicate item ids: a"):
        await run_eval_async([*items, *items], output_dir=out)
    # issue 32: what would reach the server wrong, or do nothing, is refused up front
    for kwargs, message in [
        ({"preset": "nemotron", "manual_commit": True}, "manual_commit commits the input"),
        ({"temperature": 1e12}, "temperature must be at most 2"),
        ({"window_knobs": {"context_max_units": 3}}, "context_max_units is a knob of sliding"),
        ({"require_audio": True, "urls": ["ws://127.0.0.1:9"]}, "require_audio configures"),
        ({"stack_frames": 2}, "stack_frames applies to a video item, and there is none"),
        ({"jpeg_quality": 50}, "jpeg_quality applies to the images sent (a video or image item)"),
    ]:
        with pytest.raises(UsageError, match=re.escape(message)):
            await run_eval_async(items, output_dir=out, **kwargs)
    assert not (out / "items").exists()


def test_the_notebook_example_runs(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "notebook_eval.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=150,
    )
    assert done.returncode == 0, done.stderr
    assert "exit code: 0" in done.stdout
    assert (tmp_path / "runs" / "notebook-eval" / "eval" / "summary.md").exists()
