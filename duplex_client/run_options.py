"""Options of a file run (`duplex-cli stream`, `stream_clip`): validation, presets, media.

Exit codes: 0 ok, 1 the session failed, 2 bad options or input (nothing sent), 130 interrupted.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplex_client.analysis.annotations import (
    AnnotationError,
    SpeechSegment,
    check_range,
    load_annotations,
    parse_annotations,
)
from duplex_client.client.config import SessionConfig, ref_audio_data_url
from duplex_client.client.resume import ReconnectPolicy
from duplex_client.framing.sources import AudioVisualSource, MediaInput
from duplex_client.protocol.errors import DuplexClientError

PRESET_NAMES = ("minicpmo", "joyai", "aura", "none")
SOUNDTRACK_POLICIES = ("trim", "pad", "full")
WINDOW_MODES = ("off", "basic", "context")


class UsageError(DuplexClientError):
    """Bad options or bad input files (exit code 2)."""


class RunFailed(DuplexClientError):
    """The session ran but did not end as it should (no decision, an unfinished response)."""


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Everything `duplex-cli stream` can be told; the notebook API takes the same names."""

    input_video: str | None = None
    input_audio: str | None = None
    input_image: str | None = None
    model: str = "openbmb/MiniCPM-o-4_5"
    preset: str = "minicpmo"
    config: SessionConfig | None = None
    api_key: str | None = field(default=None, repr=False)
    ref_audio: str | None = field(default=None, repr=False)
    video_fps: float = 1.0
    frame_max_side: int = 0
    stack_frames: int = 1
    jpeg_quality: int = 90
    chunk_ms: int = 200
    tail_silence_s: float = 0.0
    soundtrack: str = "trim"
    realtime: bool = True
    manual_commit: bool = False
    instructions: str | None = None
    temperature: float | None = None
    sliding_window: str | None = None
    window_knobs: dict[str, int] = field(default_factory=dict)
    output_dir: Path | None = None
    timeout_s: float = 30.0
    require_audio: bool = False
    settle_s: float = 0.5
    reconnect: bool = True
    reconnect_attempts: int = 5
    handshake_timeout_s: float = 30.0
    #: User speech on the media clock: a JSON file (ours or a Full-Duplex-Bench shape), or
    #: segments given inline (`{"start_ms", "end_ms"}` mappings or `SpeechSegment`s).
    annotations: str | os.PathLike[str] | Sequence[Mapping[str, Any] | SpeechSegment] | None = None

    def user_speech(self, media_ms: int) -> list[SpeechSegment] | None:
        """The annotated user speech, checked against the media length (None: not given)."""
        if self.annotations is None:
            return None
        if not self.realtime:
            raise UsageError(
                "--annotations needs real-time pacing: without it there is no listener clock "
                "to measure latency on (drop --no-realtime-pacing)"
            )
        try:
            if isinstance(self.annotations, str | os.PathLike):
                segments = load_annotations(os.fspath(self.annotations))
            else:
                rows = [
                    {"start_ms": a.start_ms, "end_ms": a.end_ms}
                    if isinstance(a, SpeechSegment)
                    else a
                    for a in self.annotations
                ]
                segments = parse_annotations(rows, source="annotations")
            check_range(segments, media_ms)
        except AnnotationError as exc:
            raise UsageError(f"--annotations: {exc}") from None
        return segments

    def validate(self) -> None:
        """Raise `UsageError` with a one-line message for any invalid combination."""
        if not (self.input_video or self.input_audio or self.input_image):
            raise UsageError(
                "nothing to stream: give --input-video, --input-audio or --input-image"
            )
        if self.input_video and self.input_image:
            raise UsageError("--input-video and --input-image are exclusive")
        checks = [
            (self.chunk_ms > 0, f"--chunk-ms must be positive, got {self.chunk_ms}"),
            (self.tail_silence_s >= 0, f"--tail-silence-s must be >= 0, got {self.tail_silence_s}"),
            (self.video_fps > 0, f"--video-fps must be positive, got {self.video_fps}"),
            (self.stack_frames >= 1, f"--stack-frames must be >= 1, got {self.stack_frames}"),
            (self.frame_max_side >= 0, f"--frame-max-side must be >= 0, got {self.frame_max_side}"),
            (self.timeout_s > 0, f"--timeout-s must be positive, got {self.timeout_s}"),
            (
                self.reconnect_attempts >= 1,
                f"--reconnect-attempts must be >= 1, got {self.reconnect_attempts}",
            ),
            (
                self.handshake_timeout_s > 0,
                f"--handshake-timeout-s must be positive, got {self.handshake_timeout_s}",
            ),
            (self.preset in PRESET_NAMES, f"--preset must be one of {', '.join(PRESET_NAMES)}"),
            (self.soundtrack in SOUNDTRACK_POLICIES, "--soundtrack must be trim, pad or full"),
            (self.sliding_window in (None, *WINDOW_MODES), "--sliding-window: off, basic, context"),
        ]
        for ok, message in checks:
            if not ok:
                raise UsageError(message)
        if self.input_image and not self.input_audio and self.tail_silence_s <= 0:
            raise UsageError("an image alone has no length: add --input-audio or --tail-silence-s")

    def reconnect_policy(self) -> ReconnectPolicy | None:
        """The client's reconnect policy (None with `reconnect=False`)."""
        return ReconnectPolicy(attempts=self.reconnect_attempts) if self.reconnect else None

    def session_config(self) -> SessionConfig:
        """The session config: `config` if given, else the preset plus the options."""
        from duplex_client import presets

        if self.config is not None:
            return self.config
        overrides: dict[str, Any] = {}
        extra: dict[str, Any] = {}
        if self.instructions is not None:
            overrides["instructions"] = self.instructions
        if self.temperature is not None:
            overrides["temperature"] = self.temperature
        if self.sliding_window is not None:
            extra["sliding_window_mode"] = self.sliding_window
            extra.update(self.window_knobs)
        if self.manual_commit:
            extra["auto_response"] = False
        if extra:
            overrides["extra_body"] = extra
        if self.preset == "minicpmo":
            return presets.minicpmo_4_5(ref_audio=self.ref_audio, **overrides)
        if self.preset == "joyai":
            return presets.joyai(manual=self.manual_commit, **overrides)
        base = presets.aura() if self.preset == "aura" else SessionConfig()
        if self.ref_audio is not None:
            overrides["ref_audio"] = ref_audio_data_url(self.ref_audio)
        return base.with_overrides(**overrides)


def default_run_dir() -> Path:
    """`./runs/<timestamp>` (a suffix keeps two runs in one second apart)."""
    base = Path("runs") / time.strftime("%Y%m%d-%H%M%S")
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def open_source(options: RunOptions) -> tuple[AudioVisualSource, Any]:
    """Open the media the options name; returns the source and an object to close."""
    from duplex_client.media import ImageFrameSource, open_audio, open_clip

    if options.input_video:
        clip = open_clip(
            options.input_video,
            fps=options.video_fps,
            frame_max_side=options.frame_max_side,
            jpeg_quality=options.jpeg_quality,
            stack_frames=options.stack_frames,
            audio=options.input_audio,
        )
        return clip, clip
    audio = open_audio(options.input_audio) if options.input_audio else None
    image = None
    if options.input_image:
        image = ImageFrameSource(
            options.input_image,
            frame_max_side=options.frame_max_side,
            jpeg_quality=options.jpeg_quality,
        )
    return MediaInput(audio=audio, frames=image), None
