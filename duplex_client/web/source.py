"""A browser page as a run's source: its microphone and camera in, its player as the listener.

`BrowserSource` is a `run.sources.Source` like `DeviceSource`, and runs the same live loop
(`LiveSession`, built by `run.sources.devices.live_session`): the page's capture is an
`AudioCapture` and a `FrameCapture`, its player a `LiveOutput`. Only where the blocks come
from and where the answers go differ; framing, the timeline, push-to-talk commits, server
commits, playback acks and the record are the live run's own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from duplex_client.analysis.playback import HeardOutput
from duplex_client.families import DEFAULT_FAMILY, preset_family
from duplex_client.framing.clock import MediaClock
from duplex_client.media.devices.capture import AudioCapture
from duplex_client.media.devices.filemic import FileMicrophone
from duplex_client.run.controls import LiveControls
from duplex_client.run.options import VIDEO_DIALECTS, InputKind, RunOptions
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult
from duplex_client.run.sources import SourceLink
from duplex_client.run.sources.devices import (
    BENIGN_ERRORS,
    CAMERA_FRAME_MAX_SIDE,
    CAMERA_JPEG_QUALITY,
    LiveSession,
    complete_live,
    live_session,
)
from duplex_client.run.turns import TurnMode
from duplex_client.usage import UsageError
from duplex_client.web.capture import BrowserCamera, BrowserMicrophone
from duplex_client.web.clock import PageClock
from duplex_client.web.player import PagePlayer, Post
from duplex_client.web.protocol import AudioPacket, FramePacket, StartRequest

#: Said once when the page captures with echo cancellation off and plays on its speaker.
HEADPHONES = "echo cancellation is off: use headphones, or the model hears itself"


class BrowserSource:
    """One browser session's input and output (see the module docstring).

    `post` sends to the page; `clock` maps the page's times here; `request` is the page's
    `start`. `on_open(source)` is called once the session is open and the loop is built
    (the page then hears the session's capabilities).
    """

    inputs: InputKind = "browser"
    needs_decision = False
    benign_errors = BENIGN_ERRORS

    def __init__(
        self,
        post: Post,
        clock: PageClock,
        request: StartRequest,
        controls: LiveControls,
        *,
        on_open: Callable[[BrowserSource], None] | None = None,
    ) -> None:
        self.post = post
        self.clock = clock
        self.request = request
        self.controls = controls
        self.on_open = on_open
        self.mic: BrowserMicrophone | None = None
        self.camera: BrowserCamera | None = None
        self.player: PagePlayer | None = None
        self.session: LiveSession | None = None
        self.link: SourceLink | None = None
        self._options: RunOptions | None = None

    @property
    def media_ms(self) -> int:
        """Unknown: a browser session lasts until it is stopped."""
        return 0

    @property
    def input_facts(self) -> dict[str, Any]:
        """The browser, its devices and echo settings, for `session.json`'s `input`."""
        return self.request.facts

    async def open(self, options: RunOptions, progress: RunProgress) -> None:
        """Nothing to open here: the page opened its devices before it asked to start."""
        if self.request.video and options.dialect not in VIDEO_DIALECTS:
            raise UsageError(
                f"camera: the {options.dialect} dialect carries audio only, no video frames; "
                "start with the microphone alone",
                param="dialect",
                keywords=("dialect",),
            )
        self._options = options
        echo = self.request.facts.get("echo", {})
        if self.request.audio and echo.get("echoCancellation") is False and not options.echo_gate:
            progress.warn(HEADPHONES)

    def output(self, options: RunOptions, clock: MediaClock, rate: int) -> HeardOutput | None:
        """The page's player (at the session's output rate)."""
        self.player = PagePlayer(
            self.post, self.clock.to_monotonic, sample_rate_hz=rate, jitter_ms=options.jitter_ms
        )
        return self.player

    async def send(self, link: SourceLink) -> None:
        """Run the live loop over the page's capture until Stop, the time limit or an error."""
        o, p = self._options, link.progress
        assert o is not None, "open() first"
        self.link = link
        request, caps = self.request, link.client.capabilities
        mic: AudioCapture
        if request.audio:
            to_here = self.clock.to_monotonic
            mic = self.mic = BrowserMicrophone(self.post, to_here, request.capture_rate)
        else:  # camera only: silence keeps the clock, as `--no-mic` does
            mic = FileMicrophone.silence()
        if request.video:
            self.camera = BrowserCamera(
                self.post,
                self.clock.to_monotonic,
                period_ms=caps.chunk_period_ms,
                max_side=CAMERA_FRAME_MAX_SIDE if o.frame_max_side is None else o.frame_max_side,
                quality=CAMERA_JPEG_QUALITY if o.jpeg_quality is None else o.jpeg_quality,
            )
        devices = request.facts.get("devices") or {}
        p.mic = str(devices.get("microphone") or "browser microphone") if request.audio else "none"
        p.camera = str(devices.get("camera") or "browser camera") if request.video else None
        self.session = live_session(
            link,
            o,
            self.controls,
            mic=mic,
            mic_present=request.audio,
            camera=self.camera,
            camera_optional=False,
            player=self.player,
        )
        if self.on_open is not None:
            self.on_open(self)
        await self.session.run()

    def feed(self, packet: AudioPacket | FramePacket) -> None:
        """A media message from the page."""
        if isinstance(packet, AudioPacket):
            if self.mic is not None:
                self.mic.feed(packet)
        elif self.camera is not None:
            self.camera.feed(packet)

    def lost(self, kind: str, reason: str) -> None:
        """The page lost a device: the microphone ends the session, the camera only its frames."""
        if kind == "audio" and self.mic is not None:
            self.mic.lost(f"the browser's microphone stopped ({reason})")
        elif kind == "video" and self.camera is not None:
            self.camera.lost(f"the browser's camera stopped ({reason})")
            if self.link is not None:
                self.link.progress.warn(f"the browser's camera stopped ({reason}): audio only")

    def complete(self, result: RunResult) -> None:
        """What was played and interrupted, the latencies, and the page player's underruns."""
        complete_live(result, self.session)
        if self.player is not None:
            result.counts["page_underruns"] = self.player.underruns

    async def close(self) -> None:
        """Nothing to release: the live session stopped the page's capture when it ended."""


def offered_modes(preset: str) -> tuple[TurnMode, ...]:
    """The turn modes a page offers for a preset, from the family table.

    `auto` offers all three (it picks the family per mode), `none` too (a bare config: the
    session's capabilities decide). A family offers `model` when the model owns the turns,
    `vad` with a server VAD and `ptt` with push-to-talk commits.
    """
    if preset == "auto":
        return ("model", "vad", "ptt")
    family = preset_family(preset)
    if family is None:
        return ("model", "vad", "ptt")
    modes: list[TurnMode] = []
    if family.model_owned_turns:
        modes.append("model")
    if family.server_vad:
        modes.append("vad")
    if family.push_to_talk and family.client_commits:
        modes.append("ptt")
    return tuple(modes)


def offers_video(preset: str) -> bool:
    """Whether the preset's family takes camera frames (`auto`, `none`: yes)."""
    name = DEFAULT_FAMILY if preset == "auto" else preset
    family = preset_family(name)
    return family is None or "video" in (*family.required_modalities, *family.optional_modalities)
