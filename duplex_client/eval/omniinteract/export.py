"""The OmniInteract export: each case's folder in the official runner's output contract.

Per case, `<root>/<subset>/<stem>/` (the official `output_name`), as Lucky-Lance/OmniInteract
`batch_inference_minicpmo.py` `run_single_video` writes it: `output.wav` (24 kHz mono PCM16),
`wav_transcript.json` (`{text, chunks: [{text, timestamp: [start, end]}]}`, seconds on the
media clock: the file its scorer reads), `responses.jsonl`, `model_output.jsonl` and `.done`;
plus `events.jsonl` (the server events as received) and vLLM-Omni 0.30.0's per-case
`result.json` (`benchmarks/omniinteract.py` `OmniInteractCaseResult`). At the root,
`batch_summary.json`, `official_eval_manifest.jsonl` and `sampled_cases.jsonl` as vLLM-Omni's
`write_batch_artifacts` writes them. docs/eval.md ("OmniInteract") maps every field.
"""

from __future__ import annotations

import json
import math
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from duplex_client.analysis.pooling import number
from duplex_client.bundle.layout import BundleLayout
from duplex_client.bundle.writer import write_json_atomic
from duplex_client.eval.heard import HeardResponse, heard_responses, heard_track, media_duration_ms
from duplex_client.eval.item import EvalItem
from duplex_client.files import write_text_atomic

__all__ = [
    "BATCH_FILES",
    "CASE_FILES",
    "FAILED_FILE",
    "OUTPUT_RATE_HZ",
    "CaseExport",
    "export_case",
    "write_batch",
]

#: The official runner's and vLLM-Omni's output rate (`OUTPUT_SAMPLE_RATE`).
OUTPUT_RATE_HZ: Final = 24000
DONE_FILE: Final = ".done"
#: vLLM-Omni's marker of a case that failed (`write_failure_artifacts`).
FAILED_FILE: Final = ".failed.json"
#: A finished case's files; `.done` is written last, so its presence means the rest is whole.
CASE_FILES: Final = (
    "output.wav", "wav_transcript.json", "responses.jsonl", "model_output.jsonl",
    "events.jsonl", "result.json", DONE_FILE,
)  # fmt: skip
BATCH_FILES: Final = ("batch_summary.json", "official_eval_manifest.jsonl", "sampled_cases.jsonl")
_SEMANTICS: Final = "heard playback on the media clock: seconds from the video's first sample"


@dataclass(frozen=True, slots=True)
class CaseExport:
    """One exported case: its folder, vLLM-Omni's result row, and a note worth a line."""

    folder: Path
    row: dict[str, Any]
    note: str | None = None
    #: Left as it was: an earlier export finished it (`.done`).
    kept: bool = False


