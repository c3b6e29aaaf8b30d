"""The eval summary: one flat row per item run, the aggregate, and `summary.{jsonl,csv,md}`.

A row comes from an item's run bundle (`result.json`, `input_timeline.json`) plus what the
runner knows (endpoint, attempts, manifest columns). The aggregate pools the turns of every
ok, timing-valid item; a timing-invalid run is counted apart, as its latencies measure the
client's sending, not the model. Pure apart from `ItemRecord.from_bundle` and `EvalSummary.write`.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplex_client.analysis.pooling import (
    HEARD_ONLY,
    POOLED,
    TIMING_LATENESS_MS,
    number,
    percentiles,
    turn_values,
)
from duplex_client.analysis.timing import TimingVerdict, timing_verdict
from duplex_client.bundle.eval_layout import SUMMARY_COLUMNS, SUMMARY_FILES
from duplex_client.bundle.layout import BundleLayout
from duplex_client.bundle.reader import read_json
from duplex_client.eval.fdb.figures import fdb_export_figures
from duplex_client.eval.markdown import summary_markdown

__all__ = [
    "HEARD_ONLY",
    "POOLED",
    "SUMMARY_COLUMNS",
    "SUMMARY_FILES",
    "TIMING_LATENESS_MS",
    "EvalSummary",
    "ItemRecord",
    "normalise_error",
    "percentiles",
    "summary_row",
    "timing_valid",
    "turn_values",
]

#: Ids listed per failure group.
FAILURE_IDS = 10
NO_ENDPOINT = "(none)"

_UUID = re.compile(r"[0-9a-fA-F]{8}(?:-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"(?<![0-9A-Za-z])(?=[0-9A-Fa-f]*[0-9])[0-9A-Fa-f]{8,}(?![0-9A-Za-z])")
_DIGITS = re.compile(r"\d+")


def _read_drift(path: Path, realtime: bool) -> float | None:
    """The last append's lateness in `input_timeline.json` (None: no file, no appends, asap)."""
    if not path.exists():
        return None
    doc = read_json(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("appends", []), list):
        raise ValueError(f"{path}: not an input timeline (no `appends` list)")
    clock = doc.get("clock")
    pacing = clock.get("pacing", "realtime") if isinstance(clock, dict) else "realtime"
    appends = doc.get("appends") or []
    if not realtime or pacing != "realtime" or not appends:
        return None
    last = appends[-1]
    return number(last.get("lateness_ms")) if isinstance(last, dict) else None


@dataclass(frozen=True, slots=True)
class ItemRecord:
    """One finished item run: its `result.json` document and what the runner knows of it."""

    id: str
    repeat: int | None
    #: The endpoint URL, already redacted (None: the item never reached one).
    endpoint: str | None
    attempts: int
    result: dict[str, Any]
    #: Send lateness of the last append (ms): how far behind real time the stream ended.
    drift_ms: float | None
    expected: str | None
    extra: dict[str, Any]
    #: The bundle directory relative to the eval output directory, POSIX.
    bundle: str
    #: The errors of earlier attempts that were retried.
    previous_errors: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """`id`, or `id/repeat` for a repeated item (as its bundle directory is named)."""
        return self.id if self.repeat is None else f"{self.id}/{self.repeat}"

    @classmethod
    def from_bundle(
        cls,
        bundle_dir: Path,
        *,
        id: str,
        repeat: int | None,
        endpoint: str | None,
        attempts: int,
        expected: str | None,
        extra: Mapping[str, Any],
        bundle: str,
        previous_errors: Sequence[str] = (),
    ) -> ItemRecord:
        """Read a run bundle's `result.json` (required) and its drift from the timeline."""
        layout = BundleLayout(bundle_dir)
        path = layout.result
        if not path.exists():
            raise ValueError(f"{path}: missing (the item has no result)")
        result = read_json(path)
        if not isinstance(result, dict):
            raise ValueError(f"{path}: not a result (a JSON object expected)")
        if not isinstance(result.get("ok"), bool) or not isinstance(result.get("status"), str):
            raise ValueError(f"{path}: not a result (no boolean `ok` / string `status`)")
        turns = result.get("turns")
        if turns is not None and not (
            isinstance(turns, list) and all(isinstance(t, dict) for t in turns)
        ):
            raise ValueError(f"{path}: `turns` is not a list of objects")
        realtime = result.get("timing", "realtime") == "realtime"
        drift = _read_drift(layout.timeline, realtime)
        return cls(
            id, repeat, endpoint, attempts, result, drift, expected, dict(extra), bundle,
            tuple(previous_errors),
        )  # fmt: skip


def _distribution(values: Sequence[float]) -> dict[str, Any]:
    """count, p50, p95 and p99 (ms, 3 decimals; None when empty)."""
    if not values:
        return {"count": 0, "p50": None, "p95": None, "p99": None}
    p50, p95, p99 = (round(v, 3) for v in percentiles(values, (0.5, 0.95, 0.99)))
    return {"count": len(values), "p50": p50, "p95": p95, "p99": p99}


