"""One session end to end, whichever way in: `run_session(url, options, source)`.

The one pipeline of every run: check the options, name the model, load what they name,
open the source, prepare the bundle (everything that can be refused is refused before it
exists), start the embedded server when no URL is given, then `SessionRun`: connect, send
from the source, hear with its listener, finish the turn, close, record and judge.
`stream`, `live`, `eval` and `replay` differ only in the source they bring.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.analysis.timing import TimingWatch
from duplex_client.bundle.payloads import PayloadKeeper
from duplex_client.bundle.thumbnails import ThumbnailWriter
from duplex_client.bundle.writer import RunBundle
from duplex_client.client.resume import ReconnectReport
from duplex_client.client.streaming import StreamResult
from duplex_client.client.transport import check_url, redact_url
from duplex_client.client.websocket import DuplexClient
from duplex_client.families import embedded_profile as family_profile
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.plan import PlannedAppend
from duplex_client.framing.timeline import InputTimeline
from duplex_client.framing.units import UnitGrid
from duplex_client.media.errors import collect_media_warnings
from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.protocol.errors import DuplexClientError, DuplexSessionClosedError
from duplex_client.run.checks import check_url_options
from duplex_client.run.dialect import with_dialect
from duplex_client.run.embedded import embedded_server
from duplex_client.run.listening import RunListening
from duplex_client.run.options import DEFAULT_CHUNK_MS, DUPLEX, RunOptions, default_run_dir
from duplex_client.run.prepare import PreparedRun, prepare, user_speech
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import (
    EXIT_FAILED,
    EXIT_USAGE,
    RunResult,
    judge,
    judge_timing,
    record_listening,
    record_session,
    stop_status,
)
from duplex_client.run.sources import Source, SourceLink
from duplex_client.run.sources.files import plan_cache
from duplex_client.run.tools import function_call_turns, install_answers, merge_turns
from duplex_client.run.watch import LiveFigures, SessionActivity, finish_stream, settle_turn
from duplex_client.usage import UsageError

#: The inputs whose send lateness measures the client's pacing (a live device's blocks are
#: late by their capture, which says nothing of the pacing).
PACED_INPUTS = frozenset({"files", "given"})


async def run_session(
    url: str | None,
    options: RunOptions,
    source: Source,
    *,
    progress: RunProgress | None = None,
) -> RunResult:
    """Run one session from `source` with `options`; the bundle is always finished.

    Never raises for a failed session (the result says what happened). Bad options, input
    or devices raise (`UsageError`, `MediaError`, `DeviceError`) before anything is sent
    or written; so does an option the opened session refuses (a turn mode it cannot
    honour, a replay's unit grid), after the bundle records the refusal (exit code 2).
    """
    options.validate(inputs=source.inputs)
    progress = progress or RunProgress(figures=False)  # nothing displays it
    if url is not None:  # an empty one is refused: it must not mean the embedded server
        check_url(url)
        check_url_options(options)
        options = await with_listed_model(url, options, progress.warn)
    if options.dialect == AUTO:  # the wire decides the session built, and what it carries
        options = await with_dialect(url, options, progress.warn)
        options.validate(inputs=source.inputs)
    prepared = prepare(options, inputs=source.inputs)
    with collect_media_warnings(lambda warning: progress.warn(str(warning))):
        try:
            await source.open(options, progress)
            progress.media_total_ms = source.media_ms
            annotations = user_speech(options, source.media_ms)
            bundle = open_bundle(options.output_dir)
            progress.bundle_dir = bundle.dir
            async with target_url(url, options) as target:
                run = SessionRun(target, options, prepared, source, bundle, progress, annotations)
                return await run.run()
        finally:
            await source.close()


async def with_listed_model(
    url: str, options: RunOptions, note: Callable[[str], None]
) -> RunOptions:
    """Without `model`, the one model the server lists (told to `note`), else the preset's."""
    from duplex_client.client.http import DEFAULT_HTTP_TIMEOUT_S, with_model
    from duplex_client.families import default_model

    timeout_s = min(DEFAULT_HTTP_TIMEOUT_S, options.handshake_timeout_s / 2)
    default = default_model(options.preset_name())
    return await with_model(url, options, default=default, note=note, timeout_s=timeout_s)


def embedded_profile(options: RunOptions) -> str:
    """The reference server profile for the options' preset (the default family's if none)."""
    return family_profile(options.preset_name())


@contextlib.asynccontextmanager
async def target_url(url: str | None, options: RunOptions) -> AsyncIterator[str]:
    """The URL to run against: `url`, or the embedded reference server started for this run.

    The embedded server runs in a child process for every way in, so the speech engine's
    CPU bursts (ASR and TTS hold the GIL for up to a few hundred ms) never delay the
    client's media clock or a live microphone's capture.
    """
    if url is not None:
        yield url
        return
    async with embedded_server(
        profile=embedded_profile(options),
        require_audio=options.require_audio,
        script=options.server_script,
        dialect=options.dialect,
    ) as server:
        yield server


def open_bundle(output_dir: Path | None) -> RunBundle:
    """The run bundle in `output_dir` (default `runs/<timestamp>`); unwritable: `UsageError`."""
    out_dir = output_dir or default_run_dir()
    try:
        return RunBundle(Path(out_dir))
    except OSError as exc:
        raise UsageError(
            f"{out_dir}: cannot write the output directory ({exc})", param="output_dir", keywords=()
        ) from None


async def finish_regardless(work: Awaitable[None]) -> None:
    """Run `work` to its end even when this task is cancelled meanwhile; a cancel that came
    is raised once it is done (the work's own failure is raised as it is)."""
    task = asyncio.ensure_future(work)
    cancelled = False
    while True:
        try:
            await asyncio.shield(task)
            break
        except asyncio.CancelledError:
            if task.done():
                raise
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError


def _dropped(reason: str | None) -> bool:
    """Whether a session ended because its socket dropped."""
    return reason is not None and reason.startswith("disconnect")


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
            await finish_regardless(self._finish(result, started))
        if refused is not None:
            raise refused
        return result

    async def _finish(self, result: RunResult, started: float) -> None:
        """Close, judge, measure and write the last files of the bundle."""
        await self._close()
        self._complete(result, started)
        await self._measure(result)
        result.warnings = list(self.progress.warnings)  # media, model, listening notes
        # fsync'd file writes: off the loop, where other sessions may be pacing
        await asyncio.to_thread(self._write_final, result.to_dict())

    def _write_final(self, doc: dict[str, Any]) -> None:
        """The last files: session.json (final attachment generation), then result.json."""
        if self.client.session_id is not None:
            with contextlib.suppress(OSError):
                self.bundle.write_session(
                    self.client, url=self.client.url, input_facts=self.source.input_facts
                )
        self.bundle.finish(doc)

    async def _measure(self, result: RunResult) -> None:
        """Heard files, turns and metrics; a failure here is reported, never lost silently."""
        try:
            await record_listening(
                result, self.client, self.timeline, self.listening, self.progress.warn
            )
        except Exception as exc:  # the record of the run must still be written
            result.listening_error = f"{type(exc).__name__}: {exc}"
            self.progress.warn(f"turn metrics not measured: {result.listening_error}")
        records = self.client.function_call_records
        result.function_calls = [r.to_dict() for r in records]
        if result.turns is not None:
            result.turns = merge_turns(result.turns, function_call_turns(records, self.clock))

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
        self.bundle.write_session(client, url=client.url, input_facts=self.source.input_facts)
        self.progress.phase = "streaming"
        link = SourceLink(
            client, self.clock, self.timeline, self._sent, self.listening, self.progress
        )
        self.stream_result = await self.source.send(link)
        if self.stream_result is None:  # the source ended the input itself (live: quit)
            return
        self._note_chunk()
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
        """Wait for the commit, the post-commit decision when one is due, and drain responses.

        Woken by the session's events (`settle_turn`), never by polling.
        """
        client, opts = self.client, self.options
        if sr.commit_event_id is None:
            if not client.takes_commits:
                await self._finish_stream()
            return
        # From the send (the run's clock is monotonic): a decision may arrive before `stream`
        # returns, since the timeline is written off the loop.
        sent = sr.commit_sent_at
        self.commit_at = sent if sent is not None else time.monotonic()
        committed = await client.wait_committed(sr.commit_event_id, timeout=opts.timeout_s)
        # the manual lane (qwen3-turn, push-to-talk) asks for its answer; server VAD does not
        config = client.config
        manual = opts.manual_commit or not (config.auto_response or config.turn_detection)
        if manual:
            await client.create_response()
        rate = client.input_pcm_format.sample_rate_hz
        grid = UnitGrid.from_capabilities(client.capabilities, sample_rate_hz=rate)
        samples = client.audio_samples
        residual = samples > grid.start_samples(grid.unit_at_sample(samples))
        active = client.tracker.active
        due = residual or manual or committed.no_response or active is not None
        deadline = time.monotonic() + opts.timeout_s
        settled = await settle_turn(
            client,
            self.activity,
            since=self.commit_at,
            due=due,
            settle_s=opts.settle_s,
            deadline=deadline,
            timeout_s=opts.timeout_s,
        )
        if settled:  # what is still playing is heard to its end (the acks say so) first
            await self.listening.drain(max(0.0, deadline - time.monotonic()))

    async def _finish_stream(self) -> None:
        """No commit ends the input: a continuous stream drains at its close; hear it out."""
        opts = self.options
        left = await finish_stream(
            self.client, self.activity, settle_s=opts.settle_s, timeout_s=opts.timeout_s
        )
        end = self.client.stream_end
        if end is not None and not end.drained:
            said = f"{end.status} ({end.reason})" if end.status else "no response"
            self.progress.warn(f"the continuous stream did not drain at session.close: {said}")
        if left is not None:
            await self.listening.drain(left)

    def _note_chunk(self) -> None:
        """Say so when the server's units are shorter than `chunk_ms` (appends were cut)."""
        asked, used = self.timeline.chunk_ms_requested, self.timeline.chunk_ms
        # the default (200 ms) cut to a shorter grid's units (80 ms) is expected: no note
        if asked is not None and used is not None and asked != DEFAULT_CHUNK_MS:
            message = (
                f"chunk_ms {asked} is longer than the server's units: appends were cut at "
                f"{used} ms (input_timeline.json records chunk_ms {used})"
            )
            self.progress.warn(message)

    async def _close(self) -> None:
        if self.keeper is not None:
            self.keeper.close()
        await self.listening.stop()
        with contextlib.suppress(Exception):
            await asyncio.shield(self.client.close())
        # Acks and errors heard since the stream's own write; rendered here, written off the loop
        # (with the thumbnails still queued).
        text = self.timeline.render()
        await asyncio.shield(asyncio.to_thread(self._write_timeline, text))
        if self.thumbnails is not None:
            for warning in self.thumbnails.warnings:
                self.progress.warn(warning)

    def _write_timeline(self, text: str) -> None:
        with contextlib.suppress(Exception):
            self.timeline.write(text=text)
        if self.thumbnails is not None:
            self.thumbnails.close()

    async def _tick(self, started: float) -> None:
        """Refresh the live figures ten times a second (a display's rate, not a wait)."""
        while True:
            self.figures.refresh(time.monotonic() - started)
            await asyncio.sleep(0.1)

    def _complete(self, result: RunResult, started: float) -> None:
        client = self.client
        record_session(result, client, self.timeline, self.bundle, started)
        self.source.complete(result)
        if self.timing is not None:
            judge_timing(result, self.timeline, self.options.max_lateness_ms)
        judge(
            result,
            client,
            # a dialect has no decisions: silence is its listen (docs/dialects.md)
            need_decision=self.source.needs_decision and client.dialect == "duplex",
            benign=self.source.benign_errors,
        )
        if result.error and not self.options.reconnect and _dropped(client.closed_reason):
            result.error += " (the connection dropped and reconnection is off: --no-reconnect)"


def _is_device_error(exc: BaseException) -> bool:
    """A missing or failing device (`media.devices`), which exits 2 like a usage error."""
    from duplex_client.media.devices.lookup import DeviceError

    return isinstance(exc, DeviceError)
