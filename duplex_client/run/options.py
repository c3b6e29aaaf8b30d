"""The options of one run, whichever way in (`stream`, `live`, `eval`, `replay`): one object.

`RunOptions` holds what the user said, and `validate()` checks it in one place without
opening any file (files are loaded afterwards, by `run.prepare`). Messages name the
keyword arguments (`chunk_ms must be positive, got 0`); `UsageError.render` gives the CLI's
flags instead. Exit codes: 0 ok, 1 the session failed, 2 bad options or input (nothing
sent), 130 interrupted (143 terminated, 129 hangup).
"""

from __future__ import annotations

import math
import numbers
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from duplex_client.analysis.annotations import SpeechSegment
from duplex_client.analysis.pooling import TIMING_LATENESS_MS
from duplex_client.client.resume import ReconnectPolicy
from duplex_client.families import LIVE_PRESET_CHOICES, auto_preset, preset_family
from duplex_client.protocol.capabilities import DEFAULT_CHUNK_PERIOD_MS, DEFAULT_FIRST_UNIT_MS
from duplex_client.protocol.dialects import DIALECTS
from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.protocol.errors import DuplexClientError
from duplex_client.run.checks import DEFAULT_RECONNECT_ATTEMPTS, check_more
from duplex_client.run.controls import PTT_MODES, PttMode, parse_schedule
from duplex_client.run.turns import COMMIT_TURNS, TURN_MODES, TurnMode, no_commits_error
from duplex_client.usage import UsageError

if TYPE_CHECKING:
    from duplex_client.client.config import SessionConfig

__all__ = [
    "DEVICE_FIELDS",
    "FILE_FIELDS",
    "MAX_CHUNK_MS",
    "MAX_SECONDS",
    "PAGE_FIELDS",
    "PRESET_NAMES",
    "SOUNDTRACK_POLICIES",
    "WINDOW_MODES",
    "InputKind",
    "RunFailed",
    "RunOptions",
    "UsageError",
    "check_number",
    "default_run_dir",
]

#: The presets a run takes (`auto`: minicpmo for the model's turns, joyai for vad/ptt).
PRESET_NAMES = LIVE_PRESET_CHOICES
SOUNDTRACK_POLICIES = ("trim", "pad", "full")
WINDOW_MODES = ("off", "basic", "context")
DUPLEX = "duplex"
#: What `dialect` takes: detected (the default), or one named.
DIALECT_CHOICES: tuple[str, ...] = (AUTO, *DIALECTS)
#: The dialects whose wire carries video frames (`auto`: not known until detected).
VIDEO_DIALECTS = frozenset({DUPLEX, AUTO})
#: The longest append by default; a grid with shorter units cuts it to one unit, unnoted.
DEFAULT_CHUNK_MS = 200
#: The longest append the framer makes: appends never cross a unit boundary, so a longer
#: `chunk_ms` would be cut to one unit (the default grid's units are 1000 ms).
MAX_CHUNK_MS = max(DEFAULT_FIRST_UNIT_MS, DEFAULT_CHUNK_PERIOD_MS)
#: The bound of every duration option (tail silence, timeouts, settle time), in seconds.
MAX_SECONDS = 3600.0
#: Where a run's input comes from: files named by the options, live devices, a browser page
#: (`duplex-cli web`: the page's microphone and camera, answers on its player), or an input
#: the caller brings itself (a replay's recording, an eval's items).
InputKind = Literal["files", "devices", "browser", "given"]

#: Bounds of the numeric options: (low, high), both included.
_LIMITS: dict[str, tuple[float, float]] = {
    "video_fps": (0.0, 120.0),  # the low bound is excluded (see `_OPEN_LOW`)
    "frame_max_side": (0, 8192),
    "stack_frames": (1, 16),
    "jpeg_quality": (1, 100),
    "chunk_ms": (1, MAX_CHUNK_MS),
    "jitter_ms": (0, 10_000),
    "reconnect_attempts": (1, 100),
    "tail_silence_s": (0.0, MAX_SECONDS),
    "timeout_s": (0.0, MAX_SECONDS),
    "settle_s": (0.0, MAX_SECONDS),
    "handshake_timeout_s": (0.0, MAX_SECONDS),
    "duration_s": (0.0, MAX_SECONDS),
    "max_lateness_ms": (0.0, MAX_SECONDS * 1000),
}
_INTEGERS = frozenset({"frame_max_side", "stack_frames", "jpeg_quality", "chunk_ms"})
_INTEGERS |= {"reconnect_attempts", "jitter_ms"}
#: Options that must be above their low bound, not equal to it ("must be positive").
_OPEN_LOW = frozenset({"video_fps", "timeout_s", "handshake_timeout_s", "duration_s"})
_OPEN_LOW |= {"max_lateness_ms"}
#: Integer options whose low bound 1 reads "must be positive".
_POSITIVE = frozenset({"chunk_ms"})
#: Why a bound is what it is, for the message.
_WHY = {
    "chunk_ms": " (the longest append the framer makes: one unit)",
}
_UNITS = {"tail_silence_s": " s", "timeout_s": " s", "settle_s": " s", "duration_s": " s"}
_UNITS |= {"handshake_timeout_s": " s", "chunk_ms": " ms", "jitter_ms": " ms"}
_UNITS |= {"max_lateness_ms": " ms"}


