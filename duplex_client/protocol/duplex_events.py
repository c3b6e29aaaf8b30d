"""vLLM-Omni-only server events: `turn.event` and the flat handshake `error` (protocol.md §4.5, §7).

`TurnEvent` is registered for decoding like every server event. `HandshakeError` is encode
only: a client reads the flat shape through `ErrorEvent`, which accepts both shapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, ClassVar

from duplex_client.protocol.objects import TURN_STATES
from duplex_client.protocol.schema import OMIT
from duplex_client.protocol.server_events import ServerEvent


@dataclass(kw_only=True, slots=True)
class TurnEvent(ServerEvent):
    """`turn.event`: a turn signal the session accepted, and the turn state it left."""

    TYPE: ClassVar[str] = "turn.event"
    session_id: str | None = None
    event: str = ""
    turn_state: str = ""
    epoch: int | None = None


@dataclass(kw_only=True, slots=True)
class HandshakeError(ServerEvent):
    """The flat `error` sent before a session exists: `{type, error: <message>, code, param?}`.

    `param` (the offending field) is our addition; upstream's flat shape has no such key.
    """

    TYPE: ClassVar[str] = "error"
    error: str = ""
    code: str | None = None
    param: Annotated[str | None, OMIT] = None


__all__ = ["TURN_STATES", "HandshakeError", "TurnEvent"]