def _jsonl(rows: Sequence[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def _chunks(heard: Sequence[HeardResponse], horizon_s: float) -> list[dict[str, Any]]:
    """Transcript chunks heard before the end of the video, clipped to it (seconds)."""
    out = []
    for r in heard:
        start = r.start_ms / 1000.0
        if not r.text or start >= horizon_s:
            continue
        end = min(r.end_ms / 1000.0, horizon_s)
        out.append({"response_id": r.response_id, "text": r.text,
                    "timestamp": [round(start, 6), round(end, 6)]})  # fmt: skip
    return out


def _responses(chunks: Sequence[Mapping[str, Any]], heard: Sequence[HeardResponse]) -> str:
    """`responses.jsonl`: the official runner's response rows, one per heard answer."""
    by_id = {r.response_id: r for r in heard}
    rows = []
    for c in chunks:
        start, end = c["timestamp"]
        r = by_id[c["response_id"]]
        rows.append(
            {
                "response_id": c["response_id"],
                "triggered_at_second": math.floor(start),
                "done_at_second": max(math.floor(start), math.ceil(end) - 1),
                "text": c["text"],
                "chunks": [{"text": c["text"], "timestamp": [start, end]}],
                "audio_duration_sec": round((r.end_ms - r.start_ms) / 1000.0, 3),
            }
        )
    return _jsonl(rows)


def _model_output(result: Mapping[str, Any], unit_s: float) -> str:
    """`model_output.jsonl`: one row per model decision, by unit (1 s units: `second`)."""
    rows = []
    for d in result.get("decisions") or []:
        if not isinstance(d, dict) or not isinstance(d.get("unit_index"), int):
            continue
        audio_ms = number(d.get("audio_ms")) or 0.0
        rows.append(
            {
                "second": round(d["unit_index"] * unit_s, 3),
                "text": str(d.get("transcript") or d.get("text") or ""),
                "is_listen": d.get("decision") == "listen",
                "end_of_turn": None,
                "audio_pcm_path": None,
                "audio_sample_rate": OUTPUT_RATE_HZ,
                "audio_channels": 1,
                "audio_sample_width": 2,
                "audio_bytes": round(audio_ms * OUTPUT_RATE_HZ / 1000) * 2,
                "kv_cache_length": None,
                "cost_llm_ms": None,
                "cost_tts_ms": None,
                "cost_token2wav_ms": None,
                "cost_all_ms": None,
                "wall_clock_ms": None,
            }
        )
    return _jsonl(rows)


def _unit_s(bundle_dir: Path) -> float:
    """The session's unit length in seconds (`chunk_period_ms`; 1 s when not said)."""
    try:
        session = json.loads(BundleLayout(bundle_dir).session.read_text(encoding="utf-8"))
        period = session["capabilities"]["chunk_period_ms"]
    except (OSError, ValueError, KeyError, TypeError):
        return 1.0
    return float(period) / 1000.0 if isinstance(period, int | float) and period > 0 else 1.0


def _row(item: EvalItem, result: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """vLLM-Omni's `OmniInteractCaseResult` fields, filled from the run (None: not measured)."""
    counts = _object(result.get("counts"))
    frames = _object(counts.get("frames"))
    late_max = number(_object(result.get("lateness_ms")).get("max"))
    return {
        "subset": item.extra.get("omniinteract_subset"),
        "video": item.input_video,
        "output_dir": str(folder.resolve()),
        "status": "ok" if result.get("ok") is True else "error",
        "success": result.get("ok") is True,
        "error": str(result.get("error") or ""),
        "session_id": str(result.get("session_id") or ""),
        "latency_s": result.get("duration_s"),
        "input_audio_chunks": counts.get("appends"),
        "input_video_frames": sum(int(number(v) or 0) for v in frames.values()),
        "pacing_mean_lag_s": None,
        "pacing_max_lag_s": None if late_max is None else round(late_max / 1000.0, 6),
        "responses": counts.get("responses"),
        "audio_bytes": round((number(counts.get("output_audio_ms")) or 0) * OUTPUT_RATE_HZ / 1000)
        * 2,
        "audio_clipped_bytes": 0,
        "transcript": "",
        "eligible_for_official_eval": False,
        "official_eval_ineligible_reasons": [],
        "artifact_warnings": [],
        "output_tokens": None,
        "duplex_request_metrics": [],
        "duplex_session_metrics": {},
        "annotation": item.extra.get("omniinteract_annotation"),
        "scene_type": _scene(item),
    }


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _scene(item: EvalItem) -> str | None:
    scene = item.extra.get("omniinteract_scene_type")
    return "1QnA" if scene == "1qna" else scene


def _clear(folder: Path, names: Sequence[str]) -> None:
    for name in names:
        (folder / name).unlink(missing_ok=True)


def export_case(
    item: EvalItem, result: Mapping[str, Any], bundle_dir: Path, root: Path
) -> CaseExport:
    """Write one case's folder under `root` (its `.done` last); a finished one is kept."""
    folder = root / item.id
    row = _row(item, result, folder)
    if (folder / DONE_FILE).is_file():
        try:
            kept = json.loads((folder / "result.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            kept = None
        if isinstance(kept, dict):
            return CaseExport(folder, kept, kept=True)
    folder.mkdir(parents=True, exist_ok=True)
    _clear(folder, (DONE_FILE, FAILED_FILE))

    def failed(why: str) -> CaseExport:
        _clear(folder, CASE_FILES)
        row.update(success=False, status="error", error=row["error"] or why)
        write_json_atomic(folder / FAILED_FILE, row)
        return CaseExport(folder, row, f"no output: {why}")

    if item.error is not None or item.input_video is None:
        return failed(item.error or "no input video")
    if result.get("ok") is not True:
        return failed(str(result.get("error") or f"status {result.get('status')}"))
    duration_ms = media_duration_ms(item.input_video)
    if duration_ms is None:
        return failed(f"cannot read the duration of {item.input_video}")
    horizon_s = duration_ms / 1000.0
    samples, note = heard_track(bundle_dir, OUTPUT_RATE_HZ, round(horizon_s * OUTPUT_RATE_HZ))
    if samples is None:
        return failed(note or "no heard.wav")
    heard = heard_responses(result)
    chunks = _chunks(heard, horizon_s)
    clipped_ms = sum(max(0.0, r.end_ms - max(r.start_ms, duration_ms)) for r in heard)
    reasons = (["audio_clipped"] if clipped_ms > 0 else []) + (
        ["cancelled_response"] if any(r.cut for r in heard) else []
    )
    text = " ".join(c["text"] for c in chunks).strip()
    first_audio = [
        t.get("first_audio_ms") for t in result.get("turns") or [] if isinstance(t, dict)
    ]
    ttfp = min((v for v in first_audio if isinstance(v, int | float)), default=None)
    row.update(
        transcript=text,
        audio_clipped_bytes=round(clipped_ms * OUTPUT_RATE_HZ / 1000) * 2,
        official_eval_ineligible_reasons=reasons,
        eligible_for_official_eval=not reasons,
        duplex_session_metrics={
            "session_id": row["session_id"],
            "stream_ttfp_ms": ttfp,
            "stream_ttft_ms": None,
            "stream_audio_duration_ms": _object(result.get("counts")).get("output_audio_ms"),
            "stream_measurement_origin": {
                "ttfp": "media time 0 to the first answer audio received"
            },
        },
    )
    from duplex_client.bundle.wavfile import write_wav

    write_wav(folder / "output.wav", samples, OUTPUT_RATE_HZ)
    write_json_atomic(
        folder / "wav_transcript.json",
        {"text": text, "chunks": chunks, "timestamp_semantics": _SEMANTICS},
    )
    write_text_atomic(folder / "responses.jsonl", _responses(chunks, heard))
    write_text_atomic(folder / "model_output.jsonl", _model_output(result, _unit_s(bundle_dir)))
    events = BundleLayout(bundle_dir).events
    if events.is_file():
        shutil.copyfile(events, folder / "events.jsonl")
    write_json_atomic(folder / "result.json", row)
    done = {"video": item.input_video, "duration_sec": round(horizon_s, 2),
            "inference_sec": result.get("duration_s"), "annotation": row["annotation"],
            "scene_type": row["scene_type"]}  # fmt: skip
    write_json_atomic(folder / DONE_FILE, done)
    return CaseExport(folder, row, note)


def write_batch(root: Path, items: Sequence[EvalItem], cases: Sequence[CaseExport]) -> None:
    """The root's batch files, rewritten whole from every case (never appended)."""
    rows = [c.row for c in cases]
    ok = [r for r in rows if r.get("success") is True]
    eligible = [r for r in ok if r.get("eligible_for_official_eval") is True]
    summary = {
        "total": len(rows),
        "success": len(ok),
        "failed": len(rows) - len(ok),
        "eligible_for_official_eval": len(eligible),
        "successful_but_ineligible": len(ok) - len(eligible),
        "audio_clipped_bytes": sum(int(r.get("audio_clipped_bytes") or 0) for r in rows),
        "results": rows,
    }
    manifest = [
        {
            "sample_id": f"{r['subset']}__{Path(r['output_dir']).name}",
            "video": r["video"],
            "gt_json": r["annotation"],
            "model_json": str(Path(r["output_dir"]) / "wav_transcript.json"),
            "scene_type": r["scene_type"],
        }
        for r in eligible
    ]
    sampled = [
        {"video_path": i.input_video, "output_name": i.id,
         "subset": i.extra.get("omniinteract_subset")}
        for i in items
    ]  # fmt: skip
    root.mkdir(parents=True, exist_ok=True)
    write_json_atomic(root / BATCH_FILES[0], summary)
    write_text_atomic(root / BATCH_FILES[1], _jsonl(manifest))
    write_text_atomic(root / BATCH_FILES[2], _jsonl(sampled))
