"""An Omni-DuplexEval dataset (parquet splits) through `run_eval` and its timed-sentence export.

One module-scoped eval of two cases (an RTD case with inline media, a PR case naming its
files) against the scripted reference server, then checks of the export against
docs/eval.md ("Omni-DuplexEval"): names, JSON shapes, the meta fields, sentences placed by
`audio_text_marks` on the media clock (within one 20 ms frame), a resume without duplicates.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from duplex_client.eval import run_eval
from duplex_client.eval.api import EvalResult
from duplex_client.eval.omni_duplexeval import BATCH_FILES, read_omni_duplexeval_items
from duplex_client.server import ReferenceServer
from duplex_client.server.engine.script import Script
from tests.support.benchmark_trees import VIDEO_S, omni_duplexeval_dataset
from tests.support.eval_output import LENIENT_LATENESS_MS

pytest.importorskip("pyarrow")
pytestmark = pytest.mark.timeout(180)

#: Unit 1 answers "Red. Blue.": two 300 ms word tones, one 300 ms delta (and mark) per word.
SCRIPT = {
    "chunk_ms": 300,
    "rules": [
        {"on": "unit", "index": 1, "do": "speak", "audio_ms": 600, "delay_ms": 200,
         "text": "Red. Blue."},
        {"on": "commit", "do": "listen"},
    ],
    "defaults": {"unit": {"do": "listen"}},
}  # fmt: skip
IDS = ["PR_event_reminder/pr_1", "RTD_OCR/ocr_1"]
META_KEYS = {
    "id", "split", "clock", "pace", "mix", "fps", "unit_ms", "model", "response_done",
    "drain_timeout", "close_timeout", "ref_audio_sha256",
}  # fmt: skip


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, EvalResult]:
    base = tmp_path_factory.mktemp("odeval")
    dataset = omni_duplexeval_dataset(base / "Omni-DuplexEval")
    items = read_omni_duplexeval_items(dataset, cache=base / "cache")

    # the exports are tested here, not the pacing: a loaded machine may send a run late enough
    # to be judged timing-invalid (it was, once, on a loaded CI), so the bound is one any run meets
    async def go() -> EvalResult:
        from duplex_client.eval import run_eval_async

        async with ReferenceServer(engine="scripted", script=Script.from_dict(SCRIPT)) as server:
            return await run_eval_async(
                items, output_dir=base / "eval", urls=[server.url], export="omni-duplexeval",
                ref_audio=str(dataset / "media" / "q.wav"), max_lateness_ms=LENIENT_LATENESS_MS,
            )  # fmt: skip

    from duplex_client.client.sync import run_blocking

    result = run_blocking(go())
    assert result.exit_code == 0, (result.error, result.rows)
    return base, result


def test_cases_are_the_split_rows_streamed_for_the_whole_video(
    exported: tuple[Path, EvalResult],
) -> None:
    base, result = exported
    assert [r["id"] for r in result.rows] == IDS
    assert [r["omni_duplexeval_family"] for r in result.rows] == ["pr", "rtd"]
    assert result.rows[0]["omni_duplexeval_task_type"] == "proactive_reminder"
    for record in result.items:
        # the 0.8 s question padded to the 3 s video: every unit of the video is sent
        assert record.result["counts"]["audio_ms"] == VIDEO_S * 1000
    assert (base / "cache" / "RTD_OCR" / "ocr_1.mp4").is_file()  # inline media, written once


def test_responses_are_timed_sentences_placed_by_the_marks(
    exported: tuple[Path, EvalResult],
) -> None:
    base, result = exported
    root = base / "eval" / "omni-duplexeval"
    assert sorted(p.name for p in root.iterdir()) == sorted(
        [*BATCH_FILES, "PR_event_reminder", "RTD_OCR"]
    )
    voice = hashlib.sha256((base / "Omni-DuplexEval" / "media" / "q.wav").read_bytes())
    for item_id, record in zip(IDS, result.items, strict=True):
        split, case = item_id.split("/")
        assert sorted(p.name for p in (root / split).iterdir()) == [
            f"{case}.json",
            f"{case}.meta.json",
        ]
        sentences = json.loads((root / split / f"{case}.json").read_text(encoding="utf-8"))
        assert [set(s) for s in sentences] == [{"sentence", "start", "end"}] * 2
        (turn,) = [t for t in record.result["turns"] if t["heard_start_ms"] is not None]
        heard = turn["heard_start_ms"]
        assert 2200 <= heard <= 2400, turn
        red, blue = sentences
        assert red["sentence"] == "Red." and blue["sentence"] == "Blue."
        assert abs(red["start"] * 1000 - heard) <= 20
        assert abs(blue["start"] * 1000 - (heard + 300)) <= 20  # the second word's mark
        assert abs(blue["end"] * 1000 - turn["heard_end_ms"]) <= 20
        meta = json.loads((root / split / f"{case}.meta.json").read_text(encoding="utf-8"))
        assert set(meta) == META_KEYS
        assert (meta["id"], meta["split"], meta["clock"], meta["pace"], meta["mix"]) == (
            case, split, "media", "realtime", "question",
        )  # fmt: skip
        assert meta["unit_ms"] == 1000 and meta["fps"] == 1.0 and meta["response_done"] is True
        assert meta["ref_audio_sha256"] == voice.hexdigest()
        assert meta["model"] == record.result["model"]


def test_batch_files_and_a_resume_without_duplicates(exported: tuple[Path, EvalResult]) -> None:
    base, _ = exported
    root = base / "eval" / "omni-duplexeval"
    summary = json.loads((root / "batch_summary.json").read_text(encoding="utf-8"))
    assert (summary["total"], summary["success"], summary["clock_invalid"]) == (2, 2, 0)
    rows = [json.loads(line) for line in (root / "eval_manifest.jsonl").open()]
    assert [(r["split"], r["id"]) for r in rows] == [
        ("PR_event_reminder", "pr_1"),
        ("RTD_OCR", "ocr_1"),
    ]
    assert all(Path(r["response"]).is_file() and Path(r["meta"]).is_file() for r in rows)
    metrics = json.loads((root / "duplex_metrics.json").read_text(encoding="utf-8"))
    assert [m["sample_id"] for m in metrics["duplex_session_metrics"]] == ["pr_1", "ocr_1"]
    files = sorted((root / "RTD_OCR").iterdir())
    before = [p.read_bytes() for p in files]
    items = read_omni_duplexeval_items(base / "Omni-DuplexEval", cache=base / "cache")
    again = run_eval(
        items, output_dir=base / "eval", urls=["http://127.0.0.1:9"], export="omni-duplexeval",
        ref_audio=str(base / "Omni-DuplexEval" / "media" / "q.wav"),
        max_lateness_ms=LENIENT_LATENESS_MS,
    )  # fmt: skip
    assert again.exit_code == 0 and again.total == 2
    assert [p.read_bytes() for p in files] == before
    assert len((root / "eval_manifest.jsonl").read_text().splitlines()) == 2
