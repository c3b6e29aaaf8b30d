"""Checks of the `input_timeline.json` invariants (protocol.md §10), for tests and evaluators."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_ROUNDING_MS = 1


def _residual_commits(
    commits: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> list[int]:
    """`after_append_index` of final commits sealing a partly filled unit (it takes an index)."""
    out = []
    for commit in commits:
        after = commit.get("after_append_index")
        if commit.get("final", True) and isinstance(after, int) and 0 <= after < len(rows):
            row = rows[after]
            if row["unit_kind"] is None and row["duration_ms"] > 0:
                out.append(after)
    return out


def check_timeline(doc: Mapping[str, Any], *, check_totals: bool = True) -> list[str]:
    """Every §10 invariant the document breaks, as messages (empty when it is consistent)."""
    problems: list[str] = []
    rows: list[Mapping[str, Any]] = list(doc.get("appends", []))
    commits: list[Mapping[str, Any]] = list(doc.get("commits", []))
    if [r["index"] for r in rows] != list(range(len(rows))):
        problems.append("append indexes are not contiguous from 0")
    if [c["index"] for c in commits] != list(range(len(commits))):
        problems.append("commit indexes are not contiguous from 0")
    for i, row in enumerate(rows):
        tag = f"append {i}"
        if i:
            problems += [f"{tag}: {p}" for p in _against_previous(rows[i - 1], row)]
        problems += [f"{tag}: {p}" for p in _row_problems(row)]
    problems += _numbering_problems(rows, _residuals(doc, commits, rows))
    if check_totals:
        problems.extend(_check_totals(doc, rows, commits))
    return problems


def _residuals(
    doc: Mapping[str, Any], commits: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]
) -> list[int]:
    """Appends after which a unit index was taken without a closing row (commits, server)."""
    residuals = _residual_commits(commits, rows)
    for sc in [*doc.get("server_commits", []), *doc.get("new_sessions", [])]:
        after = sc.get("after_append_index")
        if isinstance(after, int):
            residuals += [after] * int(sc.get("units_closed") or 0)
    return residuals


def _against_previous(prev: Mapping[str, Any], row: Mapping[str, Any]) -> list[str]:
    """What a row breaks against the one before it: order of sends, media and audio."""
    out = []
    sent, before = row["sent_offset_ms"], prev["sent_offset_ms"]
    if sent is not None and before is not None and sent < before:  # None: never written
        out.append("sent_offset_ms decreases")
    if row["media_start_ms"] < prev["media_start_ms"]:
        out.append("media_start_ms decreases")
    if abs(prev["audio_end_ms"] + row["duration_ms"] - row["audio_end_ms"]) > _ROUNDING_MS:
        out.append("audio_end_ms is not the previous plus duration_ms")
    return out


def _row_problems(row: Mapping[str, Any]) -> list[str]:
    """What one row breaks by itself: its span, its lateness, its unit and its frames."""
    out = []
    if row["media_end_ms"] < row["media_start_ms"]:
        out.append("media span is negative")
    scheduled, sent, late = row["scheduled_offset_ms"], row["sent_offset_ms"], row["lateness_ms"]
    if sent is None:  # never written (the connection was lost): no send time, no lateness
        if late is not None or row.get("written", False):
            out.append("a row without sent_offset_ms must say written: false, lateness_ms null")
    elif scheduled is not None and (late is None or abs(late - max(0.0, sent - scheduled)) > 0.002):
        out.append("lateness_ms is not max(0, sent - scheduled)")
    kind, frames = row["unit_kind"], row["frames"]
    if (kind is None) != (row["unit_index"] is None):
        out.append("unit_kind and unit_index must be both set or both null")
    rules = {
        "frames on an append that closes no unit": kind is None and bool(frames),
        "a VISION row needs duration 0 and frames": kind == "VISION"
        and (row["duration_ms"] != 0 or not frames),
        "an OMNI row without frames": kind == "OMNI" and not frames,
        "an AUDIO row with frames": kind == "AUDIO" and bool(frames),
        "a frame group is a base and at most one composite": len(frames) > 2
        or bool(frames and frames[0]["role"] != "base"),
    }
    return out + [message for message, broken in rules.items() if broken]


def _numbering_problems(rows: Sequence[Mapping[str, Any]], residuals: list[int]) -> list[str]:
    """Unit indexes that do not follow the previous closing row (counting residual units)."""
    out = []
    last: Mapping[str, Any] | None = None
    for i, row in enumerate(rows):
        if row["unit_kind"] is None:
            continue
        if last is not None:
            skipped = sum(1 for a in residuals if last["index"] <= a < i)
            if row["unit_index"] != last["unit_index"] + 1 + skipped:
                out.append(
                    f"append {i}: unit_index {row['unit_index']} does not follow "
                    f"{last['unit_index']}"
                )
        last = row
    return out


def _check_totals(
    doc: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], commits: Sequence[Mapping[str, Any]]
) -> list[str]:
    totals = doc.get("totals", {})
    problems = []
    units = {"AUDIO": 0, "OMNI": 0, "VISION": 0}
    frames = {"base": 0, "composite": 0}
    for row in rows:
        if row["unit_kind"]:
            units[row["unit_kind"]] += 1
        for image in row["frames"]:
            frames[image["role"]] += 1
    audio = sum(r["duration_ms"] for r in rows)
    expect = {
        "appends": len(rows),
        "units": units,
        "frames": frames,
        "commits": len(commits),
        "fallback_units": sum(1 for r in rows if r["fallback"] and r["unit_kind"]),
        "resends": sum(len(r["resends"]) for r in rows),
    }
    for key, value in expect.items():
        if totals.get(key) != value:
            problems.append(f"totals.{key} is {totals.get(key)!r}, rows say {value!r}")
    if abs(totals.get("audio_ms", 0) - audio) > max(_ROUNDING_MS, len(rows) // 2):
        problems.append(f"totals.audio_ms is {totals.get('audio_ms')!r}, rows say {audio}")
    return problems
