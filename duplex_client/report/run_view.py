"""What a report draws of one run bundle: every track on the media clock, as plain data.

`RunView.from_documents` is pure: it takes the parsed `result.json`, `input_timeline.json` and
`events.jsonl` lines and builds the tracks. `bundle_reader.load_run_bundle` does the reading
(through `bundle.reader`). All times are media ms (0 = the first input sample).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class FrameThumb:
    """One sent frame's thumbnail: its file under `frames/` and what the timeline says of it."""

    name: str
    role: str
    width: int | None
    height: int | None
    source_pts_ms: float | None


@dataclass(frozen=True)
class UnitBlock:
    """One input unit: where it fell on the media clock and which frames rode it."""

    index: int
    kind: str
    start_ms: float
    end_ms: float
    fallback: bool
    segment: str
    frames: tuple[FrameThumb, ...] = ()


@dataclass(frozen=True)
class DecisionMark:
    """One listen/speak decision at the time the client received it."""

    unit_index: int | None
    decision: str
    at_ms: float
    reason: str | None
    response_id: str | None


@dataclass(frozen=True)
class TurnSpan:
    """One answer: its heard span, cut, transcript, and the latency from the user's end."""

    number: int
    response_id: str
    unit_index: int | None
    heard_start_ms: float | None
    heard_end_ms: float | None
    cut: str | None
    user_end_ms: float | None
    latency_ms: float | None
    server_ms: float | None
    overlap_ms: float | None
    gap_ms: float | None
    transcript: str


@dataclass(frozen=True)
class Marker:
    """A point event on the media clock: a commit, a server commit, a reconnect or an error."""

    kind: str
    at_ms: float
    label: str


@dataclass(frozen=True)
class LatenessPoint:
    """How late one append went out, at its media end."""

    append_index: int
    at_ms: float
    lateness_ms: float


@dataclass
class RunView:
    """Every track of one run, on the media clock."""

    title: str
    status: str
    ok: bool
    model: str | None
    session_id: str | None
    started_at: str | None
    duration_ms: float
    units: list[UnitBlock] = field(default_factory=list)
    decisions: list[DecisionMark] = field(default_factory=list)
    turns: list[TurnSpan] = field(default_factory=list)
    user_speech: list[tuple[float, float]] = field(default_factory=list)
    user_speech_source: str | None = None
    lateness: list[LatenessPoint] = field(default_factory=list)
    markers: list[Marker] = field(default_factory=list)
    metrics: dict[str, Any] = field(default_factory=dict)
    #: The digest of every payload sent (`input_timeline.json` totals): equal means same input.
    sent_sha256: str | None = None
    #: Why the page may be incomplete (a truncated `events.jsonl`, a missing file).
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def from_documents(
        cls,
        title: str,
        result: dict[str, Any],
        timeline: dict[str, Any],
        events: list[dict[str, Any]],
        *,
        thumbnails: set[str] | None = None,
    ) -> RunView:
        """Build the tracks; `thumbnails` names the files present under `frames/` (None: none)."""
        view = cls(
            title=title,
            status=str(result.get("status") or "unknown"),
            ok=bool(result.get("ok")),
            model=_str_or_none(result.get("model")),
            session_id=_str_or_none(result.get("session_id")),
            started_at=_str_or_none(result.get("started_at")),
            duration_ms=0.0,
            metrics=dict(result.get("metrics") or {}),
            sent_sha256=_str_or_none((timeline.get("totals") or {}).get("sent_sha256")),
        )
        appends = [a for a in timeline.get("appends") or [] if isinstance(a, dict)]
        view.units = _units(appends, thumbnails or set())
        view.lateness = _lateness(appends)
        view.decisions = _decisions(result.get("decisions") or [])
        view.turns = [_turn(n, t) for n, t in enumerate(result.get("turns") or [], start=1)]
        view.user_speech = [
            (float(s["start_ms"]), float(s["end_ms"])) for s in result.get("user_speech") or []
        ]
        view.user_speech_source = _str_or_none((result.get("metrics") or {}).get("user_end_source"))
        view.markers = _markers(timeline, events)
        view.duration_ms = view._end_ms(float((timeline.get("totals") or {}).get("audio_ms", 0)))
        return view

    def _end_ms(self, otherwise: float) -> float:
        """Where the last unit or heard answer ends (`otherwise` when there is neither)."""
        ends = [u.end_ms for u in self.units]
        ends += [t.heard_end_ms for t in self.turns if t.heard_end_ms is not None]
        return max(ends, default=otherwise)

    def unit(self, index: int) -> UnitBlock | None:
        """The unit with this index (the first, if a resume sent one twice)."""
        return next((u for u in self.units if u.index == index), None)

    def decision_by_unit(self) -> dict[int, str]:
        """Each decided unit's decision (the last one wins if a unit was decided twice)."""
        return {d.unit_index: d.decision for d in self.decisions if d.unit_index is not None}

    def to_dict(self) -> dict[str, Any]:
        """The tracks as JSON-ready data (what the page embeds)."""
        out = asdict(self)
        out["user_speech"] = [list(s) for s in self.user_speech]
        return out


