"""A stream's timeline hears its client: reconnections, resends and late sends recorded."""

from __future__ import annotations

import weakref
from typing import Any

from duplex_client.client.resume import ReconnectReport
from duplex_client.client.streaming.targets import StreamTarget, _Listenable, _Reconnecting
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.delivered import Deliveries
from duplex_client.framing.timeline import InputTimeline


class TimelineReconnects:
    """Writes a client's reconnections into a timeline: `reconnects` rows, resends, late sends.

    Appends written before a drop and sent again after the resume get a `resends` entry
    (`attempt`: the reconnect attempt that resumed); appends queued while disconnected keep
    their deadline and get the time they really left as `sent_offset_ms` (lateness included).
    """

    def __init__(self, timeline: InputTimeline) -> None:
        self.timeline = timeline
        self._rows: dict[int, dict[str, Any]] = {}
        self._applied: dict[int, int] = {}

    def __call__(self, report: ReconnectReport) -> None:
        """Record (or update) one report; called when a reconnection ends or changes outcome."""
        clock = self.timeline.clock
        if clock is None or not clock.started:
            return
        done = self._applied.get(report.index, 0)
        for delivery in report.deliveries[done:]:
            at = clock.offset_ms(delivery.sent_at)
            if delivery.resend:
                self.timeline.add_resend(delivery.event_id, at, report.attempts)
            else:
                self._sent_late(delivery.event_id, at)
        self._applied[report.index] = len(report.deliveries)
        resumed = None
        if report.outcome != "failed" and report.ended_at is not None:
            resumed = clock.offset_ms(report.ended_at)
        row = self.timeline.add_reconnect(
            started_offset_ms=clock.offset_ms(report.started_at),
            resumed_offset_ms=resumed,
            attempts=report.attempts,
            outcome=report.outcome or "failed",
            resent_appends=report.resent_appends,
        )
        if report.outcome == "new_session":
            row["previous_session_id"] = report.previous_session_id
            row["new_session_id"] = report.new_session_id
            row["lost_appends"] = report.unresolved
        earlier = self._rows.get(report.index)
        if earlier is not None:  # an update: keep one row per reconnection
            self.timeline.reconnects.pop()  # the row just added
            earlier.update(row)
        else:
            self._rows[report.index] = row

    def _sent_late(self, event_id: str, at: float) -> None:
        self.timeline.set_sent_offset(event_id, at)


_RECORDERS: weakref.WeakKeyDictionary[InputTimeline, TimelineReconnects] = (
    weakref.WeakKeyDictionary()
)


def attach_timeline(timeline: InputTimeline, target: StreamTarget, clock: MediaClock) -> None:
    """Time `timeline` by `clock` and let it hear `target`'s events and reconnections."""
    timeline.clock = clock
    ledger = getattr(target, "input_ledger", None)
    if isinstance(ledger, Deliveries):
        timeline.deliveries = ledger
    if isinstance(target, _Listenable):
        timeline.listen_to(target)
    if isinstance(target, _Reconnecting):
        target.add_reconnect_listener(reconnect_recorder(timeline))


def reconnect_recorder(timeline: InputTimeline) -> TimelineReconnects:
    """The one recorder of a timeline (registering it twice with a client is harmless)."""
    recorder = _RECORDERS.get(timeline)
    if recorder is None:
        recorder = _RECORDERS[timeline] = TimelineReconnects(timeline)
    return recorder
