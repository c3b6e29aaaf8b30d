"""`InputTimeline`: the record of every append and commit sent, kept as rows (§10)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duplex_client.files import write_text_atomic
from duplex_client.framing.clock import MediaClock, Pacing, SendTiming
from duplex_client.framing.delivered import Deliveries, delivered
from duplex_client.framing.digest import SentDigest
from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.redact import audio_source_facts, video_facts
from duplex_client.framing.sources import INPUT_SAMPLE_RATE_HZ
from duplex_client.framing.stats import SortedSample
from duplex_client.framing.timeline.document import (
    render_document,
    timeline_document,
    timeline_target,
)
from duplex_client.framing.timeline.recovery import (
    new_session_row,
    reconnect_row,
    server_commit_row,
)
from duplex_client.framing.timeline.rows import (
    append_row,
    commit_row,
)
from duplex_client.framing.timeline.settings import (
    default_unit_grid,
    longest_append_ms,
    session_facts,
    sliding_window_facts,
    unit_grid_facts,
)
from duplex_client.framing.timeline.totals import timeline_totals
from duplex_client.framing.timeline.updates import RowUpdates
from duplex_client.framing.units import UnitGrid
from duplex_client.protocol.capabilities import Capabilities, UnitKind


class InputTimeline(RowUpdates):
    """Rows for every append and commit of one client session, written as §10 JSON.

    Rows are added as events are sent; acknowledgements and errors are filled in by
    `observe(event)` (or `acknowledge`/`record_error`). Only facts are kept: sizes,
    hashes, times and ids, never audio or image payloads, voices, tokens or keys.
    """

    def __init__(
        self,
        *,
        session_id: str | None = None,
        model: str | None = None,
        url: str | None = None,
        path: str | os.PathLike[str] | None = None,
    ) -> None:
        self.session: dict[str, Any] = {}
        self.set_session(session_id=session_id, model=model, url=url)
        self.path = None if path is None else Path(path)
        self.clock: MediaClock | None = None
        self.pacing: Pacing = "realtime"
        self.input_format = {
            "encoding": "pcm16",
            "sample_rate_hz": INPUT_SAMPLE_RATE_HZ,
            "channels": 1,
        }
        self.unit_grid: dict[str, Any] | None = None
        self.chunk_ms: int | None = None
        #: The `chunk_ms` asked for when it was longer than any unit (then cut to one unit).
        self.chunk_ms_requested: int | None = None
        self.media_origin_ms: int | None = None
        self.tail_silence_ms = 0
        self.soundtrack_policy: dict[str, Any] | None = None
        self.audio_source: dict[str, Any] | None = None
        self.video: dict[str, Any] | None = None
        self.sliding_window: dict[str, Any] = {}
        self.appends: list[dict[str, Any]] = []
        self.commits: list[dict[str, Any]] = []
        self.reconnects: list[dict[str, Any]] = []
        self.server_commits: list[dict[str, Any]] = []
        self.new_sessions: list[dict[str, Any]] = []
        self._rows: dict[str, dict[str, Any]] = {}
        self._listening: set[int] = set()
        self.digest = SentDigest()
        #: Running figures of the append rows, kept as rows are added (never re-sorted):
        #: the appends' `lateness_ms` values in order, and the appends of each unit kind.
        self.lateness = SortedSample()
        #: The session's record of what was written and confirmed (`client.input_ledger`);
        #: None: every row counts as written.
        self.deliveries: Deliveries | None = None
        self.unit_counts = {k.value: 0 for k in (UnitKind.AUDIO, UnitKind.OMNI, UnitKind.VISION)}

    # --- settings ---

    def set_session(
        self, *, session_id: str | None = None, model: str | None = None, url: str | None = None
    ) -> None:
        """Session id, model and target URL (credentials are stripped from the URL)."""
        self.session = session_facts(self.session, session_id=session_id, model=model, url=url)

    def set_sliding_window(self, extra_body: Mapping[str, Any] | None) -> None:
        """The sliding-window knobs exactly as sent in `extra_body` (other keys ignored)."""
        self.sliding_window = sliding_window_facts(extra_body)

    def set_unit_grid(
        self, grid: UnitGrid, caps: Capabilities | None = None, *, source: str | None = None
    ) -> None:
        """The grid the framer used, where it came from and the kind/modality facts."""
        self.unit_grid = unit_grid_facts(grid, caps, source=source)

    def describe_stream(
        self,
        *,
        chunk_ms: int,
        media_origin_ms: int,
        tail_silence_ms: int = 0,
        audio_source: Mapping[str, Any] | None = None,
        video: Mapping[str, Any] | None = None,
        soundtrack: Mapping[str, Any] | None = None,
        pacing: Pacing | None = None,
    ) -> None:
        """Framer settings of a stream; the first stream's describe the file, tails add up."""
        first = self.chunk_ms is None
        self.tail_silence_ms += tail_silence_ms
        if pacing is not None:
            self.pacing = pacing
        if not first:
            return
        self.chunk_ms = self._longest_append_ms(chunk_ms)
        self.chunk_ms_requested = chunk_ms if self.chunk_ms != chunk_ms else None
        self.media_origin_ms = media_origin_ms
        self.audio_source = audio_source_facts(audio_source)
        self.video = video_facts(video)
        self.soundtrack_policy = dict(soundtrack) if soundtrack is not None else None

    def fitted_to_video(self, record: Mapping[str, Any] | None) -> None:
        """Say in `audio_source` how external audio shorter than its video was fitted to it."""
        if record is not None and self.audio_source is not None:
            self.audio_source["fitted_to_video"] = dict(record)

    def _longest_append_ms(self, chunk_ms: int) -> int:
        """What `chunk_ms` amounts to: appends never cross a unit boundary (the grid's)."""
        return longest_append_ms(self.unit_grid, chunk_ms)

    # --- rows ---

    def _last_append_index(self) -> int | None:
        """The index of the last append row (None: none yet)."""
        return self.appends[-1]["index"] if self.appends else None

    def add_append(
        self, append: PlannedAppend, event_id: str, timing: SendTiming
    ) -> dict[str, Any]:
        """Record one sent append."""
        row = append_row(len(self.appends), append, event_id, timing)
        self.appends.append(row)
        self._rows[event_id] = row
        self.digest.add(append.pcm, append.video_frames)
        if timing.lateness_ms is not None:
            self.lateness.add(timing.lateness_ms)
        if row["unit_kind"] is not None:
            self.unit_counts[row["unit_kind"]] += 1
        return row

    def add_commit(
        self,
        event_id: str,
        timing: SendTiming,
        *,
        final: bool = True,
        response_create: bool | None = None,
    ) -> dict[str, Any]:
        """Record one sent commit (acknowledged later by `observe`)."""
        row = commit_row(
            len(self.commits),
            event_id,
            timing,
            after_append_index=self._last_append_index(),
            final=final,
            response_create=response_create,
        )
        self.commits.append(row)
        self._rows[event_id] = row
        return row

    def add_server_commit(
        self, *, audio_end_ms: int | None, received_offset_ms: float | None, units_closed: int
    ) -> dict[str, Any]:
        """Record a commit the server made (server VAD) and how many units it closed early.

        Kept as `server_commits` (written only when there are some): a commit inside a unit
        re-anchors the grid, so the next `unit_index` skips the closed residual.
        """
        row = server_commit_row(
            after_append_index=self._last_append_index(),
            audio_end_ms=audio_end_ms,
            received_offset_ms=received_offset_ms,
            units_closed=units_closed,
        )
        self.server_commits.append(row)
        return row

    def add_new_session(
        self,
        *,
        previous_session_id: str | None,
        session_id: str | None,
        audio_start_ms: int,
        received_offset_ms: float | None,
        units_closed: int,
        lost_appends: int,
    ) -> dict[str, Any]:
        """Record a new session that replaced a lost one (a resume into a journal gap).

        Kept as `new_sessions` (written only when there are some): the input from
        `audio_start_ms` went to `session_id`, whose unit grid starts there; `lost_appends`
        were sent to the lost session and may never have been processed.
        """
        row = new_session_row(
            after_append_index=self._last_append_index(),
            previous_session_id=previous_session_id,
            session_id=session_id,
            audio_start_ms=audio_start_ms,
            received_offset_ms=received_offset_ms,
            units_closed=units_closed,
            lost_appends=lost_appends,
        )
        self.new_sessions.append(row)
        return row

    def add_reconnect(
        self,
        *,
        started_offset_ms: float,
        resumed_offset_ms: float | None,
        attempts: int,
        outcome: str,
        resent_appends: int = 0,
    ) -> dict[str, Any]:
        """Record one reconnection (`outcome`: resumed, resync_required or failed)."""
        row = reconnect_row(
            started_offset_ms=started_offset_ms,
            resumed_offset_ms=resumed_offset_ms,
            attempts=attempts,
            outcome=outcome,
            resent_appends=resent_appends,
        )
        self.reconnects.append(row)
        return row

    # --- output ---

    def _offset(self, t: float) -> float:
        assert self.clock is not None
        return self.clock.offset_ms(t)

    def delivered_appends(self) -> list[dict[str, Any]]:
        """The append rows with what became of each: `written`, `acknowledged_offset_ms`."""
        started = self.clock is not None and self.clock.started
        offset = self._offset if started else None
        return delivered(self.appends, self.deliveries, offset, appends=True)

    def delivered_commits(self) -> list[dict[str, Any]]:
        """The commit rows with `written`."""
        return delivered(self.commits, self.deliveries, None, appends=False)

    def totals(self, appends: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """Counts, audio and lateness percentiles summarising the rows.

        `appends` counts every append handed to the session, `written` those written to a
        socket, `acknowledged` those the server confirmed; lateness is of the written ones.
        """
        rows = self.delivered_appends() if appends is None else appends
        return timeline_totals(
            appends=self.appends,
            rows=rows,
            commits=len(self.commits),
            lateness=self.lateness,
            pacing=self.pacing,
            unit_counts=self.unit_counts,
            digest=self.digest,
        )

    def to_dict(self) -> dict[str, Any]:
        """The whole document, in §10 field order (`server_commits` only when there are some)."""
        appends = self.delivered_appends()
        commits = self.delivered_commits()
        return timeline_document(
            pacing=self.pacing,
            session=self.session,
            input_format=self.input_format,
            unit_grid=self.unit_grid or default_unit_grid(),
            chunk_ms=self.chunk_ms,
            chunk_ms_requested=self.chunk_ms_requested,
            media_origin_ms=self.media_origin_ms,
            tail_silence_ms=self.tail_silence_ms,
            soundtrack_policy=self.soundtrack_policy,
            audio_source=self.audio_source,
            video=self.video,
            sliding_window=self.sliding_window,
            appends=appends,
            commits=commits,
            reconnects=self.reconnects,
            totals=self.totals(appends),
            server_commits=self.server_commits,
            new_sessions=self.new_sessions,
        )

    def render(self) -> str:
        """The file's text (JSON) as the timeline stands now."""
        return render_document(self.to_dict())

    def write(self, path: str | os.PathLike[str] | None = None, *, text: str | None = None) -> Path:
        """Write atomically (temporary file in the same directory, then rename).

        `text` (from `render`) lets the file I/O run in another thread from a snapshot.
        """
        target = timeline_target(path, self.path)
        if text is None:
            text = self.render()
        write_text_atomic(target, text)
        return target

    def write_best_effort(self, path: str | os.PathLike[str] | None = None) -> Path | None:
        """`write`, swallowing any failure (for interrupted runs); the path written or None."""
        try:
            return self.write(path)
        except Exception:
            return None
