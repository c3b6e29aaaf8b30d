"""The Omni-DuplexEval export: one timed-sentence response file per case, as its scorers read.

Per case `{root}/{split}/{id}.json`: a list of `{sentence, start, end}` (seconds on the media
clock), the response format OpenBMB/Omni-DuplexEval's batch scripts read (README "Model
Response Format", default path `{response_root}/{split}/{id}.json`) and vLLM-Omni 0.30.0's
`generate_sample` writes; beside it `{id}.meta.json` with the fields `generate_sample`
writes (`id`, `split`, `clock`, `pace`, `mix`, `fps`, `unit_ms`, `model`, `response_done`,
`drain_timeout`, `close_timeout`, `ref_audio_sha256`). At the root, `batch_summary.json` and
`eval_manifest.jsonl` (ours: vLLM-Omni writes neither for this benchmark) and
`duplex_metrics.json` (vLLM-Omni's name and keys). docs/eval.md ("Omni-DuplexEval").
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from duplex_client.analysis.pooling import number
from duplex_client.bundle.layout import BundleLayout
from duplex_client.bundle.writer import write_json_atomic
from duplex_client.eval.heard import heard_responses
from duplex_client.eval.item import EvalItem
from duplex_client.eval.omni_duplexeval.sentences import response_marks, timed_sentences
from duplex_client.files import write_text_atomic

__all__ = ["BATCH_FILES", "CaseExport", "export_case", "ref_audio_sha256", "write_batch"]

BATCH_FILES: Final = ("batch_summary.json", "eval_manifest.jsonl", "duplex_metrics.json")
#: vLLM-Omni's only mix: the question audio as the soundtrack.
_MIX: Final = "question"


@dataclass(frozen=True, slots=True)
class CaseExport:
    """One exported case: its response file (None: none written), meta and a note."""

    response: Path | None
    meta: dict[str, Any]
    row: dict[str, Any]
    note: str | None = None


def _unit_ms(bundle_dir: Path) -> int | None:
    try:
        session = json.loads(BundleLayout(bundle_dir).session.read_text(encoding="utf-8"))
        period = session["capabilities"]["chunk_period_ms"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return period if isinstance(period, int) else None


def _response_done(bundle_dir: Path) -> bool:
    """Whether any `response.done` arrived (vLLM-Omni waits for one after its commit)."""
    events = BundleLayout(bundle_dir).events
    if not events.is_file():
        return False
    with events.open(encoding="utf-8") as fh:
        return any('"response.done"' in line for line in fh)


def ref_audio_sha256(path: str | None) -> str | None:
    """The reference voice's sha256 (its bytes are never written anywhere)."""
    if not path:
        return None
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def export_case(
    item: EvalItem,
    result: Mapping[str, Any],
    timing_valid: bool | None,
    bundle_dir: Path,
    root: Path,
    settings: Mapping[str, Any],
) -> CaseExport:
    """Write `{root}/{split}/{id}.json` and its `.meta.json` from one item's bundle.

    `settings`: `model`, `fps`, `ref_audio_sha256` of the eval. `clock` is `media` only for a
    real-time run that is timing-valid; otherwise `invalid`, which the scorer refuses
    without `--allow-invalid-clock`. A failed item gets no response file (an earlier one
    is deleted) and a note.
    """
    split = str(item.extra.get("omni_duplexeval_split"))
    case = str(item.extra.get("omni_duplexeval_id"))
    response = root / split / f"{case}.json"
    meta_path = root / split / f"{case}.meta.json"
    realtime = result.get("timing", "realtime") == "realtime"
    meta = {
        "id": case,
        "split": split,
        "clock": "media" if realtime and timing_valid is True else "invalid",
        "pace": "realtime" if realtime else "as-fast-as-possible",
        "mix": _MIX,
        "fps": settings.get("fps"),
        "unit_ms": _unit_ms(bundle_dir),
        "model": result.get("model") or settings.get("model"),
        "response_done": _response_done(bundle_dir),
        "drain_timeout": None,
        "close_timeout": None,
        "ref_audio_sha256": settings.get("ref_audio_sha256"),
    }
    row = {"split": split, "id": case, "family": item.extra.get("omni_duplexeval_family"),
           "task_type": item.extra.get("omni_duplexeval_task_type"),
           "status": "ok" if result.get("ok") is True else "failed",
           "error": result.get("error") or item.error}  # fmt: skip
    if item.error is not None or result.get("ok") is not True:
        for stale in (response, meta_path):
            stale.unlink(missing_ok=True)
        why = item.error or result.get("error") or f"status {result.get('status')}"
        return CaseExport(None, meta, row, f"no response file: {why}")
    marks = response_marks(BundleLayout(bundle_dir).events)
    sentences = [s.to_dict() for s in timed_sentences(heard_responses(result), marks)]
    response.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(response, json.dumps(sentences, ensure_ascii=False, indent=2) + "\n")
    write_json_atomic(meta_path, meta)
    row.update(response=str(response), meta=str(meta_path), sentences=len(sentences),
               clock=meta["clock"], video=item.extra.get("omni_duplexeval_video"))  # fmt: skip
    note = None if meta["clock"] == "media" else "clock invalid (not real time, or timing-invalid)"
    return CaseExport(response, meta, row, note)


def _session_metrics(result: Mapping[str, Any], split: str, case: str) -> dict[str, Any]:
    turns = [t for t in result.get("turns") or [] if isinstance(t, dict)]
    first = [v for t in turns if (v := number(t.get("first_audio_ms"))) is not None]
    counts: Mapping[str, Any] = result.get("counts") or {}
    return {
        "sample_id": case,
        "split": split,
        "session_id": result.get("session_id"),
        "stream_ttfp_ms": min(first, default=None),
        "stream_ttft_ms": None,
        "stream_audio_duration_ms": counts.get("output_audio_ms"),
        "stream_measurement_origin": {"ttfp": "media time 0 to the first answer audio received"},
    }


def write_batch(
    root: Path, cases: Sequence[CaseExport], results: Sequence[Mapping[str, Any]]
) -> None:
    """The root's batch files, rewritten whole from every case (a resume duplicates nothing)."""
    rows = [c.row for c in cases]
    ok = [r for r in rows if r["status"] == "ok"]
    summary = {
        "total": len(rows),
        "success": len(ok),
        "failed": len(rows) - len(ok),
        "clock_invalid": sum(1 for c in cases if c.response and c.meta["clock"] != "media"),
        "response_done": sum(1 for c in cases if c.response and c.meta["response_done"]),
        "results": rows,
    }
    metrics = {
        "duplex_request_metrics": [],
        "duplex_session_metrics": [
            _session_metrics(res, str(c.row["split"]), str(c.row["id"]))
            for c, res in zip(cases, results, strict=True)
            if c.response is not None
        ],
    }
    root.mkdir(parents=True, exist_ok=True)
    write_json_atomic(root / BATCH_FILES[0], summary)
    write_text_atomic(
        root / BATCH_FILES[1], "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in ok)
    )
    write_json_atomic(root / BATCH_FILES[2], metrics)
