"""What `stream` needs from a session client, and the optional abilities it checks for."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, Unpack, runtime_checkable

from duplex_client.client.resume import ReconnectListener
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.protocol.server_events import ServerEvent
from duplex_client.protocol.session.inputs import AppendFields


class StreamTarget(Protocol):
    """What `stream` needs from a session client (`DuplexClient` satisfies it)."""

    @property
    def capabilities(self) -> Capabilities:
        """The server's capabilities from the handshake."""
        ...

    @property
    def audio_end_ms(self) -> int:
        """Cumulative audio sent so far, rounded ms."""
        ...

    async def append_input(self, pcm: bytes | None = None, **fields: Unpack[AppendFields]) -> str:
        """Send one append (no PCM with frames: a VISION unit); returns the event id sent."""
        ...

    async def commit(self, *, final: bool = True, create_response: bool | None = None) -> str:
        """Send a commit; returns the event id sent."""
        ...


@runtime_checkable
class _Listenable(Protocol):
    def add_listener(self, listener: Callable[[ServerEvent, float], None]) -> None: ...


@runtime_checkable
class _TakesCommits(Protocol):
    @property
    def takes_commits(self) -> bool: ...


@runtime_checkable
class _Unlistenable(_Listenable, Protocol):
    def remove_listener(self, listener: Callable[[ServerEvent, float], None]) -> None: ...


@runtime_checkable
class _TakesImages(Protocol):
    async def send_image_item(self, image: bytes) -> str: ...


@runtime_checkable
class _Reconnecting(Protocol):
    def add_reconnect_listener(self, listener: ReconnectListener) -> None: ...
