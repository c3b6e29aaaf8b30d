"""`input_timeline.json`: the record of every append and commit sent (protocol.md §10)."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from duplex_client.files import write_text_atomic
from duplex_client.framing.clock import MediaClock, Pacing, SendTiming
from duplex_client.framing.delivered import Deliveries, delivered
from duplex_client.framing.digest import SentDigest, audio_sha256
from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.redact import (
    SLIDING_WINDOW_KEYS,
    audio_source_facts,
    safe_scalar,
    safe_url,
    video_facts,
)
from duplex_client.framing.sources import INPUT_SAMPLE_RATE_HZ, FrameGroup
from duplex_client.framing.stats import SortedSample
from duplex_client.framing.units import UnitGrid
from duplex_client.protocol.capabilities import Capabilities, UnitKind
from duplex_client.protocol.server_events import (
    ErrorEvent,
    InputAudioBufferCommitted,
    ServerEvent,
)

#: The version of the document's format, its `schema_version` field (and so the run bundle's:
#: `bundle.layout.SCHEMA_VERSION`). Raise it when any bundle file changes incompatibly.
SCHEMA_VERSION = 1
#: The document's file name in a run bundle (`bundle.layout.TIMELINE_FILE`).
TIMELINE_FILENAME = "input_timeline.json"


def frame_records(group: FrameGroup | None) -> list[dict[str, Any]]:
    """Per-image facts for a row: role, source pts, held, size and sha256 (never the bytes)."""
    if group is None:
        return []
    out: list[dict[str, Any]] = []
    for role, image in zip(("base", "composite"), group.images, strict=False):
        pts = list(image.pts_ms) if isinstance(image.pts_ms, tuple) else image.pts_ms
        record: dict[str, Any] = {
            "role": role,
            "source_pts_ms": pts,
            "held": group.held,
            "bytes": len(image.data),
            "sha256": hashlib.sha256(image.data).hexdigest(),
        }
        if image.width and image.height:
            record["width"], record["height"] = image.width, image.height
        out.append(record)
    return out


class InputTimeline:
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
        self.session = {
            "session_id": session_id or self.session.get("session_id"),
            "model": model or self.session.get("model"),
            "url": safe_url(url) or self.session.get("url"),
        }

    def set_sliding_window(self, extra_body: Mapping[str, Any] | None) -> None:
        """The sliding-window knobs exactly as sent in `extra_body` (other keys ignored)."""
        body = extra_body or {}
        self.sliding_window = {k: safe_scalar(body[k]) for k in SLIDING_WINDOW_KEYS if k in body}

    def set_unit_grid(
        self, grid: UnitGrid, caps: Capabilities | None = None, *, source: str | None = None
    ) -> None:
        """The grid the framer used, where it came from and the kind/modality facts."""
        caps = caps or Capabilities()
        if source is None:
            advertised = "first_unit_ms" in caps.raw or "chunk_period_ms" in caps.raw
            source = "capabilities" if advertised else "default"
        self.unit_grid = {
            **grid.describe(),
            "source": source,
            "input_unit_kinds": [k.value for k in UnitKind if k in caps.input_unit_kinds],
            "required_input_modalities": list(caps.required_input_modalities),
        }

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
        grid = self.unit_grid or UnitGrid().describe()
        longest = max(int(grid["first_unit_ms"]), int(grid["chunk_period_ms"]))
        return min(chunk_ms, longest)

    # --- rows ---

    def _offset_now(self) -> float | None:
        if self.clock is None or not self.clock.started:
            return None
        return self.clock.offset_ms()

    def add_append(
        self, append: PlannedAppend, event_id: str, timing: SendTiming
    ) -> dict[str, Any]:
        """Record one sent append."""
        row: dict[str, Any] = {
            "index": len(self.appends),
            "event_id": event_id,
            "segment": append.segment,
            "unit_kind": None if append.unit_kind is None else append.unit_kind.value,
            "unit_index": append.unit_index,
            "media_start_ms": append.media_start_ms,
            "media_end_ms": append.media_end_ms,
            "duration_ms": append.duration_ms,
            "audio_end_ms": append.audio_end_ms,
            "is_speech": append.is_speech,
            "audio_bytes": len(append.pcm),
            "audio_sha256": audio_sha256(append.pcm),
            "scheduled_offset_ms": timing.scheduled_offset_ms,
            "sent_offset_ms": timing.sent_offset_ms,
            "lateness_ms": timing.lateness_ms,
            "written": True,
            "acknowledged_offset_ms": None,
            "fallback": append.fallback,
            "resends": [],
            "error_code": None,
            "frames": frame_records(append.frames),
        }
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
        row: dict[str, Any] = {
            "index": len(self.commits),
            "event_id": event_id,
            "after_append_index": self.appends[-1]["index"] if self.appends else None,
            "scheduled_offset_ms": timing.scheduled_offset_ms,
            "sent_offset_ms": timing.sent_offset_ms,
            "written": True,
            "final": final,
            "response_create": response_create,
            "error_code": None,
            "acknowledged": None,
        }
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
        row = {
            "after_append_index": self.appends[-1]["index"] if self.appends else None,
            "audio_end_ms": audio_end_ms,
            "received_offset_ms": None
            if received_offset_ms is None
            else round(received_offset_ms, 3),
            "units_closed": units_closed,
        }
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
        row = {
            "after_append_index": self.appends[-1]["index"] if self.appends else None,
            "previous_session_id": previous_session_id,
            "session_id": session_id,
            "audio_start_ms": audio_start_ms,
            "received_offset_ms": None
            if received_offset_ms is None
            else round(received_offset_ms, 3),
            "units_closed": units_closed,
            "lost_appends": lost_appends,
        }
        self.new_sessions.append(row)
        return row

    def add_resend(self, event_id: str, sent_offset_ms: float, attempt: int) -> bool:
        """Note a resend of an append after a resume; False if the id is unknown."""
        row = self._rows.get(event_id)
        if row is None or "resends" not in row:
            return False
        row["resends"].append({"sent_offset_ms": round(sent_offset_ms, 3), "attempt": attempt})
        return True

    def set_sent_offset(self, event_id: str, sent_offset_ms: float) -> bool:
        """A row's event went out later than first recorded (held over a reconnect).

        Its `sent_offset_ms` becomes the new time and an append's `lateness_ms` follows;
        False if no row has that id.
        """
        row = self._rows.get(event_id)
        if row is None:
            return False
        row["sent_offset_ms"] = sent_offset_ms
        scheduled = row.get("scheduled_offset_ms")
        if "lateness_ms" in row and scheduled is not None:
            late = round(max(0.0, sent_offset_ms - scheduled), 3)
            self.lateness.replace(row["lateness_ms"], late)
            row["lateness_ms"] = late
        return True

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
        row = {
            "started_offset_ms": round(started_offset_ms, 3),
            "resumed_offset_ms": None if resumed_offset_ms is None else round(resumed_offset_ms, 3),
            "attempts": attempts,
            "outcome": outcome,
            "resent_appends": resent_appends,
        }
        self.reconnects.append(row)
        return row

    def acknowledge(
        self,
        client_event_id: str | None,
        *,
        received_offset_ms: float | None,
        audio_end_ms: int | None,
        no_response: bool = False,
    ) -> bool:
        """Fill a commit row's acknowledgement; False if no commit row has that id."""
        row = self._rows.get(client_event_id or "")
        if row is None or "acknowledged" not in row:
            return False
        row["acknowledged"] = {
            "received_offset_ms": None
            if received_offset_ms is None
            else round(received_offset_ms, 3),
            "audio_end_ms": audio_end_ms,
            "no_response": no_response,
        }
        return True

    def record_error(self, event_id: str | None, code: str | None) -> bool:
        """Fill `error_code` on the append or commit row with that `event_id`."""
        row = self._rows.get(event_id or "")
        if row is None:
            return False
        row["error_code"] = code
        return True

    def observe(self, event: ServerEvent, received_offset_ms: float | None = None) -> bool:
        """Apply a server event to the rows (commit acknowledgements, echoed errors)."""
        when = self._offset_now() if received_offset_ms is None else received_offset_ms
        if isinstance(event, InputAudioBufferCommitted):
            return self.acknowledge(
                event.client_event_id,
                received_offset_ms=when,
                audio_end_ms=event.audio_end_ms,
                no_response=event.no_response,
            )
        if isinstance(event, ErrorEvent):
            return self.record_error(event.error.event_id, event.code)
        return False

    def on_event(self, event: ServerEvent, received_at: float) -> None:
        """An event listener: `received_at` is a reading of the media clock's time source."""
        offset = (
            None
            if self.clock is None or not self.clock.started
            else self.clock.offset_ms(received_at)
        )
        self.observe(event, offset)

    def listen_to(self, client: Any) -> None:
        """Register `on_event` with a client's `add_listener` once per client."""
        if id(client) not in self._listening:
            self._listening.add(id(client))
            client.add_listener(self.on_event)

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
        frames = {"base": 0, "composite": 0}
        for row in self.appends:
            for image in row["frames"]:
                frames[image["role"]] += 1
        audio_ms = 0
        if self.appends:
            first = self.appends[0]
            audio_ms = self.appends[-1]["audio_end_ms"] - (
                first["audio_end_ms"] - first["duration_ms"]
            )
        late = self.lateness
        if any(not r["written"] for r in rows):
            late = SortedSample()
            for r in rows:
                if r.get("lateness_ms") is not None:
                    late.add(r["lateness_ms"])
        lateness = None
        if self.pacing == "realtime" and late.max is not None:
            lateness = {
                "p50": round(late.percentile(0.5), 3),
                "p99": round(late.percentile(0.99), 3),
                "max": round(late.max, 3),
            }
        return {
            "appends": len(self.appends),
            "written": sum(1 for r in rows if r["written"]),
            "written_audio_ms": sum(r["duration_ms"] for r in rows if r["written"]),
            "acknowledged": sum(1 for r in rows if r.get("acknowledged_offset_ms") is not None),
            "audio_ms": audio_ms,
            "units": dict(self.unit_counts),
            "fallback_units": sum(1 for r in self.appends if r["fallback"] and r["unit_kind"]),
            "frames": frames,
            "commits": len(self.commits),
            "resends": sum(len(r["resends"]) for r in self.appends),
            "lateness_ms": lateness,
            "sent_sha256": self.digest.hexdigest(),
        }

    def to_dict(self) -> dict[str, Any]:
        """The whole document, in §10 field order (`server_commits` only when there are some)."""
        appends = self.delivered_appends()
        doc = {
            "schema_version": SCHEMA_VERSION,
            "clock": {
                "source": "client_monotonic",
                "origin": "stream_start",
                "pacing": self.pacing,
            },
            "session": dict(self.session),
            "input_format": dict(self.input_format),
            "unit_grid": self.unit_grid or {**UnitGrid().describe(), "source": "default"},
            "chunk_ms": self.chunk_ms,
            **(
                {"chunk_ms_requested": self.chunk_ms_requested}
                if self.chunk_ms_requested is not None
                else {}
            ),
            "media_origin_ms": self.media_origin_ms,
            "tail_silence_ms": self.tail_silence_ms,
            "soundtrack_policy": self.soundtrack_policy,
            "audio_source": self.audio_source,
            "video": self.video,
            "sliding_window": dict(self.sliding_window),
            "appends": appends,
            "commits": self.delivered_commits(),
            "reconnects": [dict(r) for r in self.reconnects],
            "totals": self.totals(appends),
        }
        if self.server_commits:
            doc["server_commits"] = [dict(r) for r in self.server_commits]
        if self.new_sessions:
            doc["new_sessions"] = [dict(r) for r in self.new_sessions]
        return doc

    def render(self) -> str:
        """The file's text (JSON) as the timeline stands now."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n"

    def write(self, path: str | os.PathLike[str] | None = None, *, text: str | None = None) -> Path:
        """Write atomically (temporary file in the same directory, then rename).

        `text` (from `render`) lets the file I/O run in another thread from a snapshot.
        """
        target = Path(path) if path is not None else self.path
        if target is None:
            raise ValueError("no path to write the timeline to")
        if target.is_dir():
            target = target / TIMELINE_FILENAME
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
