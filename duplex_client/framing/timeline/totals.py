"""The `totals` summary of a timeline's rows, ending with the `sent_sha256` digest."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from duplex_client.framing.clock import Pacing
from duplex_client.framing.digest import SentDigest
from duplex_client.framing.stats import SortedSample


def frame_counts(appends: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """How many base and composite images the append rows carried."""
    frames = {"base": 0, "composite": 0}
    for row in appends:
        for image in row["frames"]:
            frames[image["role"]] += 1
    return frames


def audio_span_ms(appends: Sequence[Mapping[str, Any]]) -> int:
    """The audio the append rows cover, from the first's start to the last's end."""
    if not appends:
        return 0
    first = appends[0]
    span: int = appends[-1]["audio_end_ms"] - (first["audio_end_ms"] - first["duration_ms"])
    return span


def lateness_summary(
    rows: Sequence[Mapping[str, Any]], running: SortedSample, pacing: Pacing
) -> dict[str, float] | None:
    """p50, p99 and max lateness of the written rows (None: none, or not realtime).

    `running` holds every append's lateness; it is recounted only when some were not written.
    """
    late = running
    if any(not r["written"] for r in rows):
        late = SortedSample()
        for r in rows:
            if r.get("lateness_ms") is not None:
                late.add(r["lateness_ms"])
    if pacing == "realtime" and late.max is not None:
        return {
            "p50": round(late.percentile(0.5), 3),
            "p99": round(late.percentile(0.99), 3),
            "max": round(late.max, 3),
        }
    return None


def timeline_totals(
    *,
    appends: Sequence[Mapping[str, Any]],
    rows: Sequence[Mapping[str, Any]],
    commits: int,
    lateness: SortedSample,
    pacing: Pacing,
    unit_counts: Mapping[str, int],
    digest: SentDigest,
) -> dict[str, Any]:
    """Counts, audio and lateness percentiles summarising the rows.

    `appends` are the rows as recorded, `rows` the same with what became of each (`written`,
    `acknowledged_offset_ms`); lateness is of the written ones.
    """
    return {
        "appends": len(appends),
        "written": sum(1 for r in rows if r["written"]),
        "written_audio_ms": sum(r["duration_ms"] for r in rows if r["written"]),
        "acknowledged": sum(1 for r in rows if r.get("acknowledged_offset_ms") is not None),
        "audio_ms": audio_span_ms(appends),
        "units": dict(unit_counts),
        "fallback_units": sum(1 for r in appends if r["fallback"] and r["unit_kind"]),
        "frames": frame_counts(appends),
        "commits": commits,
        "resends": sum(len(r["resends"]) for r in appends),
        "lateness_ms": lateness_summary(rows, lateness, pacing),
        "sent_sha256": digest.hexdigest(),
    }
