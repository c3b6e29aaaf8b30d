"""Turns: one row per spoken response with its heard span and latency, and the run metrics.

All times are media ms (0 = the first input sample). A response's `user_end_ms` is the end
of the last user-speech segment that ended before its speak decision arrived; its latency is
`heard_start_ms - user_end_ms` (negative: the model started before the user stopped).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from duplex_client.analysis.annotations import SpeechSegment, user_end_before
from duplex_client.analysis.listener import HeardSegment, HeardSpan

UserEndSource = Literal["annotation", "vad", "none"]
#: User speech separated by a shorter pause is one user turn (the common end-of-turn
#: silence, as in the JoyAI preset's server VAD) for `unanswered_turns` and first answers.
TURN_GAP_MS = 500.0


@dataclass(frozen=True, slots=True)
class ResponseFacts:
    """What the client observed of one spoken response, in media ms."""

    response_id: str
    unit_index: int | None
    decided_ms: float | None
    first_audio_ms: float | None
    received_ms: float
    transcript: str


@dataclass(frozen=True, slots=True)
class Turn:
    """One row of `result.json` → `turns` (see docs/metrics.md for every field)."""

    response_id: str
    unit_index: int | None
    decided_ms: float | None
    first_audio_ms: float | None
    heard_start_ms: float | None
    heard_end_ms: float | None
    heard_ms: float
    received_ms: float
    cut: str | None
    user_end_ms: float | None
    user_end_source: UserEndSource
    latency_ms: float | None
    server_ms: float | None
    transcript: str
    #: Filled by `TurnMetrics.measured_turns()`: this turn's audio heard over user speech,
    #: and the silence before it (None: not heard, or no user end before it).
    overlap_ms: float = 0.0
    gap_ms: float | None = None
    #: `response` (a spoken answer) or `function_call` (a call and its output, not heard).
    kind: str = "response"
    function_call: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON row."""
        return asdict(self)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def build_turns(
    responses: Sequence[ResponseFacts],
    spans: Mapping[str, HeardSpan],
    user_speech: Sequence[SpeechSegment],
    source: UserEndSource,
    unit_sent_ms: Mapping[int, float],
    *,
    played: bool = True,
) -> list[Turn]:
    """The turn rows; `unit_sent_ms` maps a unit index to the send time of its closing append.

    `played` False: nothing played the answers (live without a speaker), so each latency
    ends at the answer's first audio received instead of its first heard sample.
    """
    turns = []
    for f in responses:
        span = spans.get(f.response_id)
        user_end = None
        if source != "none" and f.decided_ms is not None:
            user_end = user_end_before(user_speech, f.decided_ms)
        start = span.heard_start_ms if span else None
        answered = start if played else f.first_audio_ms
        sent = unit_sent_ms.get(f.unit_index) if f.unit_index is not None else None
        turns.append(
            Turn(
                response_id=f.response_id,
                unit_index=f.unit_index,
                decided_ms=_round(f.decided_ms),
                first_audio_ms=_round(f.first_audio_ms),
                heard_start_ms=start,
                heard_end_ms=span.heard_end_ms if span else None,
                heard_ms=span.heard_ms if span else 0.0,
                received_ms=round(f.received_ms, 3),
                cut=span.cut if span else None,
                user_end_ms=_round(user_end),
                user_end_source=source if user_end is not None else "none",
                latency_ms=_round(answered - user_end)
                if answered is not None and user_end is not None
                else None,
                server_ms=_round(f.first_audio_ms - sent)
                if f.first_audio_ms is not None and sent is not None
                else None,
                transcript=f.transcript,
            )
        )
    return turns


def _overlap(a: tuple[float, float], b: tuple[float, float]) -> float:
    return max(0.0, min(a[1], b[1]) - max(a[0], b[0]))


def _covered(span: tuple[float, float], pieces: Sequence[tuple[float, float]]) -> float:
    """How much of `span` the (possibly overlapping) `pieces` cover."""
    covered, cursor = 0.0, span[0]
    for lo, hi in sorted(pieces):
        lo, hi = max(lo, cursor), min(hi, span[1])
        if hi > lo:
            covered += hi - lo
            cursor = hi
    return covered


def summarize(values: Sequence[float]) -> dict[str, float | int | None]:
    """count, p50, p95 and max (linear-interpolated percentiles; None when empty)."""
    if not values:
        return {"count": 0, "p50": None, "p95": None, "max": None}
    ordered = sorted(values)

    def pct(q: float) -> float:
        pos = (len(ordered) - 1) * q
        lo = int(pos)
        hi = min(lo + 1, len(ordered) - 1)
        return round(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo), 3)

    return {"count": len(ordered), "p50": pct(0.5), "p95": pct(0.95), "max": round(ordered[-1], 3)}


