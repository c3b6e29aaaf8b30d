"""`RunOptions`: everything a run can be told, whichever way in; one frozen object."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.analysis.pooling import TIMING_LATENESS_MS
from duplex_client.client.resume import ReconnectPolicy
from duplex_client.families import auto_preset, preset_family
from duplex_client.protocol.capabilities import DEFAULT_CHUNK_PERIOD_MS
from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.run.checks import DEFAULT_RECONNECT_ATTEMPTS
from duplex_client.run.controls import PttMode
from duplex_client.run.options.choices import InputKind
from duplex_client.run.options.limits import DEFAULT_CHUNK_MS
from duplex_client.run.options.validation import validate_options
from duplex_client.run.turns import TURN_MODES, TurnMode

if TYPE_CHECKING:
    from duplex_client.client.config import SessionConfig


@dataclass(frozen=True, slots=True)
class RunOptions:
    """Everything a run can be told; the CLI's flags and the SDK's keywords are these names.

    Most options mean the same for every way in. Those of the input say where it comes
    from: files (`input_video`, `input_audio`, `input_image` and their framing) or live
    devices (`mic`, `camera`, `speaker` and the switches); giving one to the other kind of
    run is a usage error, never silently ignored (`FILE_FIELDS`, `DEVICE_FIELDS`).
    """

    # --- the input: files ---
    input_video: str | None = None
    input_audio: str | None = None
    input_image: str | None = None
    video_fps: float = 1.0
    stack_frames: int = 1
    tail_silence_s: float = 0.0
    soundtrack: str = "trim"
    #: Pace appends on the media clock (False: as fast as the server takes them).
    realtime: bool = True
    #: User speech on the media clock: a JSON file (ours or a Full-Duplex-Bench shape), or
    #: segments given inline (`{"start_ms", "end_ms"}` mappings or `SpeechSegment`s).
    annotations: str | os.PathLike[str] | Sequence[Mapping[str, Any] | SpeechSegment] | None = None
    # --- the input: live devices ---
    mic: str | None = None
    mic_file: str | None = None
    no_mic: bool = False
    camera: str | None = None
    camera_file: str | None = None
    no_camera: bool = False
    speaker: str | None = None
    no_playback: bool = False
    echo_gate: bool = False
    start_muted: bool = False
    camera_off: bool = False
    #: Answer audio buffered before the speaker plays it.
    jitter_ms: int = 80
    #: Stop a live run after this long (None: until quit).
    duration_s: float | None = None
    #: Scripted live actions, `MS:ACTION` (`1500:mute`).
    actions: tuple[str, ...] = ()
    # --- the session ---
    #: The model to ask for; None: the one the server lists, else the preset's.
    model: str | None = None
    #: A model family's preset (`families`), `none`, or `auto` (minicpmo for the model's
    #: turns, joyai for `vad` / `ptt`).
    preset: str = "auto"
    #: Who ends a turn: the model, server VAD's commits, or a push-to-talk key.
    turn: TurnMode = "model"
    ptt_mode: PttMode = "toggle"
    #: A session config to send as is (the preset and session options are then unused).
    config: SessionConfig | None = None
    api_key: str | None = field(default=None, repr=False)
    ref_audio: str | None = field(default=None, repr=False)
    #: Commit the input and ask for the response yourself (`auto_response` off).
    manual_commit: bool = False
    instructions: str | None = None
    temperature: float | None = None
    sliding_window: str | None = None
    window_knobs: dict[str, int] = field(default_factory=dict)
    #: Function tools to declare: a JSON file (a list, or `{"tools", "tool_choice"}`) or a list.
    tools: str | os.PathLike[str] | Sequence[Mapping[str, Any]] | None = None
    #: Fixed answers per function: `"NAME=JSON"` strings or a name → value mapping.
    tool_results: Mapping[str, Any] | Sequence[str] | None = None
    # --- framing ---
    #: The longest side of a sent image in pixels (0: as captured; None: the input's
    #: default, 0 for files and 640 for a camera).
    frame_max_side: int | None = None
    #: JPEG quality of sent images (None: the input's default, 90 for files, 80 for a camera).
    jpeg_quality: int | None = None
    chunk_ms: int = DEFAULT_CHUNK_MS
    #: Keep a file's decoded PCM and sampled frames on disk and reuse them (docs/plan_cache.md);
    #: None: on unless `DUPLEX_PLAN_CACHE=off`.
    plan_cache: bool | None = None
    #: Where the plan cache lives (None: `DUPLEX_PLAN_CACHE_DIR`, else the user cache dir).
    plan_cache_dir: str | None = None
    # --- the connection and the end of the run ---
    timeout_s: float = 30.0
    settle_s: float = 0.5
    #: Bounds the whole connection: TCP connect, TLS, WebSocket upgrade and session.created.
    handshake_timeout_s: float = 30.0
    reconnect: bool = True
    #: Send lateness p99 (or end drift) above this makes the run timing-invalid: it warns
    #: once while streaming and `result.json` says `timing_valid: false` and why.
    max_lateness_ms: float = TIMING_LATENESS_MS
    reconnect_attempts: int = DEFAULT_RECONNECT_ATTEMPTS
    #: The wire the endpoint speaks: `duplex` (ours), `openai`, `gpt-live`, or `auto`: as
    #: the endpoint shows it before the run (`duplex` when it shows none; docs/dialects.md).
    dialect: str = AUTO
    # --- the embedded server (no URL) ---
    require_audio: bool = False
    #: A JSON script for the embedded server's scripted engine.
    server_script: str | None = None
    # --- the bundle ---
    output_dir: Path | None = None
    #: Keep the sent payloads (`input.pcm`, `sent_frames/`) in the bundle, for `replay`.
    keep_payloads: bool = False
    #: Write a small JPEG thumbnail of every sent image (`frames/<unit>_<k>.jpg`).
    thumbnails: bool = True

    @property
    def model_name(self) -> str | None:
        """The model sent: `model`, else the preset's (None: the server's own)."""
        from duplex_client.families import default_model

        return self.model if self.model is not None else default_model(self.preset_name())

    def preset_name(self) -> str:
        """The preset in effect (`auto`: minicpmo for the model's turns, joyai otherwise)."""
        if self.preset != "auto":
            return self.preset
        return auto_preset(self.turn if self.turn in TURN_MODES else "model")

    def dialect_grid_ms(self) -> int:
        """The unit grid a dialect without one gets: the preset family's (its chunking)."""
        family = preset_family(self.preset_name())
        return family.chunk_period_ms if family is not None else DEFAULT_CHUNK_PERIOD_MS

    def plan_cache_on(self) -> bool:
        """Whether this run uses the plan cache (`plan_cache`, else `DUPLEX_PLAN_CACHE`)."""
        if self.plan_cache is not None:
            return self.plan_cache
        from duplex_client.media.plan_cache import enabled_by_env

        return enabled_by_env()

    def reconnect_policy(self) -> ReconnectPolicy | None:
        """The client's reconnect policy (None with `reconnect=False`).

        A run that reconnects also replaces a session a journal gap lost with a new one
        (protocol.md §6.1); the bundle names both sessions and where the gap is.
        """
        if not self.reconnect:
            return None
        return ReconnectPolicy(attempts=self.reconnect_attempts, new_session_on_resync=True)

    def session_config(self) -> SessionConfig:
        """The session config these options ask for (loads `ref_audio` and `tools`)."""
        from duplex_client.run.prepare import prepare

        return prepare(self).config

    def user_speech(self, media_ms: int) -> list[SpeechSegment] | None:
        """Deprecated: `run.prepare.user_speech(options, media_ms)` (loading left the options)."""
        from duplex_client.run import prepare

        _moved("RunOptions.user_speech()", "duplex_client.run.prepare.user_speech(options, ...)")
        return prepare.user_speech(self, media_ms)

    def ref_audio_url(self) -> str | None:
        """Deprecated: `run.prepare.ref_audio_url(options)` (loading left the options)."""
        from duplex_client.run import prepare

        _moved("RunOptions.ref_audio_url()", "duplex_client.run.prepare.ref_audio_url(options)")
        return prepare.ref_audio_url(self)

    def fixed_tool_results(self) -> dict[str, str]:
        """Deprecated: `run.prepare.prepare(options).tool_results`."""
        from duplex_client.run import prepare

        _moved("RunOptions.fixed_tool_results()", "prepare(options).tool_results")
        return prepare.prepare(self).tool_results

    def validate(self, *, inputs: InputKind = "files") -> None:
        """Raise `UsageError` with a one-line message for any invalid combination.

        `inputs` says where the run's input comes from: `files` checks the input files are
        named, `devices` the device switches, `browser` that no device is named (the page
        chooses its own), `given` neither (the caller brings the input). Nothing is opened
        or loaded here.
        """
        validate_options(self, inputs)


def _moved(old: str, new: str) -> None:
    import warnings

    message = f"{old} moved to {new}; the old name goes in the next release"
    warnings.warn(message, DeprecationWarning, stacklevel=3)
