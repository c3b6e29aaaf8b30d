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
    residuals = _residual_commits(commits, rows)
    for sc in doc.get("server_commits", []):
        after = sc.get("after_append_index")
        if isinstance(after, int):
            residuals += [after] * int(sc.get("units_closed") or 0)
    last_closing: Mapping[str, Any] | None = None
    for i, row in enumerate(rows):
        tag = f"append {i}"
        if i and row["sent_offset_ms"] < rows[i - 1]["sent_offset_ms"]:
            problems.append(f"{tag}: sent_offset_ms decreases")
        if i and row["media_start_ms"] < rows[i - 1]["media_start_ms"]:
            problems.append(f"{tag}: media_start_ms decreases")
        if row["media_end_ms"] < row["media_start_ms"]:
            problems.append(f"{tag}: media span is negative")
        if (
            i
            and abs(rows[i - 1]["audio_end_ms"] + row["duration_ms"] - row["audio_end_ms"])
            > _ROUNDING_MS
        ):
            problems.append(f"{tag}: audio_end_ms is not the previous plus duration_ms")
        scheduled, sent, late = (
            row["scheduled_offset_ms"],
            row["sent_offset_ms"],
            row["lateness_ms"],
        )
        if scheduled is not None and (
            late is None or abs(late - max(0.0, sent - scheduled)) > 0.002
        ):
            problems.append(f"{tag}: lateness_ms is not max(0, sent - scheduled)")
        kind, unit = row["unit_kind"], row["unit_index"]
        if (kind is None) != (unit is None):
            problems.append(f"{tag}: unit_kind and unit_index must be both set or both null")
        if kind is None and row["frames"]:
            problems.append(f"{tag}: frames on an append that closes no unit")
        if kind == "VISION" and (row["duration_ms"] != 0 or not row["frames"]):
            problems.append(f"{tag}: a VISION row needs duration 0 and frames")
        if kind == "OMNI" and not row["frames"]:
            problems.append(f"{tag}: an OMNI row without frames")
        if kind == "AUDIO" and row["frames"]:
            problems.append(f"{tag}: an AUDIO row with frames")
        if len(row["frames"]) > 2 or (row["frames"] and row["frames"][0]["role"] != "base"):
            problems.append(f"{tag}: a frame group is a base and at most one composite")
        if kind is None:
            continue
        if last_closing is not None:
            skipped = sum(1 for a in residuals if last_closing["index"] <= a < i)
            if unit != last_closing["unit_index"] + 1 + skipped:
                problems.append(
                    f"{tag}: unit_index {unit} does not follow {last_closing['unit_index']}"
                )
        last_closing = row
    if check_totals:
        problems.extend(_check_totals(doc, rows, commits))
    return problems


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
