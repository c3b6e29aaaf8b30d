"""Live devices as a run's source: microphone and camera in, the speaker as the listener.

`DeviceSource` checks the devices before anything is written (PortAudio, the chosen
microphone and speaker), opens them once the session is open and runs a `LiveSession`
over them until quit or the time limit. Device modules are injectable (`LiveDevices`).
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from duplex_client.analysis.playback import HeardOutput, LiveOutput
from duplex_client.client.streaming import reconnect_recorder
from duplex_client.framing.clock import MediaClock
from duplex_client.media.devices.camera import Camera
from duplex_client.media.devices.capture import AudioCapture, FrameCapture
from duplex_client.media.devices.filemic import FileMicrophone
from duplex_client.media.devices.lookup import (
    DeviceError,
    camera_source,
    load_sounddevice,
    resolve_audio_device,
)
from duplex_client.media.devices.mic import Microphone
from duplex_client.media.devices.player import Player
from duplex_client.run.controls import LiveControls, PushToTalk, parse_schedule
from duplex_client.run.options import VIDEO_DIALECTS, InputKind, RunOptions
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult
from duplex_client.run.sources import SourceLink
from duplex_client.run.sources.devices.session import LiveSession
from duplex_client.usage import UsageError

#: Request-local errors that live races can cause without harm; listed, not failures.
BENIGN_ERRORS = frozenset({"playback_ack_too_late", "response_not_active"})
HEADPHONES = (
    "use headphones: a terminal has no echo canceller "
    "(--echo-gate stops the microphone while the assistant is audible)"
)
#: The one warning when file or silent input runs on a machine that cannot play.
NO_SPEAKER = "{what}: running without playback (nothing is played; acks say 0 ms)"
#: Frame settings of a camera when the options leave them to the input.
CAMERA_FRAME_MAX_SIDE, CAMERA_JPEG_QUALITY = 640, 80


@dataclass(frozen=True, slots=True)
class LiveDevices:
    """Where devices come from: the `sounddevice` module and a `VideoCapture` factory.

    None means the real ones (imported when needed). Tests inject fakes here.
    """

    sounddevice: Any | None = None
    video_capture: Callable[[int | str], Any] | None = None


@dataclass(frozen=True, slots=True)
class DeviceCheck:
    """What `preflight` found: the `sounddevice` module, whether to play, a warning."""

    sounddevice: Any | None
    playback: bool
    warning: str | None = None


def preflight(options: RunOptions, devices: LiveDevices) -> DeviceCheck:
    """Fail before connecting when PortAudio or a chosen audio device is missing.

    A run without a real microphone (`mic_file`, `no_mic`) whose default speaker is
    missing (no output device, or no PortAudio at all) runs without playback, with one
    warning; a real microphone or a named `speaker` keeps the error.
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


def check_files(options: RunOptions, *, camera: bool = True) -> None:
    """The file twins of the devices, read before anything is written, as `stream` reads its
    inputs: a missing or unreadable file is a `MediaError` naming it (exit 2, no bundle).

    `camera` False: an injected capture factory opens `camera_file` its own way.
    """
    from duplex_client.families import preset_family
    from duplex_client.media import open_audio
    from duplex_client.media.errors import MediaError
    from duplex_client.media.probe import probe

    if options.mic_file and not options.no_mic:
        open_audio(options.mic_file)  # the same checks as `stream --input-audio`
    if needs_video(options) and options.no_camera:
        chosen = preset_family(options.preset_name())
        assert chosen is not None
        raise UsageError(
            f"preset {chosen.name} ({chosen.title}) requires video on every unit: "
            "no_camera would send nothing (use a camera or camera_file)",
            param="preset",
            keywords=("preset", "no_camera", "camera_file"),
        )
    if camera and options.camera_file and not options.no_camera:
        info = probe(options.camera_file)
        if info.video is None or not info.video.decodable:
            kinds = ", ".join(s.kind for s in info.streams) or "none"
            raise MediaError(options.camera_file, f"has no video stream (streams: {kinds})")


def needs_video(options: RunOptions) -> bool:
    """Whether the options' preset names a family that requires video on every unit."""
    from duplex_client.families import preset_family

    chosen = preset_family(options.preset_name())
    return chosen is not None and "video" in chosen.required_modalities


def controls_for(options: RunOptions) -> LiveControls:
    """The live switches as the options start them (muted, camera off, the talk key's mode)."""
    return LiveControls(
        muted=options.start_muted,
        camera_on=not options.camera_off,
        ptt=PushToTalk(options.ptt_mode),
    )


def open_mic(options: RunOptions, sounddevice: Any | None) -> tuple[AudioCapture, bool]:
    """The audio source for the options and whether it is a real input (not silence)."""
    if options.no_mic:
        return FileMicrophone.silence(), False
    if options.mic_file:
        return FileMicrophone(options.mic_file), True
    return Microphone(options.mic, sd=sounddevice), True


