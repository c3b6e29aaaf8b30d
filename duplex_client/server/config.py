"""The reference server's configuration (what `duplex-cli serve` options map to)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from duplex_client.server.engine.script import Script
from duplex_client.server.faults import Faults
from duplex_client.server.limits import Limits
from duplex_client.server.profiles import Profile, get_profile

EventNames = Literal["ga", "beta"]


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
    script: Script | None = None
    faults: Faults = field(default_factory=Faults)
    limits: Limits = field(default_factory=Limits)
    resumable: bool = True

    def __post_init__(self) -> None:
        if self.event_names not in ("ga", "beta"):
            raise ValueError("event_names must be 'ga' or 'beta'")
        if not 0 <= self.port <= 65535:
            raise ValueError("port must be within 0..65535")
        self.resolve_profile()  # fail early on an unknown profile

    def resolve_profile(self) -> Profile:
        """The `Profile` these options select."""
        return get_profile(
            self.profile,
            require_audio=self.require_audio,
            illegal_unit_code=self.illegal_unit_code,
            first_unit_ms=self.first_unit_ms,
            ref_audio_required=self.require_ref_audio,
        )
