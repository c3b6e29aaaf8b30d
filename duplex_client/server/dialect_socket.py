"""The server socket in a dialect: a duplex session behind another wire (docs/dialects.md)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from duplex_client.protocol.codec import CodecError, dumps, loads
from duplex_client.protocol.dialects import ServerMapping

if TYPE_CHECKING:
    from websockets.asyncio.server import ServerConnection


class DialectSocket:
    """A `ServerConnection` whose frames are mapped: dialect in → duplex, duplex out → dialect.

    Everything else (close, state, the request, the transport) is the connection's own.
    """

    def __init__(self, ws: ServerConnection, mapping: ServerMapping) -> None:
        self._ws = ws
        self.mapping = mapping
        self._pending: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ws, name)

    async def send(self, data: str | bytes, text: bool | None = None) -> None:
        """Write what one duplex server event becomes in the dialect (maybe nothing)."""
        try:
            event = loads(data)
        except CodecError:
            await self._ws.send(data, text=text)
            return
        for out in self.mapping.outgoing(event):
            await self._ws.send(dumps(out), text=True)

    async def recv(self) -> str | bytes:
        """The next duplex client frame (a dialect frame may become none or several)."""
        while not self._pending:
            message = await self._ws.recv()
            if isinstance(message, bytes):
                return message
            try:
                event = loads(message)
            except CodecError:
                return message  # the envelope answers an undecodable frame as always
            self._pending.extend(dumps(e).decode() for e in self.mapping.incoming(event))
            for reply in self.mapping.replies():  # no duplex event stands for it: answered here
                await self._ws.send(dumps(reply), text=True)
        return self._pending.pop(0)

    async def __aiter__(self) -> AsyncIterator[str | bytes]:
        """Frames until the connection closes (as `ServerConnection` iterates)."""
        from websockets.exceptions import ConnectionClosedOK

        try:
            while True:
                yield await self.recv()
        except ConnectionClosedOK:
            return