def _check_threshold(max_lateness_ms: float) -> float:
    if isinstance(max_lateness_ms, bool) or not isinstance(max_lateness_ms, int | float):
        raise ValueError(f"max_lateness_ms must be a number, got {max_lateness_ms!r}")
    if not math.isfinite(max_lateness_ms) or max_lateness_ms < 0:
        raise ValueError(f"max_lateness_ms must be finite and >= 0, got {max_lateness_ms}")
    return float(max_lateness_ms)


def _lateness_p99(result: Mapping[str, Any]) -> float | None:
    lateness = result.get("lateness_ms")
    return number(lateness.get("p99")) if isinstance(lateness, dict) else None


def timing_verdict_of(
    record: ItemRecord, max_lateness_ms: float = TIMING_LATENESS_MS
) -> TimingVerdict:
    """The run's timing verdict at `max_lateness_ms` (`analysis.timing`), and why not.

    None when nothing was paced in real time (`timing` not `realtime`) or nothing was
    measured (no send lateness: the run failed before streaming). Otherwise valid when the
    send lateness p99 and |drift| are both <= `max_lateness_ms`; a missing drift (no
    `input_timeline.json`) leaves the lateness p99 alone to decide.
    """
    max_lateness_ms = _check_threshold(max_lateness_ms)
    if record.result.get("timing", "realtime") != "realtime":
        return TimingVerdict(None)
    return timing_verdict(_lateness_p99(record.result), record.drift_ms, max_lateness_ms)


def timing_valid(record: ItemRecord, max_lateness_ms: float = TIMING_LATENESS_MS) -> bool | None:
    """Whether the run's latencies measure the model: sent on time and not drifting."""
    return timing_verdict_of(record, max_lateness_ms).valid


def _metric(metrics: Mapping[str, Any], name: str, stat: str) -> float | None:
    block = metrics.get(name)
    return number(block.get(stat)) if isinstance(block, dict) else None


def _extra_key(name: str, taken: Iterable[str]) -> str:
    """The column an extra `name` gets: itself, else `extra_` prefixed until no key has it."""
    used = set(taken)
    key = name
    while key in used:
        key = f"extra_{key}"
    return key


def summary_row(
    record: ItemRecord, *, max_lateness_ms: float = TIMING_LATENESS_MS
) -> dict[str, Any]:
    """One flat summary row: `SUMMARY_COLUMNS` in order, then the item's extra columns.

    An extra column named like a fixed one (or an earlier renamed extra) becomes
    `extra_<name>`; metrics a run does not have (failed, not real time) are None.
    """
    res = record.result
    metrics: dict[str, Any] = res["metrics"] if isinstance(res.get("metrics"), dict) else {}
    turns = res.get("turns")
    verdict = timing_verdict_of(record, max_lateness_ms)
    n_turns = metrics.get("turns")
    if n_turns is None and isinstance(turns, list):
        n_turns = len(turns)
    row: dict[str, Any] = {
        "id": record.id,
        "repeat": record.repeat,
        "endpoint": record.endpoint,
        # the wire the run spoke (docs/dialects.md); a run that never started has none
        "dialect": res.get("dialect"),
        "status": res.get("status"),
        "ok": res.get("ok"),
        "exit_code": res.get("exit_code"),
        "error": res.get("error"),
        "duration_s": res.get("duration_s"),
        "attempts": record.attempts,
        "timing": res.get("timing"),
        "timing_valid": verdict.valid,
        "timing_reason": verdict.reason,
        "lateness_p99_ms": _lateness_p99(res),
        "drift_ms": record.drift_ms,
        "turns": n_turns,
        "latency_p50_ms": _metric(metrics, "latency_ms", "p50"),
        "latency_p95_ms": _metric(metrics, "latency_ms", "p95"),
        "latency_max_ms": _metric(metrics, "latency_ms", "max"),
        "first_answer_latency_p50_ms": _metric(metrics, "first_answer_latency_ms", "p50"),
        "server_p50_ms": _metric(metrics, "server_ms", "p50"),
        "overlap_p50_ms": _metric(metrics, "overlap_ms", "p50"),
        "gap_p50_ms": _metric(metrics, "gap_ms", "p50"),
        "unanswered_turns": metrics.get("unanswered_turns"),
        "cut_turns": metrics.get("cut_turns"),
        "transcript": res.get("transcript"),
        "expected": record.expected,
        "bundle": record.bundle,
    }
    for name, value in record.extra.items():
        row[_extra_key(str(name), row)] = value
    return row


def normalise_error(message: str) -> str:
    """An error's text with volatile details replaced: hex ids and UUIDs → `…`, digits → `N`."""
    text = _UUID.sub("…", message.strip())
    text = _HEX.sub("…", text)
    return _DIGITS.sub("N", text)