class RunFailed(DuplexClientError):
    """The session ran but did not end as it should (no decision, an unfinished response)."""


def check_number(name: str, value: Any) -> None:
    """Raise `UsageError` (one line, naming `name`) unless `value` is within its bounds."""
    low, high = _LIMITS[name]
    unit = _UNITS.get(name, "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        what = "an integer" if name in _INTEGERS else "a number"
        raise UsageError(f"{name} must be {what}, got {value!r}", param=name)
    if isinstance(value, numbers.Integral):
        number: int | float = int(value)
        shown = str(number)
        if len(shown) > 16:  # a huge integer: its order of magnitude is enough
            digits = shown.lstrip("-")
            shown = f"{shown[: len(shown) - len(digits)]}{digits[0]}e+{len(digits) - 1}"
    elif name in _INTEGERS:
        raise UsageError(f"{name} must be an integer, got {value!r}", param=name)
    else:
        number = float(value)
        shown = f"{number:g}"
        if not math.isfinite(number):
            raise UsageError(f"{name} must be a finite number, got {shown}", param=name)
    if name in _OPEN_LOW and number <= low:
        raise UsageError(f"{name} must be positive, got {shown}", param=name)
    if number < low:
        rule = "positive" if name in _POSITIVE else f">= {low:g}"
        raise UsageError(f"{name} must be {rule}, got {shown}", param=name)
    if number > high:
        raise UsageError(
            f"{name} must be at most {high:g}{unit}{_WHY.get(name, '')}, got {shown}",
            param=name,
        )


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
        self._check_input_kind(inputs)
        if inputs == "files":
            self._check_files()
        if inputs in ("devices", "browser"):
            self._check_devices()
        for name in _LIMITS:
            value = getattr(self, name)
            if value is not None or name not in _OPTIONAL_NUMBERS:
                check_number(name, value)
        self._check_session()
        check_more(self, inputs)  # knobs, temperature, family features, video, config
        if self.annotations is not None and not self.realtime:
            raise UsageError(
                "annotations needs real-time pacing: without it there is no listener clock "
                "to measure latency on",
                param="annotations",
            )

    def _check_input_kind(self, inputs: InputKind) -> None:
        """A file option on a device run (or the reverse) is refused, never ignored; so is a
        device a browser run would leave to its page."""
        if inputs == "given":
            return
        other, kind = (DEVICE_FIELDS, "live") if inputs == "files" else (FILE_FIELDS, "file")
        this = {"files": "a file run", "devices": "a live run", "browser": "a browser run"}
        for name in sorted(other):
            if getattr(self, name) != _DEFAULTS[name]:
                raise UsageError(
                    f"{name} is an option of a {kind} run, not of {this[inputs]}", param=name
                )
        if inputs == "browser":
            for name in sorted(PAGE_FIELDS):
                if getattr(self, name) != _DEFAULTS[name]:
                    raise UsageError(
                        f"{name} is an option of a terminal live run, not of a browser run "
                        "(the page chooses its devices and holds the talk button)",
                        param=name,
                    )

    def _check_files(self) -> None:
        if not (self.input_video or self.input_audio or self.input_image):
            raise UsageError(
                "nothing to stream: give input_video, input_audio or input_image",
                keywords=("input_video", "input_audio", "input_image"),
            )
        if self.input_video and self.input_image:
            raise UsageError(
                "input_video and input_image are exclusive",
                param="input_image",
                keywords=("input_video", "input_image"),
            )
        if self.input_image and not self.input_audio and self.tail_silence_s <= 0:
            raise UsageError(
                "an image alone has no length: add input_audio or tail_silence_s",
                param="input_image",
                keywords=("input_audio", "tail_silence_s"),
            )

    def _check_devices(self) -> None:
        clashes = (
            ("mic_file", "no_mic"),
            ("camera_file", "no_camera"),
            ("camera", "camera_file"),
            ("camera", "no_camera"),
            ("mic", "mic_file"),
            ("mic", "no_mic"),
        )
        for a, b in clashes:
            if getattr(self, a) and getattr(self, b):
                raise UsageError(f"{a} and {b} are exclusive", param=b, keywords=(a, b))
        try:
            parse_schedule(self.actions)
        except ValueError as exc:
            raise UsageError(f"actions: {exc}", param="actions") from None

    def _check_session(self) -> None:
        choices = [
            ("preset", self.preset in PRESET_NAMES, ", ".join(PRESET_NAMES)),
            ("turn", self.turn in TURN_MODES, ", ".join(TURN_MODES)),
            ("ptt_mode", self.ptt_mode in PTT_MODES, " or ".join(PTT_MODES)),
            ("soundtrack", self.soundtrack in SOUNDTRACK_POLICIES, "trim, pad or full"),
            ("sliding_window", self.sliding_window in (None, *WINDOW_MODES), "off, basic, context"),
            ("dialect", self.dialect in DIALECT_CHOICES, ", ".join(DIALECT_CHOICES)),
        ]
        for name, ok, allowed in choices:
            if not ok:
                raise UsageError(
                    f"{name} must be one of {allowed}, got {getattr(self, name)!r}", param=name
                )
        self._check_dialect()
        family = preset_family(self.preset_name())
        if family is not None and not family.client_commits and self.config is None:
            if self.turn in COMMIT_TURNS:
                raise no_commits_error(self.turn, f"the {self.preset} preset")
            if self.manual_commit:
                raise UsageError(
                    f"manual_commit commits the input, but the {self.preset} preset takes no "
                    "commits",
                    param="manual_commit",
                )

    def _check_dialect(self) -> None:
        """Another dialect carries audio only: video would be recorded as sent, and never be."""
        if self.dialect in VIDEO_DIALECTS:  # auto: checked again once detected
            return
        for name in ("input_video", "input_image", "camera", "camera_file"):
            if not getattr(self, name):
                continue
            said = f"{name}: the {self.dialect} dialect carries audio only, no video frames"
            if name in ("camera", "camera_file"):  # live: the microphone alone
                raise UsageError(
                    f"{said}; leave it out (no camera is opened in this dialect)", param=name
                )
            hint = " (it takes a clip's soundtrack too)" if name == "input_video" else ""
            raise UsageError(
                f"{said}; give input_audio instead{hint}",
                param=name,
                keywords=(name, "input_audio"),
            )
        family = preset_family(self.preset_name())
        if family is not None and "video" in family.required_modalities:
            raise UsageError(
                f"preset {family.name} ({family.title}) requires video on every unit: the "
                f"{self.dialect} dialect carries audio only",
                param="preset",
                keywords=("preset", "dialect"),
            )


#: Options of a run from files (refused on a live run).
FILE_FIELDS = frozenset(
    {
        "input_video", "input_audio", "input_image", "video_fps", "stack_frames",
        "tail_silence_s", "soundtrack", "realtime", "annotations", "plan_cache",
        "plan_cache_dir",
    }
)  # fmt: skip
#: Options of a run from live devices (refused on a file run).
DEVICE_FIELDS = frozenset(
    {
        "mic", "mic_file", "no_mic", "camera", "camera_file", "no_camera", "speaker",
        "no_playback", "echo_gate", "start_muted", "camera_off", "jitter_ms", "duration_s",
        "actions", "turn", "ptt_mode",
    }
)  # fmt: skip
#: Device options a browser run leaves to its page (refused there): the page chooses the
#: microphone, camera and speaker, and its talk button is held (press, release).
PAGE_FIELDS = frozenset(
    {
        "mic", "mic_file", "no_mic", "camera", "camera_file", "no_camera", "speaker",
        "no_playback", "ptt_mode",
    }
)  # fmt: skip
#: Numeric options whose None means "the input's default".
_OPTIONAL_NUMBERS = frozenset({"frame_max_side", "jpeg_quality", "duration_s"})
_DEFAULTS = {f.name: f.default for f in fields(RunOptions) if f.name in FILE_FIELDS | DEVICE_FIELDS}


def _moved(old: str, new: str) -> None:
    import warnings

    message = f"{old} moved to {new}; the old name goes in the next release"
    warnings.warn(message, DeprecationWarning, stacklevel=3)


def default_run_dir() -> Path:
    """`./runs/<timestamp>` (a suffix keeps two runs in one second apart)."""
    base = Path("runs") / time.strftime("%Y%m%d-%H%M%S")
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path
