"""`SessionRun`: one session connected, sent from its source, heard, ended and recorded."""

from __future__ import annotations

import asyncio
import time

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.analysis.timing import TimingWatch
from duplex_client.bundle.payloads import PayloadKeeper
from duplex_client.bundle.thumbnails import ThumbnailWriter
from duplex_client.bundle.writer import RunBundle, session_document, write_json_atomic
from duplex_client.client.resume import ReconnectReport
from duplex_client.client.streaming import StreamResult
from duplex_client.client.transport import redact_url
from duplex_client.client.websocket import DuplexClient
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.timeline import InputTimeline
from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.protocol.errors import DuplexClientError, DuplexSessionClosedError
from duplex_client.run.listening import RunListening
from duplex_client.run.options import DUPLEX, RunOptions
from duplex_client.run.prepare import PreparedRun
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import EXIT_FAILED, EXIT_USAGE, RunResult, stop_status
from duplex_client.run.session_run.ending import finish_turn, note_chunk
from duplex_client.run.session_run.record import finish, finish_regardless
from duplex_client.run.sources import Source, SourceLink
from duplex_client.run.sources.files import plan_cache
from duplex_client.run.tools import install_answers
from duplex_client.run.watch import LiveFigures, SessionActivity
from duplex_client.usage import UsageError

#: The inputs whose send lateness measures the client's pacing (a live device's blocks are
#: late by their capture, which says nothing of the pacing).
PACED_INPUTS = frozenset({"files", "given"})