class TurnMetrics:
    """Run-level figures over the turns, the heard segments and the user's speech."""

    def __init__(
        self,
        turns: Sequence[Turn],
        segments: Sequence[HeardSegment],
        sample_rate_hz: int,
        user_speech: Sequence[SpeechSegment],
        source: UserEndSource,
        *,
        played: bool = True,
    ) -> None:
        self.turns = turns
        self.source = source
        #: False: nothing played the answers; they count from their first audio received.
        self.played = played
        self.user = [(s.start_ms, s.end_ms) for s in user_speech]
        ms = 1000 / sample_rate_hz
        self.heard: dict[str, list[tuple[float, float]]] = {}
        for seg in segments:
            self.heard.setdefault(seg.response_id, []).append((seg.start * ms, seg.end * ms))

    def overlap_ms(self, turn: Turn) -> float:
        """Model audio of this turn heard while the user was speaking."""
        return sum(_overlap(h, u) for h in self.heard.get(turn.response_id, []) for u in self.user)

    def gap_ms(self, turn: Turn) -> float | None:
        """Silence between the user's end and the heard answer (no speech, no model audio)."""
        if turn.user_end_ms is None or turn.heard_start_ms is None:
            return None
        if turn.heard_start_ms <= turn.user_end_ms:
            return 0.0
        window = (turn.user_end_ms, turn.heard_start_ms)
        sound = [*self.user, *(h for spans in self.heard.values() for h in spans)]
        return round(window[1] - window[0] - _covered(window, sound), 3)

    def measured_turns(self) -> list[Turn]:
        """The turns with `overlap_ms` and `gap_ms` filled in (heard turns only; else 0 / None)."""
        return [
            replace(t, overlap_ms=round(self.overlap_ms(t), 3), gap_ms=self.gap_ms(t))
            if t.heard_ms > 0
            else t
            for t in self.turns
        ]

    def user_turns(self) -> list[tuple[float, float]]:
        """The user's speech as turns: segments apart by less than `TURN_GAP_MS` joined."""
        out: list[tuple[float, float]] = []
        for start, end in sorted(self.user):
            if out and start - out[-1][1] < TURN_GAP_MS:
                out[-1] = (out[-1][0], max(out[-1][1], end))
            else:
                out.append((start, end))
        return out

    def answers(self) -> list[tuple[tuple[float, float], list[float]]]:
        """Each user turn and the heard starts of the responses answering it, earliest first
        (a response answers the user turn its `user_end_ms` falls in)."""
        out = []
        for start, end in self.user_turns():
            starts = sorted(
                at
                for t in self.turns
                if (at := self.answer_start(t)) is not None
                and t.user_end_ms is not None
                and start <= t.user_end_ms <= end
            )
            out.append(((start, end), starts))
        return out

    def answer_start(self, turn: Turn) -> float | None:
        """Where a turn's answer starts for the latency: its first heard sample, or, when
        nothing played, its first audio received (None: never heard, or no audio)."""
        if not self.played:
            return turn.first_audio_ms
        return turn.heard_start_ms if turn.heard_ms > 0 else None

    def first_answers(self) -> list[tuple[tuple[float, float], float | None]]:
        """Each user turn and the heard start of the first response answering it (or None)."""
        return [(turn, starts[0] if starts else None) for turn, starts in self.answers()]

    def follow_ups(self) -> list[float]:
        """From a user turn's end to each later answer to the same turn (the first excluded)."""
        return [heard - end for (_, end), starts in self.answers() for heard in starts[1:]]

    def unanswered(self) -> int | None:
        """User turns no heard response answered (None without user speech)."""
        if self.source == "none":
            return None
        return sum(1 for _, heard in self.first_answers() if heard is None)

    def to_dict(self) -> dict[str, Any]:
        """`result.json` → `metrics` (without the vLLM-Omni section, added by the caller)."""
        latency = [t.latency_ms for t in self.turns if t.latency_ms is not None]
        server = [t.server_ms for t in self.turns if t.server_ms is not None]
        heard_turns = [t for t in self.turns if t.heard_ms > 0]
        gaps = [g for t in heard_turns if (g := self.gap_ms(t)) is not None]
        return {
            "turns": len(self.turns),
            "user_end_source": self.source,
            "latency_to": "heard" if self.played else "first_audio",
            "user_speech_segments": len(self.user) if self.source != "none" else None,
            "user_turns": len(self.user_turns()) if self.source != "none" else None,
            "latency_ms": summarize(latency),
            "first_answer_latency_ms": summarize(
                [heard - end for (_, end), heard in self.first_answers() if heard is not None]
            ),
            "follow_up_latency_ms": summarize(self.follow_ups()),
            "server_ms": summarize(server),
            "overlap_ms": summarize([self.overlap_ms(t) for t in heard_turns]),
            "gap_ms": summarize(gaps),
            "unanswered_turns": self.unanswered(),
            "cut_turns": sum(1 for t in self.turns if t.cut),
        }
