"""`duplex-cli live` end to end: options, devices, embedded server, session, run bundle.

`run_live(url, LiveOptions(...))` connects (or starts the bundled reference server), runs a
`LiveSession` until quit / the time limit, and writes the same bundle as `stream` (with
`segment: live` timeline rows). Device modules are injectable through `LiveDevices`.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import statistics
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplex_client.bundle.writer import RunBundle
from duplex_client.client.config import SessionConfig
from duplex_client.client.streaming import reconnect_recorder
from duplex_client.client.transport import check_url, redact_url
from duplex_client.client.websocket import DuplexClient
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.timeline import InputTimeline
from duplex_client.media.devices.camera import Camera
from duplex_client.media.devices.capture import AudioCapture
from duplex_client.media.devices.filemic import FileMicrophone
from duplex_client.media.devices.lookup import (
    DeviceError,
    camera_source,
    load_sounddevice,
    resolve_audio_device,
)
from duplex_client.media.devices.mic import Microphone
from duplex_client.media.devices.player import Player
from duplex_client.presets import PROFILE_PRESETS, preset_model
from duplex_client.protocol.errors import DuplexClientError
from duplex_client.run.controls import LiveControls, PushToTalk, parse_schedule
from duplex_client.run.listening import RunListening
from duplex_client.run.live_options import LiveOptions, LiveUsageError
from duplex_client.run.progress import LiveProgress
from duplex_client.run.result import (
    EXIT_FAILED,
    EXIT_HANGUP,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    EXIT_USAGE,
    RunResult,
    judge,
    record_listening,
    record_session,
)
from duplex_client.run.sources.devices import LiveSession

#: Request-local errors that live races can cause without harm; listed, not failures.
BENIGN_ERRORS = frozenset({"playback_ack_too_late", "response_not_active"})
HEADPHONES = (
    "use headphones: a terminal has no echo canceller "
    "(--echo-gate stops the microphone while the assistant is audible)"
)
#: Exit codes of the stop reasons a caller puts in `LiveProgress.stop_reason`.
STOP_EXIT_CODES = {"terminated": EXIT_TERMINATED, "hangup": EXIT_HANGUP}
#: The one warning when file or silent input runs on a machine that cannot play.
NO_SPEAKER = "{what}: running without playback (nothing is played; acks say 0 ms)"


@dataclass(frozen=True, slots=True)
class LiveDevices:
    """Where devices come from: the `sounddevice` module and a `VideoCapture` factory.

    None means the real ones (imported when needed). Tests inject fakes here.
    """

    sounddevice: Any | None = None
    video_capture: Callable[[int | str], Any] | None = None


def embedded_profile(options: LiveOptions) -> str:
    """The reference server profile for the options (joyai only once it exists)."""
    from duplex_client.server.config import ServerConfig

    name = options.preset_name()
    if name in PROFILE_PRESETS and name != "joyai":
        return name
    if name == "joyai":
        try:
            ServerConfig(profile="joyai")
        except ValueError:
            if options.turn == "vad":
                raise LiveUsageError(
                    "the embedded server has no server VAD (joyai) yet: pass --url"
                ) from None
            return "minicpmo"
        return "joyai"
    return "minicpmo"


@contextlib.asynccontextmanager
async def target_url(url: str | None, options: LiveOptions, profile: str) -> AsyncIterator[str]:
    """`url`, or the bundled reference server started for this run."""
    if url:
        yield url
        return
    from duplex_client.server import ReferenceServer, Script

    script = Script.load(options.server_script) if options.server_script else None
    async with ReferenceServer(
        profile=profile, require_audio=options.require_audio, script=script
    ) as server:
        yield server.url


def open_mic(options: LiveOptions, devices: LiveDevices) -> tuple[AudioCapture, bool]:
    """The audio source for the options and whether it is a real input (not silence)."""
    if options.no_mic:
        return FileMicrophone.silence(), False
    if options.mic_file:
        return FileMicrophone(options.mic_file), True
    return Microphone(options.mic, sd=devices.sounddevice), True


def open_camera(options: LiveOptions, devices: LiveDevices) -> Camera | None:
    """The camera (device or file) for the options, or None."""
    if options.no_camera:
        return None
    source = options.camera_file if options.camera_file else camera_source(options.camera)
    return Camera(source, capture_factory=devices.video_capture)


@dataclass(frozen=True, slots=True)
class DeviceCheck:
    """What `preflight` found: the `sounddevice` module, whether to play, a warning."""

    sounddevice: Any | None
    playback: bool
    warning: str | None = None


def preflight(options: LiveOptions, devices: LiveDevices) -> DeviceCheck:
    """Fail before connecting when PortAudio or a chosen audio device is missing.

    A run without a real microphone (`--mic-file`, `--no-mic`) whose default speaker is
    missing (no output device, or no PortAudio at all) runs without playback, with one
    warning; a real microphone or a named `--speaker` keeps the error.
    """
    needs_input = not options.no_mic and not options.mic_file
    if not needs_input and options.no_playback:
        return DeviceCheck(None, False)
    may_skip_speaker = not needs_input and not options.speaker
    try:
        sd = devices.sounddevice if devices.sounddevice is not None else load_sounddevice()
    except DeviceError:
        if not may_skip_speaker:
            raise
        return DeviceCheck(None, False, NO_SPEAKER.format(what="PortAudio is not installed"))
    if needs_input:
        resolve_audio_device(sd, options.mic, "input")
    if options.no_playback:
        return DeviceCheck(sd, False)
    try:
        resolve_audio_device(sd, options.speaker, "output")
    except DeviceError:
        if not may_skip_speaker:
            raise
        return DeviceCheck(sd, False, NO_SPEAKER.format(what="no speaker (output device) found"))
    return DeviceCheck(sd, True)


async def run_live(
    url: str | None,
    options: LiveOptions,
    *,
    progress: LiveProgress | None = None,
    controls: LiveControls | None = None,
    devices: LiveDevices | None = None,
) -> RunResult:
    """Validate, check devices, prepare the bundle, then run the live session.

    Never raises for a failed session (the result says what happened); bad options raise
    `LiveUsageError`, missing devices `DeviceError`, before anything is sent (also options
    only the opened session refuses, e.g. `--turn ptt` where it takes no commits: the
    bundle's result.json then says so, with exit code 2).
    """
    options.validate()
    progress = progress or LiveProgress()
    if url:
        check_url(url)
        from duplex_client.client.http import with_model

        default = preset_model(options.preset_name())
        options = await with_model(url, options, default=default, note=progress.warn)
    elif options.model is None:
        options = dataclasses.replace(options, model=preset_model(options.preset_name()))
    profile = embedded_profile(options) if not url else options.preset_name()
    config = options.session_config(profile if not url and options.preset == "auto" else None)
    devices = devices or LiveDevices()
    check = preflight(options, devices)
    if check.warning is not None:
        progress.warn(check.warning)
    if not check.playback and not options.no_playback:
        options = dataclasses.replace(options, no_playback=True)
    devices = LiveDevices(sounddevice=check.sounddevice, video_capture=devices.video_capture)
    controls = controls or LiveControls(
        muted=options.start_muted,
        camera_on=not options.camera_off,
        ptt=PushToTalk(options.ptt_mode),
    )
    out_dir = options.output_dir or _default_dir()
    try:
        bundle = RunBundle(Path(out_dir))
    except OSError as exc:
        raise LiveUsageError(f"{out_dir}: cannot write the output directory ({exc})") from None
    async with target_url(url, options, profile) as target:
        run = _LiveRun(target, options, config, bundle, progress, controls, devices)
        return await run.run()


def _default_dir() -> Path:
    from duplex_client.run.stream import default_run_dir

    return default_run_dir()


class _LiveRun:
    """One live session: connect, run, close, record."""

    def __init__(
        self,
        url: str,
        options: LiveOptions,
        config: SessionConfig,
        bundle: RunBundle,
        progress: LiveProgress,
        controls: LiveControls,
        devices: LiveDevices,
    ) -> None:
        self.options = options
        self.bundle = bundle
        self.progress = progress
        self.controls = controls
        self.devices = devices
        # Played positions come from the player. Without one nothing is played: the acks
        # (before each commit of ours) say 0 ms, and history follows the server's policy
        # (docs/live.md, "Playback").
        self.client = DuplexClient(
            url,
            model=options.model,
            config=config,
            api_key=options.api_key,
            ack_policy="manual",
            reconnect=options.reconnect,
        )
        self.timeline = InputTimeline(
            model=options.model, url=self.client.url, path=bundle.layout.timeline
        )
        self.client.add_reconnect_listener(reconnect_recorder(self.timeline))
        self.timeline.set_sliding_window(config.extra_body)
        self.session: LiveSession | None = None
        self.clock = MediaClock("realtime")
        # What the listener heard is what the speaker played (its rendered blocks).
        self.listening = RunListening(self.client, self.clock, bundle.dir, virtual=False)

    def _build(self) -> LiveSession:
        o, p = self.options, self.progress
        mic, present = open_mic(o, self.devices)
        camera = open_camera(o, self.devices)
        player = None
        if not o.no_playback:
            player = Player(
                sd=self.devices.sounddevice,
                device=o.speaker,
                sample_rate_hz=self.client.config.output_sample_rate_hz,
                jitter_ms=o.jitter_ms,
            )
        p.turn, p.ptt_mode, p.echo_gate = o.turn, o.ptt_mode, o.echo_gate
        p.mic = "none" if not present else (o.mic_file or o.mic or "default microphone")
        p.camera = None if camera is None else str(o.camera_file or f"camera {camera.source}")
        if present and player is not None and not o.echo_gate and not o.mic_file:
            p.warn(HEADPHONES)
        return LiveSession(
            self.client,
            mic,
            camera=camera,
            camera_optional=o.camera is None and o.camera_file is None,
            player=player,
            turn=o.turn,
            controls=self.controls,
            mic_present=present,
            echo_gate=o.echo_gate,
            chunk_ms=o.chunk_ms,
            jpeg_quality=o.jpeg_quality,
            frame_max_side=o.frame_max_side,
            timeline=self.timeline,
            progress=p,
            schedule=parse_schedule(o.actions),
            duration_s=o.duration_s,
            media_clock=self.clock,
            on_sent=self.listening.sent.record,
        )

    async def run(self) -> RunResult:
        """Run the session and always write `result.json`."""
        started = time.monotonic()
        result = RunResult(ok=False, status="failed", exit_code=EXIT_FAILED)
        refused: LiveUsageError | None = None
        result.started_at = self.bundle.started_at
        result.model, result.url = self.options.model, redact_url(self.client.url)
        result.bundle_dir = self.bundle.dir
        self.bundle.attach(self.client, clock=self.clock, heard_start=self._heard_start)
        try:
            self.progress.phase = "connecting"
            await self.client.connect()
            self.timeline.set_session(session_id=self.client.session_id)
            self.bundle.write_session(self.client, url=self.client.url)
            self.session = self._build()
            await self.session.run()
            result.status, result.ok = "ok", True
        except asyncio.CancelledError:
            # Ctrl-C, or SIGTERM / SIGHUP when the caller set `progress.stop_reason`.
            reason = self.progress.stop_reason or "interrupted"
            result.status, result.error = reason, reason
            result.exit_code = STOP_EXIT_CODES.get(reason, EXIT_INTERRUPTED)
            raise
        except LiveUsageError as exc:  # options the opened session cannot honour
            result.error, result.exit_code, refused = str(exc), EXIT_USAGE, exc
        except DeviceError as exc:
            result.error, result.exit_code = str(exc), EXIT_USAGE
        except DuplexClientError as exc:
            result.error = str(exc)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.client.close())
            self.timeline.write_best_effort()
            self._complete(result, started)
            await self._measure(result)
            self.bundle.finish(result.to_dict())
        if refused is not None:  # nothing was sent: a usage error (one line, exit 2), bundle kept
            raise refused
        return result

    def _player(self) -> Player | None:
        return None if self.session is None else self.session.player

    def _heard_start(self, response_id: str) -> float | None:
        player = self._player()
        at = None if player is None else player.first_rendered.get(response_id)
        return None if at is None else self.clock.media_ms_at(at)

    async def _measure(self, result: RunResult) -> None:
        """Heard files, turns and metrics from what the speaker played."""
        player = self._player()
        sync = None if self.session is None else self.session.sync
        try:
            await record_listening(
                result,
                self.client,
                self.timeline,
                self.listening,
                self.progress.warn,
                device_blocks=[] if player is None else player.rendered,
                cut_by={} if sync is None else dict(sync.cut_by),
            )
        except Exception as exc:  # the record of the run must still be written
            result.listening_error = f"{type(exc).__name__}: {exc}"
            self.progress.warn(f"turn metrics not measured: {result.listening_error}")

    def _complete(self, result: RunResult, started: float) -> None:
        client = self.client
        record_session(result, client, self.timeline, self.bundle, started)
        sync = self.session.sync if self.session is not None else None
        result.counts.update(
            {
                "played_ms": sum(h.played_ms for h in client.tracker.handles.values()),
                "interruptions": 0 if sync is None else sync.interruptions,
                "dropped_late_deltas": 0 if sync is None else sync.dropped_deltas,
            }
        )
        latencies = [] if self.session is None else self.session.latencies
        result.latencies_ms = {
            # reference (commit or speech end) → first sample played (first audio received
            # without a speaker)
            "last_response_heard": latencies[-1] if latencies else None,
            "median_response_heard": statistics.median(latencies) if latencies else None,
        }
        judge(result, client, need_decision=False, benign=BENIGN_ERRORS)
