"""Following the commits a server makes by itself (server VAD) while input streams.

The server seals a turn wherever it detected the end of speech and restarts its unit grid
there (protocol.md §10). The client hears of it a round trip later, so the framer re-anchors
then (`committed`), and appends already planned but not yet sent are labelled again for the
new grid before they go out. Each commit is listed under `server_commits` in the timeline with
`units_closed`: how far it moved the unit numbering of the appends sent after it, which is
what the timeline invariants count.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Protocol

from duplex_client.framing.clock import MediaClock
from duplex_client.framing.plan import FramerConfig, PlannedAppend
from duplex_client.framing.timeline import InputTimeline
from duplex_client.framing.units import ms_to_samples
from duplex_client.protocol.response_events import ConnectionNewSession
from duplex_client.protocol.server_events import InputAudioBufferCommitted, ServerEvent

#: What re-anchors the grid: a commit the server made, or a new session after a journal gap
#: (its units count from where its input starts).
Regrid = InputAudioBufferCommitted | ConnectionNewSession


class FollowingFramer(Protocol):
    """What both framers offer for server commits."""

    config: FramerConfig

    def committed(self, audio_end_samples: int) -> int:
        """Re-anchor at a commit position; how far the next `unit_index` moved."""
        ...

    def relabel(self, append: PlannedAppend) -> PlannedAppend:
        """A planned append labelled for the grid as it now is."""
        ...


class ServerCommitFollower:
    """An event listener that re-anchors a framer on server commits and records them.

    Between `expect(planned)` (or `planned(...)`) and the matching `take()` calls, appends
    planned before a commit is heard are relabelled when it is; the commit's `units_closed`
    leaves out what their new labels account for, so the timeline's numbering adds up for what
    was sent. Between `planning()` and `planned()` the framer belongs to a worker thread, so a
    commit heard then is applied (on the event loop's thread) when planning returns.
    """

    def __init__(
        self, framer: FollowingFramer, timeline: InputTimeline | None, clock: MediaClock
    ) -> None:
        self.framer = framer
        self.timeline = timeline
        self.clock = clock
        self._pending: deque[PlannedAppend] = deque()
        self._planning = False
        self._deferred: list[tuple[Regrid, float]] = []

    def expect(self, planned: Sequence[PlannedAppend]) -> None:
        """These appends are planned and about to be sent, in order."""
        self._pending = deque(planned)

    def take(self) -> PlannedAppend:
        """The next expected append, labelled for the grid as it is now."""
        return self._pending.popleft()

    def peek(self) -> PlannedAppend | None:
        """The next expected append as it is labelled now (None when none is expected)."""
        return self._pending[0] if self._pending else None

    @property
    def expected(self) -> int:
        """How many planned appends wait to be taken."""
        return len(self._pending)

    @property
    def waiting_ms(self) -> int:
        """Media time the expected appends span (0 when none is expected)."""
        if not self._pending:
            return 0
        return self._pending[-1].media_end_ms - self._pending[0].media_start_ms

    @property
    def deferred(self) -> bool:
        """Whether a commit heard during planning still waits to be applied."""
        return bool(self._deferred)

    def planning(self) -> None:
        """Another thread advances the framer now: commits heard meanwhile wait for `planned`."""
        self._planning = True

    def planned(self, appends: Sequence[PlannedAppend]) -> None:
        """Planning finished with `appends` (expected after the others); apply waiting commits."""
        self._planning = False
        self._pending.extend(appends)
        deferred, self._deferred = self._deferred, []
        for event, received_at in deferred:
            self._follow(event, received_at)

    def __call__(self, event: ServerEvent, received_at: float) -> None:
        """Follow `event` if it is a commit the server made, or a replacement session."""
        server_commit = (
            isinstance(event, InputAudioBufferCommitted)
            and event.client_event_id is None
            and event.audio_end_ms is not None
        )
        if not (server_commit or isinstance(event, ConnectionNewSession)):
            return
        assert isinstance(event, Regrid)
        if self._planning:  # the framer is not ours to touch until planning returns
            self._deferred.append((event, received_at))
            return
        self._follow(event, received_at)

    def _follow(self, event: Regrid, received_at: float) -> None:
        at_ms = (
            event.audio_start_ms if isinstance(event, ConnectionNewSession) else event.audio_end_ms
        )
        assert at_ms is not None
        rate = self.framer.config.grid.sample_rate_hz
        moved = self.framer.committed(ms_to_samples(round(at_ms), rate))
        before = list(self._pending)
        self._pending = deque(self.framer.relabel(a) for a in before)
        moved -= sum(a.closes_unit for a in self._pending) - sum(a.closes_unit for a in before)
        if self.timeline is None:
            return
        offset = self.clock.offset_ms(received_at) if self.clock.started else None
        if isinstance(event, ConnectionNewSession):
            self.timeline.add_new_session(
                previous_session_id=event.previous_session_id,
                session_id=event.session_id,
                audio_start_ms=round(at_ms),
                received_offset_ms=offset,
                units_closed=moved,
                lost_appends=event.lost_appends,
            )
            return
        self.timeline.add_server_commit(
            audio_end_ms=round(at_ms), received_offset_ms=offset, units_closed=moved
        )
