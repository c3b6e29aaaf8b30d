"""Dialects: other realtime wires mapped to and from the duplex events the SDK speaks (sans-I/O).

A dialect is a property of the connection: the session run, the client state machine and the
reference server's session all speak the duplex protocol (docs/protocol.md); a mapping turns
each outgoing duplex event into the dialect's wire and each incoming dialect event back into
duplex events, synthesising what the dialect cannot provide (docs/dialects.md).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from duplex_client.protocol.dialects.base import ClientMapping, ServerMapping, synthesised_caps
from duplex_client.protocol.dialects.gpt_live import (
    GPT_LIVE_RATE_HZ,
    LIVE_PATH,
    GptLiveClientMapping,
    GptLiveServerMapping,
)
from duplex_client.protocol.dialects.openai import (
    OPENAI_RATE_HZ,
    OpenAIClientMapping,
    OpenAIServerMapping,
)

Dialect = Literal["duplex", "openai", "gpt-live"]
#: Every dialect name, the default first (`--dialect`).
DIALECTS: tuple[str, ...] = get_args(Dialect)
#: The input and output rate a dialect fixes (None: the session config's).
FIXED_RATE_HZ: dict[str, int] = {"openai": OPENAI_RATE_HZ, "gpt-live": GPT_LIVE_RATE_HZ}
#: The path a dialect's endpoint lives at when the URL names none.
DEFAULT_PATHS: dict[str, str] = {
    "duplex": "/v1/realtime",
    "openai": "/v1/realtime",
    "gpt-live": LIVE_PATH,
}

__all__ = [
    "DEFAULT_PATHS",
    "DIALECTS",
    "FIXED_RATE_HZ",
    "ClientMapping",
    "Dialect",
    "ServerMapping",
    "client_mapping",
    "dialect_hint",
    "server_mapping",
    "synthesised_caps",
]


def dialect_hint(created: dict[str, Any]) -> str:
    """What a capability-less `session.created` looks like, as a hint to append ("" if unsure).

    OpenAI Realtime GA speaks first with a `realtime` session whose audio format is an object
    (`{"type": "audio/pcm", "rate": 24000}`): the duplex handshake cannot take it, and
    `--dialect openai` can.
    """
    session = created.get("session")
    if not isinstance(session, dict) or session.get("type") != "realtime":
        return ""
    audio = session.get("audio")
    audio_in = audio.get("input") if isinstance(audio, dict) else None
    if isinstance(audio_in, dict) and isinstance(audio_in.get("format"), dict):
        return " (it looks like an OpenAI Realtime endpoint: give dialect openai)"
    return ""


def client_mapping(dialect: str, *, grid_ms: int) -> ClientMapping | None:
    """The client-side mapping for `dialect` (None: duplex, nothing to map).

    `grid_ms`: the client's own chunking, advertised as the unit grid a dialect has none of.
    """
    if dialect == "duplex":
        return None
    if dialect == "openai":
        return OpenAIClientMapping(grid_ms=grid_ms)
    if dialect == "gpt-live":
        return GptLiveClientMapping(grid_ms=grid_ms)
    raise ValueError(f"unknown dialect {dialect!r} (one of {', '.join(DIALECTS)})")


def server_mapping(dialect: str) -> ServerMapping | None:
    """The reference server's mapping for `dialect` (None: duplex)."""
    if dialect == "duplex":
        return None
    if dialect == "openai":
        return OpenAIServerMapping()
    if dialect == "gpt-live":
        return GptLiveServerMapping()
    raise ValueError(f"unknown dialect {dialect!r} (one of {', '.join(DIALECTS)})")