def _lateness(appends: list[dict[str, Any]]) -> list[LatenessPoint]:
    return [
        LatenessPoint(int(a["index"]), float(a["media_end_ms"]), float(a["lateness_ms"]))
        for a in appends
        if a.get("lateness_ms") is not None and a.get("media_end_ms") is not None
    ]


def _decisions(rows: list[dict[str, Any]]) -> list[DecisionMark]:
    return [
        DecisionMark(
            unit_index=_int_or_none(d.get("unit_index")),
            decision=str(d.get("decision")),
            at_ms=float(d["decided_ms"]),
            reason=_str_or_none(d.get("reason")),
            response_id=_str_or_none(d.get("response_id")),
        )
        for d in rows
        if d.get("decision") in ("listen", "speak") and d.get("decided_ms") is not None
    ]


def _units(appends: list[dict[str, Any]], thumbnails: set[str]) -> list[UnitBlock]:
    units: list[UnitBlock] = []
    previous_end = 0.0
    for row in appends:
        kind = row.get("unit_kind")
        if kind is None or row.get("unit_index") is None:
            continue
        index = int(row["unit_index"])
        end = float(row["media_end_ms"])
        start = min(previous_end, float(row["media_start_ms"]))
        if kind == "VISION" and float(row.get("duration_ms") or 0) > 0:
            start = float(row["media_start_ms"])
        frames = []
        for k, frame in enumerate(row.get("frames") or []):
            name = f"{index}_{k}.jpg"
            if name in thumbnails:
                frames.append(
                    FrameThumb(
                        name=name,
                        role=str(frame.get("role")),
                        width=_int_or_none(frame.get("width")),
                        height=_int_or_none(frame.get("height")),
                        source_pts_ms=_float_or_none(frame.get("source_pts_ms")),
                    )
                )
        units.append(
            UnitBlock(
                index=index,
                kind=str(kind),
                start_ms=start,
                end_ms=end,
                fallback=bool(row.get("fallback")),
                segment=str(row.get("segment") or "clip"),
                frames=tuple(frames),
            )
        )
        previous_end = end
    return units


def _turn(number: int, row: dict[str, Any]) -> TurnSpan:
    said = str(row.get("transcript") or "")
    if row.get("kind") == "function_call":  # a call and its answer (protocol.md §11)
        said = f"function call: {said}"
    return TurnSpan(
        number=number,
        response_id=str(row.get("response_id")),
        unit_index=_int_or_none(row.get("unit_index")),
        heard_start_ms=_float_or_none(row.get("heard_start_ms")),
        heard_end_ms=_float_or_none(row.get("heard_end_ms")),
        cut=_str_or_none(row.get("cut")),
        user_end_ms=_float_or_none(row.get("user_end_ms")),
        latency_ms=_float_or_none(row.get("latency_ms")),
        server_ms=_float_or_none(row.get("server_ms")),
        overlap_ms=_float_or_none(row.get("overlap_ms")),
        gap_ms=_float_or_none(row.get("gap_ms")),
        transcript=said,
    )


def _markers(timeline: dict[str, Any], events: list[dict[str, Any]]) -> list[Marker]:
    origin = float(timeline.get("media_origin_ms") or 0)
    out: list[Marker] = []
    for c in timeline.get("commits") or []:
        if c.get("sent_offset_ms") is not None:
            label = "final commit" if c.get("final") else "commit"
            out.append(Marker("commit", float(c["sent_offset_ms"]) - origin, label))
    for r in timeline.get("reconnects") or []:
        label = f"reconnect ({r.get('outcome')}, {r.get('attempts')} attempts)"
        out.append(Marker("reconnect", float(r["started_offset_ms"]) - origin, label))
    for line in events:
        media_ms = line.get("media_ms")
        if media_ms is None:
            continue
        kind = line.get("type")
        event = line.get("event") or {}
        if kind == "input_audio_buffer.committed":
            out.append(Marker("server_commit", float(media_ms), "server commit"))
        elif kind == "error":
            err = event.get("error")
            if isinstance(err, dict):
                code, detail = err.get("code"), err.get("message")
            else:
                code, detail = event.get("code"), err
            out.append(Marker("error", float(media_ms), f"error {code}: {detail}"))
    out.sort(key=lambda m: m.at_ms)
    return out


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)


def _float_or_none(value: Any) -> float | None:
    return None if value is None else float(value)
