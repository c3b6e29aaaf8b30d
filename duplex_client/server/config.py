"""The reference server's configuration (what `duplex-cli serve` options map to)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field, replace
from typing import Literal

from duplex_client.families import DEFAULT_FAMILY
from duplex_client.protocol.dialects import DIALECTS
from duplex_client.server.engine.base import Engine
from duplex_client.server.engine.script import Script, ScriptedEngine
from duplex_client.server.faults import Faults
from duplex_client.server.limits import Limits
from duplex_client.server.profiles import Profile, ProfileUnavailableError, get_profile
from duplex_client.server.profiles.base import TURN_BASED
from duplex_client.server.validation import ServerConfigError, check_int

EventNames = Literal["ga", "beta"]
EngineName = Literal["speech", "scripted"]
#: What the speech engine imports (the `server` extra).
SPEECH_MODULES = ("onnxruntime", "pocketsphinx", "espeakng_loader")
#: Longest first audio unit a server may advertise (`first_unit_ms`).
MAX_UNIT_MS = 60_000
#: Longest gap between paced speech chunks, and longest injected delay (ms).
MAX_DELAY_MS = 600_000
#: The longest a connection is held for the warm-up: vLLM-Omni 0.30.0's
#: `DUPLEX_WARMUP_CLIENT_WAIT_S` (`entrypoints/duplex/warmup.py`), after which it admits the
#: client anyway.
WARMUP_HOLD_S = 180.0
#: Codes a server may use for an illegal unit kind (protocol.md §3.2, step 6).
ILLEGAL_UNIT_CODES = ("bad_event", "invalid_video_frames", "invalid_input_modality")

__all__ = ["ServerConfig", "ServerConfigError", "default_engine", "speech_available"]


def speech_available() -> bool:
    """Whether the speech engine's libraries are installed (checked without importing them)."""
    return all(importlib.util.find_spec(m) is not None for m in SPEECH_MODULES)


