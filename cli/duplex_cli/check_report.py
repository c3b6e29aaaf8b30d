"""What `duplex-cli check` found: the report `check` fills in and `check_table` prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class CheckReport:
    """What `check` found; `to_dict()` is the `--json` form."""

    url: str
    health: dict[str, Any] = field(default_factory=dict)
    models: dict[str, Any] = field(default_factory=dict)
    model: dict[str, Any] = field(default_factory=dict)
    handshake: dict[str, Any] = field(default_factory=dict)
    capabilities: dict[str, Any] = field(default_factory=dict)
    session: dict[str, Any] = field(default_factory=dict)
    round_trip: dict[str, Any] = field(default_factory=dict)
    event_names: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    #: The failure is the user's to fix (several models and no `--model`): exit 2.
    usage: bool = False

    @property
    def ok(self) -> bool:
        """Whether every step answered."""
        return self.error is None

    def fail(self, message: str) -> None:
        """Record the first failure (the one line `check` prints on stderr)."""
        if self.error is None:
            self.error = message

    def to_dict(self) -> dict[str, Any]:
        """The JSON report."""
        return {
            "url": self.url,
            "ok": self.ok,
            "error": self.error,
            "health": self.health,
            "models": self.models,
            "model": self.model,
            "handshake": self.handshake,
            "capabilities": self.capabilities,
            "session": self.session,
            "round_trip": self.round_trip,
            "event_names": self.event_names,
        }
