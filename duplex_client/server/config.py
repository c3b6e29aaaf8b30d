"""The reference server's configuration (what `duplex-cli serve` options map to)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Literal

from duplex_client.server.engine.base import Engine
from duplex_client.server.engine.script import Script, ScriptedEngine
from duplex_client.server.faults import Faults
from duplex_client.server.limits import Limits
from duplex_client.server.profiles import Profile, get_profile

EventNames = Literal["ga", "beta"]
EngineName = Literal["speech", "scripted"]
#: What the speech engine imports (the `server` extra).
SPEECH_MODULES = ("onnxruntime", "pocketsphinx", "espeakng_loader")


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
    profile: str = "minicpmo"
    require_audio: bool = False
    illegal_unit_code: str | None = None
    first_unit_ms: int | None = None
    require_ref_audio: bool = False
    api_key: str | None = field(default=None, repr=False)
    event_names: EventNames = "ga"
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

    def __post_init__(self) -> None:
        if self.event_names not in ("ga", "beta"):
            raise ValueError("event_names must be 'ga' or 'beta'")
        if not 0 <= self.port <= 65535:
            raise ValueError("port must be within 0..65535")
        if self.engine is None:
            engine = "scripted" if self.script is not None else default_engine()
            object.__setattr__(self, "engine", engine)
        if self.engine not in ("speech", "scripted"):
            raise ValueError("engine must be 'speech' or 'scripted'")
        if self.engine == "speech" and self.script is not None:
            raise ValueError("a script drives the scripted engine, not the speech engine")
        if self.engine == "speech" and not speech_available():
            raise ValueError(
                "the speech engine needs the server extra: pip install 'duplex-client[server]'"
            )
        if self.speech_chunk_interval_ms < 0:
            raise ValueError("speech_chunk_interval_ms must be >= 0")
        self.resolve_profile()  # fail early on an unknown profile

    def resolve_profile(self) -> Profile:
        """The `Profile` these options select."""
        return get_profile(
            self.profile,
            require_audio=self.require_audio,
            illegal_unit_code=self.illegal_unit_code,
            first_unit_ms=self.first_unit_ms,
            ref_audio_required=self.require_ref_audio,
            server_vad=self.engine == "speech",
        )

    def make_engine(self) -> Engine:
        """A fresh engine for one session."""
        if self.engine == "scripted":
            return ScriptedEngine(self.script)
        from duplex_client.server.engine.speech import SpeechEngine

        turns = self.resolve_profile().implementation_level == "chat_fallback"
        worker = None
        if self.asr_worker:
            from duplex_client.server.engine.asr_worker import shared_worker

            worker = shared_worker()
        return SpeechEngine(
            lane="turns" if turns else "duplex",
            chunk_interval_ms=self.speech_chunk_interval_ms,
            asr_worker=worker,
        )
