"""A transport that speaks a dialect on the wire and duplex to the client above it."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from typing import Any

from duplex_client.client.transport import Transport
from duplex_client.protocol.codec import CodecError, dumps, loads
from duplex_client.protocol.dialects import ClientMapping


class DialectTransport:
    """`Transport` mapping duplex frames to a dialect's and back (the mapping is sans-I/O).

    A `session.close` has no counterpart in the dialects: it is not written, and the
    session ends as closed by the client (`ClientMapping.closing`), delivered at once even
    while a receive is waiting on the socket.
    """

    def __init__(self, inner: Transport, mapping: ClientMapping) -> None:
        self.inner = inner
        self.mapping = mapping
        self._pending: deque[bytes] = deque()
        self._wake = asyncio.Event()
        self._reading: asyncio.Future[str | bytes] | None = None
        #: Seconds opening took (the inner transport's, when it says).
        self.opening_s: float = getattr(inner, "opening_s", 0.0)

    async def send(self, data: bytes) -> None:
        """Write what one duplex client event becomes in the dialect."""
        event = loads(data)
        for out in self.mapping.outgoing(event):
            await self.inner.send(dumps(out))
        if event.get("type") == "session.close":
            reason = event.get("reason")
            said = reason if isinstance(reason, str) else "client_close"
            self._pending.extend(dumps(e) for e in self.mapping.closing(said))
            self._wake.set()

    async def recv(self) -> str | bytes:
        """The next duplex server frame (a dialect frame may become none, one or several)."""
        while not self._pending:
            if self._reading is None:
                self._reading = asyncio.ensure_future(self.inner.recv())
            woken: asyncio.Future[Any] = asyncio.ensure_future(self._wake.wait())
            either: list[asyncio.Future[Any]] = [self._reading, woken]
            try:
                await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            finally:
                woken.cancel()
            self._wake.clear()
            if not self._reading.done():
                continue  # woken: what the client's close synthesised is pending
            reading, self._reading = self._reading, None
            frame = reading.result()  # `TransportClosed` when the connection ended
            if isinstance(frame, bytes):
                return frame
            try:
                event = loads(frame)
            except CodecError:
                return frame  # the connection reports an undecodable frame as it always does
            self._pending.extend(dumps(e) for e in self.mapping.incoming(event))
        return self._pending.popleft().decode()

    async def close(self) -> None:
        """Close the inner transport (a receive still waiting on it ends)."""
        await self.inner.close()
        reading, self._reading = self._reading, None
        if reading is not None:
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await reading  # its end (the closed connection) is taken here