def open_camera(options: RunOptions, devices: LiveDevices) -> Camera | None:
    """The camera (device or file) for the options, or None (also the default camera for a
    dialect that carries audio only: one named is refused by `RunOptions.validate`)."""
    if options.no_camera or options.dialect not in VIDEO_DIALECTS:
        return None
    source = options.camera_file if options.camera_file else camera_source(options.camera)
    return Camera(source, capture_factory=devices.video_capture)


def live_session(
    link: SourceLink,
    options: RunOptions,
    controls: LiveControls,
    *,
    mic: AudioCapture,
    mic_present: bool,
    camera: FrameCapture | None,
    camera_optional: bool,
    player: LiveOutput | None,
) -> LiveSession:
    """The live loop over captured input for a run (devices, a browser page): one for both."""
    o, p = options, link.progress
    link.client.add_reconnect_listener(reconnect_recorder(link.timeline))
    p.turn, p.ptt_mode, p.echo_gate = o.turn, o.ptt_mode, o.echo_gate
    return LiveSession(
        link.client,
        mic,
        camera=camera,
        camera_optional=camera_optional,
        player=player,
        sync=link.listening.sync,
        turn=o.turn,
        controls=controls,
        mic_present=mic_present,
        echo_gate=o.echo_gate,
        chunk_ms=o.chunk_ms,
        jpeg_quality=CAMERA_JPEG_QUALITY if o.jpeg_quality is None else o.jpeg_quality,
        frame_max_side=CAMERA_FRAME_MAX_SIDE if o.frame_max_side is None else o.frame_max_side,
        timeline=link.timeline,
        progress=p,
        schedule=parse_schedule(o.actions),
        duration_s=o.duration_s,
        media_clock=link.clock,
        on_sent=link.on_sent,
    )


def complete_live(result: RunResult, session: LiveSession | None) -> None:
    """A live run's own counts (played, interrupted) and latencies to the first played sample."""
    sync = None if session is None else session.sync
    handles = (session.client.tracker.handles.values()) if session is not None else ()
    result.counts.update(
        {
            "played_ms": sum(h.played_ms for h in handles),
            "interruptions": 0 if sync is None else sync.interruptions,
            "dropped_late_deltas": 0 if sync is None else sync.dropped_deltas,
        }
    )
    latencies = [] if session is None else session.latencies
    result.latencies_ms = {
        # reference (commit or speech end) → first sample played (first audio received
        # without a speaker)
        "last_response_heard": latencies[-1] if latencies else None,
        "median_response_heard": statistics.median(latencies) if latencies else None,
    }


class DeviceSource:
    """Microphone and camera (or their file twins) until quit; answers on the speaker."""

    inputs: InputKind = "devices"
    needs_decision = False
    benign_errors = BENIGN_ERRORS
    input_facts = None

    def __init__(
        self, controls: LiveControls | None = None, devices: LiveDevices | None = None
    ) -> None:
        self.controls = controls
        self.devices = devices or LiveDevices()
        self.session: LiveSession | None = None
        self._check = DeviceCheck(None, False)
        self._options: RunOptions | None = None

    @property
    def media_ms(self) -> int:
        """Unknown: a live input lasts until it is quit."""
        return 0

    async def open(self, options: RunOptions, progress: RunProgress) -> None:
        """Check PortAudio and the chosen devices (`DeviceError` before anything is written)."""
        self._options = options
        await asyncio.to_thread(check_files, options, camera=self.devices.video_capture is None)
        self._check = preflight(options, self.devices)
        if self._check.warning is not None:
            progress.warn(self._check.warning)
        if self.controls is None:
            self.controls = controls_for(options)

    def output(self, options: RunOptions, clock: MediaClock, rate: int) -> HeardOutput | None:
        """The speaker, unless nothing can or may play (then no acks: they would say 0 ms)."""
        if not self._check.playback or options.no_playback:
            return None
        return Player(
            sd=self._check.sounddevice,
            device=options.speaker,
            sample_rate_hz=rate,
            jitter_ms=options.jitter_ms,
        )

    async def send(self, link: SourceLink) -> None:
        """Run the live loop over the opened devices until quit, the time limit or an error."""
        o, p = self._options, link.progress
        assert o is not None and self.controls is not None, "open() first"
        mic, present = open_mic(o, self._check.sounddevice)
        camera = open_camera(o, self.devices)
        player = link.listening.output if isinstance(link.listening.output, Player) else None
        p.mic = "none" if not present else (o.mic_file or o.mic or "default microphone")
        p.camera = None if camera is None else str(o.camera_file or f"camera {camera.source}")
        if present and player is not None and not o.echo_gate and not o.mic_file:
            p.warn(HEADPHONES)
        self.session = live_session(
            link,
            o,
            self.controls,
            mic=mic,
            mic_present=present,
            camera=camera,
            # a family that needs video on every unit would send nothing without one
            camera_optional=o.camera is None and o.camera_file is None and not needs_video(o),
            player=player,
        )
        await self.session.run()

    def complete(self, result: RunResult) -> None:
        """What was played and interrupted, and the latency to the first played sample."""
        complete_live(result, self.session)

    async def close(self) -> None:
        """Nothing to release: the live session closed its devices when it ended."""