def _pooled_turns(records: Sequence[ItemRecord]) -> dict[str, list[float]]:
    """Per-turn values of every turn of the given records, by `POOLED` field."""
    return turn_values(t for r in records for t in r.result.get("turns") or [])


class EvalSummary:
    """The summary of an eval: its rows (in the given order), the aggregate and the files."""

    def __init__(
        self,
        records: Sequence[ItemRecord],
        *,
        max_lateness_ms: float = TIMING_LATENESS_MS,
        admission: Mapping[str, Any] | None = None,
    ) -> None:
        self.max_lateness_ms = _check_threshold(max_lateness_ms)
        #: How many items ran at once and why (`eval.budget`; None: not known, a reopened eval).
        self.admission = None if admission is None else dict(admission)
        self.records = tuple(records)
        self._rows = [summary_row(r, max_lateness_ms=self.max_lateness_ms) for r in self.records]

    @property
    def rows(self) -> list[dict[str, Any]]:
        """The summary rows, one per item run, in the order the records were given."""
        return [dict(row) for row in self._rows]

    def aggregate(self) -> dict[str, Any]:
        """Counts, pooled per-turn percentiles (ok, timing-valid items), failures, endpoints."""
        valid = [row["timing_valid"] for row in self._rows]
        measured = [
            r for r, v in zip(self.records, valid, strict=True) if r.result.get("ok") and v is True
        ]
        pooled = _pooled_turns(measured)
        fdb = fdb_export_figures([(r.result, r.extra) for r in measured], _distribution)
        ok = sum(1 for r in self.records if r.result.get("ok") is True)
        return {
            "items": len(self.records),
            "ok": ok,
            "failed": len(self.records) - ok,
            "timing_valid": sum(1 for v in valid if v is True),
            "timing_invalid": sum(1 for v in valid if v is False),
            "max_lateness_ms": self.max_lateness_ms,
            "pooled_items": len(measured),
            **{name: _distribution(values) for name, values in pooled.items()},
            **fdb,
            "timing_invalid_items": [
                {"id": r.label, "reason": row["timing_reason"]}
                for r, row in zip(self.records, self._rows, strict=True)
                if row["timing_valid"] is False
            ][:FAILURE_IDS],
            "failures": self._failures(),
            "endpoints": self._endpoints(),
            **({"admission": self.admission} if self.admission is not None else {}),
        }

    def _failures(self) -> list[dict[str, Any]]:
        groups: dict[str, dict[str, Any]] = {}
        for record in self.records:
            if record.result.get("ok") is True:
                continue
            raw = record.result.get("error") or f"status {record.result.get('status')}"
            key = normalise_error(str(raw))
            group = groups.setdefault(
                key, {"error": key, "example": str(raw), "count": 0, "ids": []}
            )
            group["count"] += 1
            if len(group["ids"]) < FAILURE_IDS:
                group["ids"].append(record.label)
        # Most frequent first; equal counts keep first-seen order (sorted is stable).
        return sorted(groups.values(), key=lambda g: -int(g["count"]))

    def _endpoints(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for record in self.records:
            counts = out.setdefault(record.endpoint or NO_ENDPOINT, {"items": 0, "ok": 0})
            counts["items"] += 1
            counts["ok"] += record.result.get("ok") is True
        return {k: {**v, "failed": v["items"] - v["ok"]} for k, v in out.items()}

    def to_dict(self) -> dict[str, Any]:
        """`{"aggregate": ..., "items": rows}`, as `--json` prints it."""
        return {"aggregate": self.aggregate(), "items": self.rows}

    # --- files ---

    def columns(self) -> list[str]:
        """The CSV header: the fixed columns, then every extra column in first-seen order."""
        return list(dict.fromkeys([*SUMMARY_COLUMNS, *(k for row in self._rows for k in row)]))

    def render_jsonl(self) -> str:
        """`summary.jsonl`: one JSON object per row."""
        return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in self._rows)

    def render_csv(self) -> str:
        """`summary.csv`: None empty, bools `true`/`false`, objects and lists as compact JSON."""
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=self.columns(), lineterminator="\n")
        writer.writeheader()
        for row in self._rows:
            writer.writerow({k: _csv_cell(v) for k, v in row.items()})
        return buf.getvalue()

    def render_md(self) -> str:
        """`summary.md`: the aggregate for a human reader."""
        return summary_markdown(self.aggregate())

    def write(self, out_dir: Path) -> None:
        """Write `summary.jsonl`, `summary.csv` and `summary.md`, each atomically."""
        texts = (self.render_jsonl(), self.render_csv(), self.render_md())
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, text in zip(SUMMARY_FILES, texts, strict=True):
            _write_atomic(out_dir / name, text)


def _csv_cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list | tuple):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value


def _write_atomic(target: Path, text: str) -> None:
    from duplex_client.files import write_text_atomic

    write_text_atomic(target, text, newline="")  # CSV rows keep their own line ends
