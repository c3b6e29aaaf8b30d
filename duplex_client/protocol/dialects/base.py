"""What every dialect mapping offers, and the capabilities a dialect without any gets."""

from __future__ import annotations

from typing import Any, Protocol

Event = dict[str, Any]


def obj(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one (ill-typed fields read as absent)."""
    return value if isinstance(value, dict) else {}


class ClientMapping(Protocol):
    """The client's side: duplex client events out, dialect server events in."""

    name: str

    def outgoing(self, event: Event) -> list[Event]:
        """The dialect events (maybe none) one duplex client event becomes on the wire."""
        ...

    def incoming(self, event: Event) -> list[Event]:
        """The duplex server events (maybe none) one dialect server event becomes."""
        ...

    def closing(self, reason: str) -> list[Event]:
        """The duplex events that end the session when the client closes it (no close event)."""
        ...


class ServerMapping(Protocol):
    """The reference server's side: dialect client events in, duplex server events out."""

    name: str
    #: Whether the server speaks first (opens the session at the upgrade) in this dialect.
    speaks_first: bool

    def opening(self, model: str) -> Event:
        """The duplex `session.update` the session opens with as the socket opens."""
        ...

    def incoming(self, event: Event) -> list[Event]:
        """The duplex client events (maybe none) one dialect client event becomes."""
        ...

    def outgoing(self, event: Event) -> list[Event]:
        """The dialect server events (maybe none) one duplex server event becomes."""
        ...

    def replies(self) -> list[Event]:
        """Dialect events answering client events with no duplex counterpart (taken once)."""
        ...


def synthesised_caps(dialect: str, *, grid_ms: int, client_commit: bool) -> dict[str, Any]:
    """Capabilities for a dialect that advertises none (docs/dialects.md).

    `implementation_level` names the dialect; the grid is the client's own chunking; audio
    only; a truncating playback ack is the dialect's truncate, other acks go nowhere.
    """
    return {
        "implementation_level": f"dialect_{dialect}",
        "chunk_period_ms": grid_ms,
        "first_unit_ms": grid_ms,
        "required_input_modalities": ["audio"],
        "optional_input_modalities": [],
        "input_unit_kinds": ["AUDIO"],
        "supports_session_resume": False,
        "supports_session_lease": False,
        "supports_barge_in": False,
        "supports_playback_ack": True,
        "supports_audio_truncate": True,
        "supports_client_commit": client_commit,
        "input_modes": ["append_audio_chunk"],
        "signal_sources": ["server_policy"],
        "synthesised": True,
    }
