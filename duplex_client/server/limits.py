"""Configurable server limits with the defaults of protocol.md §8."""

from __future__ import annotations

from dataclasses import dataclass, fields

from duplex_client.protocol.capabilities import (
    DEFAULT_MAX_FRAME_B64_CHARS,
    DEFAULT_MAX_FRAMES_PER_APPEND,
)
from duplex_client.server.validation import check_int, check_positive

MIB = 1024 * 1024
#: Largest value each limit takes (integers unless the default is a float, in seconds).
_MAX_BYTES = 1024 * MIB
_MAX_COUNT = 1_000_000
_MAX_SECONDS = 86_400.0
_HIGHEST = {
    "max_pending_turns": 1000,
    "max_frames_per_append": 1000,
    "max_sessions": 10_000,
}


@dataclass(frozen=True, slots=True)
class Limits:
    """Per-server and per-session limits; every one is configurable (tests use small values)."""

    max_inbound_frame_bytes: int = 15 * MIB
    max_pending_input_bytes: int = 16 * MIB
    max_pending_turns: int = 4
    max_frames_per_append: int = DEFAULT_MAX_FRAMES_PER_APPEND
    max_frame_b64_chars: int = DEFAULT_MAX_FRAME_B64_CHARS
    output_buffer_bytes: int = 2 * MIB
    output_buffer_events: int = 512
    output_reserve_bytes: int = 64 * 1024
    output_reserve_events: int = 8
    journal_bytes: int = 8 * MIB
    journal_retention_s: float = 60.0
    default_idle_timeout_s: float = 300.0
    disconnect_grace_s: float = 30.0
    max_sessions: int = 1
    completed_id_cache: int = 256
    first_message_timeout_s: float = 30.0

    def __post_init__(self) -> None:
        """Every limit positive and bounded; raises `ServerConfigError` naming the first bad one."""
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name.endswith("_s"):
                check_positive(f.name, value, _MAX_SECONDS, "s")
            elif "bytes" in f.name or "chars" in f.name:
                check_int(f.name, value, 1, _MAX_BYTES, "bytes")
            else:
                check_int(f.name, value, 1, _HIGHEST.get(f.name, _MAX_COUNT))