def default_engine() -> EngineName:
    """`speech` when the `server` extra is installed, else `scripted`."""
    return "speech" if speech_available() else "scripted"


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """Everything that shapes one server instance; defaults are secure (loopback, no key)."""

    host: str = "127.0.0.1"
    port: int = 0
    profile: str = DEFAULT_FAMILY
    require_audio: bool = False
    illegal_unit_code: str | None = None
    first_unit_ms: int | None = None
    require_ref_audio: bool = False
    #: Emulate a model that calls functions (`supports_tools`) on any profile.
    tools: bool = False
    api_key: str | None = field(default=None, repr=False)
    #: None: the profile's (its family's) generation, GA for all but Nemotron (beta).
    event_names: EventNames | None = None
    #: None: `scripted` when a script is given, else `default_engine()`.
    engine: EngineName | None = None
    script: Script | None = None
    #: Speech engine: wall-clock gap between 1 s output chunks (0: as fast as the socket takes).
    speech_chunk_interval_ms: int = 0
    #: Speech engine: recognise in a worker process (False: in the event loop, which stalls
    #: every session of the process for each utterance's 100–300 ms of decoding).
    asr_worker: bool = True
    faults: Faults = field(default_factory=Faults)
    limits: Limits = field(default_factory=Limits)
    resumable: bool = True
    #: The one model this server serves (None: any name is taken). A duplex request naming
    #: another one (`?model=`, or the session's `model`) is refused with `unsupported_model`
    #: (nested, `param: "model"`, close 1008), and `GET /v1/models` lists it.
    served_model: str | None = None
    #: Seconds of start-up warm-up: until they pass, new duplex connections are held before
    #: the WebSocket upgrade (at most `WARMUP_HOLD_S`; `?vllm_omni_warmup=1` passes), as
    #: vLLM-Omni holds them until its warm-up session is done. 0: no warm-up.
    warmup_s: float = 0.0
    #: The wire spoken on the socket: `duplex` (ours) or `openai` (OpenAI Realtime GA), the
    #: same session and engines behind each (docs/dialects.md).
    dialect: str = "duplex"

    def __post_init__(self) -> None:
        """Check every option: `ServerConfigError` (a `ValueError`) names the first bad one."""
        if not isinstance(self.host, str) or not self.host.strip() or " " in self.host.strip():
            raise ServerConfigError("host", f"must be a host name or address, got {self.host!r}")
        check_int("port", self.port, 0, 65535)
        if self.event_names not in (None, "ga", "beta"):
            raise ServerConfigError(
                "event_names", f"must be 'ga' or 'beta', got {self.event_names!r}"
            )
        if self.first_unit_ms is not None:
            check_int("first_unit_ms", self.first_unit_ms, 1, MAX_UNIT_MS, "ms")
        if self.illegal_unit_code is not None and self.illegal_unit_code not in ILLEGAL_UNIT_CODES:
            raise ServerConfigError(
                "illegal_unit_code",
                f"must be one of {', '.join(ILLEGAL_UNIT_CODES)}, got {self.illegal_unit_code!r}",
            )
        check_int("speech_chunk_interval_ms", self.speech_chunk_interval_ms, 0, MAX_DELAY_MS, "ms")
        warmup = self.warmup_s
        if isinstance(warmup, bool) or not isinstance(warmup, int | float) or warmup < 0:
            raise ServerConfigError("warmup_s", f"must be seconds >= 0, got {warmup!r}")
        if self.dialect not in DIALECTS:
            raise ServerConfigError(
                "dialect", f"must be one of {', '.join(DIALECTS)}, got {self.dialect!r}"
            )
        if self.dialect != "duplex":  # no dialect resumes: a dropped socket ends the session
            object.__setattr__(self, "resumable", False)
        if not isinstance(self.limits, Limits):
            raise ServerConfigError("limits", "must be a Limits")
        _check_faults(self.faults)
        if self.engine is None:
            engine = "scripted" if self.script is not None else default_engine()
            object.__setattr__(self, "engine", engine)
        if self.engine not in ("speech", "scripted"):
            raise ServerConfigError(
                "engine", f"must be 'speech' or 'scripted', got {self.engine!r}"
            )
        if self.engine == "speech" and self.script is not None:
            raise ServerConfigError("script", "drives the scripted engine, not the speech engine")
        if self.engine == "speech" and not speech_available():
            raise ServerConfigError(
                "engine",
                "'speech' needs the server extra: pip install 'duplex-client[server]'",
            )
        try:
            profile = self.resolve_profile()
        except ProfileUnavailableError as exc:
            raise ServerConfigError("profile", str(exc)) from None
        if profile.first_unit_ms <= 0 or profile.chunk_period_ms <= 0:  # a custom profile
            raise ServerConfigError("profile", "unit lengths must be positive")

    @property
    def beta_names(self) -> bool:
        """Whether the server sends beta event names (as asked, else as the profile's family)."""
        names = self.event_names or self.resolve_profile().event_names
        return names == "beta"

    def resolve_profile(self) -> Profile:
        """The `Profile` these options select."""
        profile = get_profile(
            self.profile,
            require_audio=self.require_audio,
            illegal_unit_code=self.illegal_unit_code,
            first_unit_ms=self.first_unit_ms,
            ref_audio_required=self.require_ref_audio,
            server_vad=self.engine == "speech",
        )
        return replace(profile, supports_tools=True) if self.tools else profile

    def make_engine(self) -> Engine:
        """A fresh engine for one session."""
        if self.engine == "scripted":
            return ScriptedEngine(self.script)
        from duplex_client.server.engine.speech import SpeechEngine

        turns = self.resolve_profile().implementation_level == TURN_BASED
        worker = None
        if self.asr_worker:
            from duplex_client.server.engine.asr_worker import shared_worker

            worker = shared_worker()
        return SpeechEngine(
            lane="turns" if turns else "duplex",
            chunk_interval_ms=self.speech_chunk_interval_ms,
            asr_worker=worker,
        )


def _check_faults(faults: Faults) -> None:
    """Fault values in range (the `--faults` parser clamps; a `Faults` built in code may not)."""
    if not isinstance(faults, Faults):
        raise ServerConfigError("faults", "must be a Faults")
    check_int("faults.unit_latency_ms", faults.unit_latency_ms, 0, MAX_DELAY_MS, "ms")
    check_int("faults.created_delay_ms", faults.created_delay_ms, 0, MAX_DELAY_MS, "ms")
    check_int("faults.drop_times", faults.drop_times, 1, 1_000_000)
    check_int("faults.error_at_unit", faults.error_at_unit, 0, 2**31 - 1)
    if faults.drop_after_events is not None:
        check_int("faults.drop_after_events", faults.drop_after_events, 1, 2**31 - 1)
    for index, ms in faults.slow_units.items():
        check_int("faults.slow_units", index, 0, 2**31 - 1)
        check_int("faults.slow_units", ms, 0, MAX_DELAY_MS, "ms")
