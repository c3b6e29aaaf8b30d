"""An OmniInteract tree through `run_eval` and `export="omniinteract"`: the runner's contract.

One module-scoped eval of a two-video tree (a 1q1a case and a 1qna case, tiny generated
clips) against the scripted reference server, then checks of the export against
docs/eval.md ("OmniInteract"): names, JSON shapes, 24 kHz mono, length, the scripted answer
at the right sample and second, and a resume that duplicates nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from duplex_client.bundle.wavfile import read_wav_pcm16
from duplex_client.eval import run_eval
from duplex_client.eval.api import EvalResult
from duplex_client.eval.heard import media_duration_ms
from duplex_client.eval.omniinteract import BATCH_FILES, CASE_FILES
from duplex_client.server import ReferenceServer
from duplex_client.server.engine.script import Script
from tests.support.benchmark_trees import VIDEO_S, omniinteract_tree
from tests.support.eval_output import LENIENT_LATENESS_MS

pytestmark = pytest.mark.timeout(180)

#: Unit 1 (media 1000-2000 ms) gets a 500 ms answer, 300 ms of model time after it closes.
SCRIPT = {
    "rules": [
        {"on": "unit", "index": 1, "do": "speak", "audio_ms": 500, "delay_ms": 300,
         "text": "red"},
        {"on": "commit", "do": "listen"},
    ],
    "defaults": {"unit": {"do": "listen"}},
}  # fmt: skip
IDS = ("1q1a/videos__0001", "1qna/ego__0002")


def _video(base: Path, item_id: str) -> Path:
    data = (base / "OmniInteract" / "data").resolve()
    if item_id.startswith("1qna/"):
        return data / "1qna" / "videos_bench" / "ego" / "0002.mp4"
    return data / "1q1a" / "videos" / "0001.mp4"


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, EvalResult]:
    base = tmp_path_factory.mktemp("omniinteract")
    tree = omniinteract_tree(base / "OmniInteract")
    out = base / "eval"

    # the exports are tested here, not the pacing: a loaded machine may send a run late enough
    # to be judged timing-invalid (it was, once, on a loaded CI), so the bound is one any run meets
    async def go() -> EvalResult:
        from duplex_client.eval import run_eval_async

        async with ReferenceServer(engine="scripted", script=Script.from_dict(SCRIPT)) as server:
            first = await run_eval_async(
                str(tree), output_dir=out, urls=[server.url], concurrency=2,
                export="omniinteract", export_dir=base / "outputs" / "minicpmo",
                max_lateness_ms=LENIENT_LATENESS_MS,
            )  # fmt: skip
            assert first.exit_code == 0, (first.error, first.rows)
            return first

    from duplex_client.client.sync import run_blocking

    return base, run_blocking(go())


def test_items_are_the_videos_named_as_the_official_runner_names_them(
    exported: tuple[Path, EvalResult],
) -> None:
    _, result = exported
    assert [r["id"] for r in result.rows] == list(IDS)
    row = result.rows[1]
    assert row["omniinteract_subset"] == "1qna" and row["omniinteract_scene_type"] == "1qna"
    assert row["omniinteract_video"] == "videos_bench/ego/0002.mp4"


def test_each_case_folder_has_the_contract_and_a_24k_track_as_long_as_the_video(
    exported: tuple[Path, EvalResult],
) -> None:
    base, result = exported
    root = base / "outputs" / "minicpmo"
    assert sorted(p.name for p in root.iterdir()) == sorted([*BATCH_FILES, "1q1a", "1qna"])
    for item_id, record in zip(IDS, result.items, strict=True):
        case = root / item_id
        assert {p.name for p in case.iterdir()} == set(CASE_FILES)
        pcm, rate = read_wav_pcm16(case / "output.wav")
        # the video's duration as ffprobe's format=duration gives it (AAC priming: 3.008 s)
        duration_ms = media_duration_ms(_video(base, item_id))
        assert duration_ms is not None and abs(duration_ms - VIDEO_S * 1000) <= 20
        assert rate == 24000 and len(pcm) // 2 == round(duration_ms * 24)
        transcript = json.loads((case / "wav_transcript.json").read_text(encoding="utf-8"))
        assert set(transcript) == {"text", "chunks", "timestamp_semantics"}
        (chunk,) = transcript["chunks"]
        assert chunk["text"] == "red" == transcript["text"]
        # alignment: the scripted answer where the listener heard it, in both files
        (turn,) = [t for t in record.result["turns"] if t["heard_start_ms"] is not None]
        assert 2300 <= turn["heard_start_ms"] <= 2500, turn
        assert abs(chunk["timestamp"][0] * 1000 - turn["heard_start_ms"]) <= 20
        assert abs(chunk["timestamp"][1] * 1000 - turn["heard_end_ms"]) <= 20
        loud = np.flatnonzero(np.abs(np.frombuffer(pcm, dtype="<i2").astype(np.int32)) > 300)
        assert abs(loud[0] / 24 - turn["heard_start_ms"]) <= 20
        (response,) = [json.loads(line) for line in (case / "responses.jsonl").open()]
        assert response["triggered_at_second"] == 2 and response["text"] == "red"
        assert response["chunks"] == [{"text": "red", "timestamp": chunk["timestamp"]}]
        units = [json.loads(line) for line in (case / "model_output.jsonl").open()]
        assert any(not u["is_listen"] and u["second"] == 1.0 for u in units)
        done = json.loads((case / ".done").read_text(encoding="utf-8"))
        assert done["duration_sec"] == round(duration_ms / 1000, 2)
        assert done["video"] == str(_video(base, item_id))
        events = (case / "events.jsonl").read_text(encoding="utf-8").splitlines()
        assert json.loads(events[0])["event"]["type"] == "session.created"


def test_batch_files_and_a_resume_without_duplicates(exported: tuple[Path, EvalResult]) -> None:
    base, _ = exported
    root = base / "outputs" / "minicpmo"
    summary = json.loads((root / "batch_summary.json").read_text(encoding="utf-8"))
    assert (summary["total"], summary["success"], summary["eligible_for_official_eval"]) == (
        2,
        2,
        2,
    )
    manifest = [json.loads(line) for line in (root / "official_eval_manifest.jsonl").open()]
    assert [m["sample_id"] for m in manifest] == ["1q1a__videos__0001", "1qna__ego__0002"]
    assert [m["scene_type"] for m in manifest] == ["multi_turn", "1QnA"]
    assert all(Path(m["model_json"]).is_file() and Path(m["gt_json"]).is_file() for m in manifest)
    sampled = [json.loads(line) for line in (root / "sampled_cases.jsonl").open()]
    assert [s["output_name"] for s in sampled] == list(IDS)
    wav = root / IDS[0] / "output.wav"
    before = wav.stat().st_mtime_ns
    again = run_eval(str(base / "OmniInteract"), output_dir=base / "eval", urls=["http://127.0.0.1:9"],
                     export="omniinteract", export_dir=root,
                     max_lateness_ms=LENIENT_LATENESS_MS)  # fmt: skip
    assert again.exit_code == 0 and again.total == 2  # nothing ran: every item was finished
    assert wav.stat().st_mtime_ns == before  # .done: the case is kept as it is
    assert len((root / "official_eval_manifest.jsonl").read_text().splitlines()) == 2
    assert json.loads((root / "batch_summary.json").read_text())["total"] == 2