class SessionRun:
    """One session: connect, send from the source, finish the turn, close, record."""

    def __init__(
        self,
        url: str,
        options: RunOptions,
        prepared: PreparedRun,
        source: Source,
        bundle: RunBundle,
        progress: RunProgress | None = None,
        annotations: list[SpeechSegment] | None = None,
    ) -> None:
        self.options = options
        self.source = source
        self.bundle = bundle
        self.progress = progress or RunProgress(figures=False)
        self.model = options.model_name
        config = prepared.config
        self.clock = MediaClock("realtime" if options.realtime else "asap")
        self.client = DuplexClient(
            url,
            model=self.model,
            config=config,
            api_key=options.api_key,
            handshake_timeout=options.handshake_timeout_s,
            reconnect=options.reconnect_policy(),
            # Real time: acks carry what the listener heard; asap has no listener.
            ack_policy="manual" if options.realtime else "received",
            # `auto` is resolved by `run_session`; unresolved, it is the fallback, duplex
            dialect=DUPLEX if options.dialect == AUTO else options.dialect,
            dialect_grid_ms=options.dialect_grid_ms(),
        )
        install_answers(self.client, prepared.tool_results)
        self.client.add_reconnect_listener(self._reconnected)
        output = source.output(options, self.clock, config.output_sample_rate_hz)
        self.listening = RunListening(
            self.client,
            self.clock,
            bundle.dir,
            output,
            annotations=annotations,
            speech_cache=plan_cache(options, source.inputs),
        )
        self.timeline = InputTimeline(
            model=self.model, url=self.client.url, path=bundle.layout.timeline
        )
        self.timeline.set_sliding_window(config.extra_body)
        self.timeline.deliveries = self.client.input_ledger  # what really left, and was confirmed
        self.activity = SessionActivity()
        self.figures = LiveFigures(self.progress, self.timeline, self.client, self.activity)
        self.stream_result: StreamResult | None = None
        self.commit_at: float | None = None
        self.keeper = PayloadKeeper(bundle.dir) if options.keep_payloads else None
        self.thumbnails = ThumbnailWriter(bundle.dir) if options.thumbnails else None
        paced = options.realtime and source.inputs in PACED_INPUTS
        self.timing = TimingWatch(options.max_lateness_ms) if paced else None

    async def run(self) -> RunResult:
        """Run the session and always write `result.json` (a refusal is raised after it)."""
        started = time.monotonic()
        result = RunResult(ok=False, status="failed", exit_code=EXIT_FAILED)
        refused: UsageError | None = None
        result.started_at = self.bundle.started_at
        result.model, result.url = self.model, redact_url(self.client.url)
        result.dialect = self.client.dialect
        result.bundle_dir = self.bundle.dir
        self.bundle.attach(self.client, clock=self.clock, heard_start=self.listening.heard_start_ms)
        self.client.add_listener(self.activity.on_event)
        # Nothing shows the figures (quiet, JSON, a library call): nothing computes them.
        ticker = asyncio.create_task(self._tick(started)) if self.progress.figures else None
        try:
            await self._session()
            result.status, result.ok = "ok", True
        except asyncio.CancelledError:
            result.status, result.exit_code = stop_status(self.progress.stop_reason)
            result.error = result.status
            raise
        except UsageError as exc:  # the opened session refuses an option: nothing was sent
            result.error, result.exit_code, refused = str(exc), EXIT_USAGE, exc
        except DuplexClientError as exc:  # `DeviceError` included: exit 2, as a usage error
            result.error = self._explain(exc)
            if _is_device_error(exc):
                result.exit_code = EXIT_USAGE
        except Exception as exc:  # unforeseen: raised on, but never a failed result saying nothing
            result.error = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if ticker is not None:
                ticker.cancel()
            # A second stop (Ctrl-C twice) waits for the bundle: it is never left half written.
            await finish_regardless(finish(self, result, started))
        if refused is not None:
            raise refused
        return result

    def _explain(self, exc: DuplexClientError) -> str:
        """The failure, with the server's own errors when it ended the session."""
        message = str(exc)
        said = [f"{e.code}: {e.error.message}" for e in self.client.errors if e.code]
        if said and isinstance(exc, DuplexSessionClosedError):
            message += f"; server reported {'; '.join(said)}"
        return message

    async def _session(self) -> None:
        client = self.client
        self.progress.phase = "connecting"
        await client.connect()
        if client.warmup_held_s:
            held = f"{client.warmup_held_s:g}"
            self.progress.warn(f"the server held the connection {held} s first (warming up)")
        self.listening.start()
        self.timeline.set_session(session_id=client.session_id)
        # taken now, written (fsync'd) off the loop, where other sessions may be pacing
        doc = session_document(client, client.url, self.source.input_facts)
        await asyncio.to_thread(write_json_atomic, self.bundle.layout.session, doc)
        self.progress.phase = "streaming"
        link = SourceLink(
            client, self.clock, self.timeline, self._sent, self.listening, self.progress
        )
        self.stream_result = await self.source.send(link)
        if self.stream_result is None:  # the source ended the input itself (live: quit)
            return
        note_chunk(self)
        self.progress.phase = "finishing"
        await self._finish_turn(self.stream_result)
        self.progress.phase = "closing"

    def _reconnected(self, report: ReconnectReport) -> None:
        """Say so when a journal gap replaced the session (the record is never seamless)."""
        if report.outcome == "new_session":
            self.progress.warn(report.describe())

    def _sent(self, append: PlannedAppend) -> None:
        """Every sent append: into the listener's record, the kept payloads, the thumbnails."""
        self.listening.sent.record(append)
        if self.keeper is not None:
            self.keeper.record(append)
        if self.thumbnails is not None:
            self.thumbnails.record(append)  # queued: decoded and written in its worker
        if self.timing is not None:
            lost = self.timing.check(self.timeline.lateness, append.media_end_ms)
            if lost is not None:  # once per stream: the display (an eval's log), the result
                self.progress.warn(lost)

    async def _finish_turn(self, sr: StreamResult) -> None:
        """Wait for the commit, the post-commit decision when one is due, and drain responses."""
        await finish_turn(self, sr)

    async def _tick(self, started: float) -> None:
        """Refresh the live figures ten times a second (a display's rate, not a wait)."""
        while True:
            self.figures.refresh(time.monotonic() - started)
            await asyncio.sleep(0.1)


def _is_device_error(exc: BaseException) -> bool:
    """A missing or failing device (`media.devices`), which exits 2 like a usage error."""
    from duplex_client.media.devices.lookup import DeviceError

    return isinstance(exc, DeviceError)
