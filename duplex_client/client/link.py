"""The client's socket side: the handshake, the current transport, ordered writes, resends.

Writes go out one at a time, in call order (a FIFO lock), as the `ClientConnection` decided:
at once; queued in its outbox while the socket is down (the caller's media clock is never
held up); or once resumed. After `session.resumed`, `resend` writes what the server lacks,
original ids and order first, before anything new (protocol.md §6.1).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from duplex_client.client.deliveries import InputLedger
from duplex_client.client.resume import Delivery
from duplex_client.client.transport import Transport, TransportClosed
from duplex_client.protocol.errors import (
    DuplexConnectionError,
    DuplexProtocolError,
    DuplexSessionClosedError,
)
from duplex_client.protocol.session import ClientConnection, OutboxEntry, Output, Send, State

#: How long a handshake whose first send failed still reads what the server sent before.
_REFUSAL_READ_S = 1.0


async def handshake(
    transport: Transport,
    connection: ClientConnection[Any],
    update: Send,
    timeout: float,
    *,
    budget_s: float | None = None,
) -> Output:
    """Send `update` (`connection.start()`), wait for `session.created` (§2).

    The transport closes on failure. `budget_s`: the part of `timeout` left after connecting
    (the timeout covers both). Returns the connection's output for `session.created`.
    """
    try:
        try:
            await transport.send(update.data)
        except TransportClosed:
            # a server may refuse before reading (upstream's `?duplex=0`): read its error
            await asyncio.wait_for(_await_created(transport, connection), _REFUSAL_READ_S)
            raise
        wait = timeout if budget_s is None else budget_s
        return await asyncio.wait_for(_await_created(transport, connection), wait)
    except TimeoutError:
        await transport.close()
        since = "of session.update" if budget_s is None else "of connecting"
        raise DuplexProtocolError(f"no session.created within {timeout:g} s {since}") from None
    except TransportClosed as exc:
        await transport.close()
        raise DuplexConnectionError(f"connection closed during the handshake: {exc}") from None
    except BaseException:
        await transport.close()
        raise


async def _await_created(transport: Transport, connection: ClientConnection[Any]) -> Output:
    while True:
        output = connection.receive_data(await transport.recv())
        if connection.state is State.OPEN:
            return output


class Link:
    """The current transport of a session and the ordered writes to it."""

    def __init__(
        self, connection: ClientConnection[Any], ledger: InputLedger | None = None
    ) -> None:
        self.transport: Transport | None = None
        self._conn = connection
        self.ledger = ledger or InputLedger()
        self._lock = asyncio.Lock()
        #: Writers holding or waiting for the lock: a frame may skip it only when there are none.
        self._queued = 0
        #: The socket's synchronous write (`WebSocketTransport.send_now`), if it has one.
        self._send_now: Callable[[bytes], bool] | None = None
        self._changed = asyncio.Event()
        self._state = connection.state

    @property
    def connected(self) -> bool:
        """Whether sends go straight to a socket."""
        return self._conn.writable

    def attach(self, transport: Transport) -> None:
        """A new socket (after the handshake, or one that resumed the session)."""
        self.transport = transport
        at_once = getattr(transport, "writes_at_once", False)
        self._send_now = getattr(transport, "send_now", None) if at_once else None
        self.sync()

    def sync(self) -> None:
        """The connection's state may have changed: wake whoever waits on it."""
        # The waiters only look at the state: a run waiting for the end is not woken by
        # every server event (the driver syncs after each)
        state = self._conn.state
        if state is self._state:
            return
        self._state = state
        self._changed.set()
        self._changed.clear()

    async def wait_writable(self) -> None:
        """Until sends go to the socket again; `DuplexSessionClosedError` if the session ends."""
        while not self._conn.writable:
            if self._conn.state is State.CLOSED:
                raise DuplexSessionClosedError(self._conn.closed_reason or "closed")
            await self._changed.wait()

    async def wait_ended(self) -> None:
        """Until the session ended."""
        while self._conn.state is not State.CLOSED:
            await self._changed.wait()

    def write_now(self, send: Send) -> bool:
        """Finish an input's write without waiting, if it can be: False leaves it to `transmit`.

        True when the input was written to the socket at once (nothing else waits to write,
        the socket takes it) or is queued for the resume; the order of writes is kept.
        """
        entry, conn, send_now = send.entry, self._conn, self._send_now
        if entry is None:  # not kept for resending (a session without resume)
            return (
                not self._queued and conn.writable and send_now is not None and send_now(send.data)
            )
        if send.hold:
            return False
        self.ledger.kept(entry.event_id)
        if not conn.must_write(entry):
            return True  # queued: it goes out right after the resume (or went already)
        if self._queued or send_now is None or not send_now(send.data):
            return False
        conn.wrote(entry, conn.attachment.number)
        self.ledger.written(entry.event_id)
        return True

    async def transmit(self, send: Send) -> None:
        """Write one frame as the connection decided; `DuplexSessionClosedError` if it cannot."""
        if send.entry is not None:
            await self._write_input(send, send.entry)
        else:
            await self._write_control(send)

    async def _write_input(self, send: Send, entry: OutboxEntry) -> None:
        self.ledger.kept(entry.event_id)
        if send.hold:  # too much input is queued already: the caller waits for the resume
            await self.wait_writable()
        if not self._conn.must_write(entry):
            return  # queued: it goes out right after the resume (or went already)
        self._queued += 1
        try:
            async with self._lock:
                transport = self.transport
                if transport is None or not self._conn.must_write(entry):
                    return
                attachment = self._conn.attachment.number
                try:
                    await transport.send(send.data)
                except TransportClosed:
                    self._failed(attachment)
                    return  # the reader resumes; the entry goes out then
                self._conn.wrote(entry, attachment)
                self.ledger.written(entry.event_id)
        finally:
            self._queued -= 1

    async def _write_control(self, send: Send) -> None:
        """Send now, or once resumed; a frame that failed to leave is sent once more then."""
        for _ in range(2):
            if not self._conn.writable:
                if send.droppable:
                    return
                await self.wait_writable()
            self._queued += 1
            try:
                async with self._lock:
                    transport = self.transport
                    assert transport is not None
                    attachment = self._conn.attachment.number
                    try:
                        await transport.send(send.data)
                        return
                    except TransportClosed as exc:
                        self._failed(attachment)
                        if send.droppable:
                            return
                        if not self._conn.resumable:
                            raise DuplexSessionClosedError(f"connection lost ({exc})") from None
            finally:
                self._queued -= 1
        raise DuplexSessionClosedError("connection lost again while sending")

    def _failed(self, attachment: int) -> None:
        self._conn.write_failed(attachment)
        self.sync()

    async def resend(self, clock: Callable[[], float]) -> list[Delivery]:
        """After `session.resumed`: write every entry the server lacks, then open sending.

        Returns what was written; if the socket drops again meanwhile the connection stays
        RESUMING (the reader notices and reconnects).
        """
        deliveries: list[Delivery] = []
        self._queued += 1
        try:
            return await self._resend(clock, deliveries)
        finally:
            self._queued -= 1

    async def _resend(
        self, clock: Callable[[], float], deliveries: list[Delivery]
    ) -> list[Delivery]:
        async with self._lock:
            transport = self.transport
            assert transport is not None
            attachment = self._conn.attachment.number
            while (entry := self._conn.next_resend()) is not None:
                again = entry.written
                try:
                    await transport.send(entry.data)
                except TransportClosed:
                    return deliveries
                self._conn.wrote(entry, attachment)
                self.ledger.written(entry.event_id)
                deliveries.append(Delivery(entry.event_id, entry.kind, clock(), again))
            self._conn.flushed()  # no await since the last `next_resend`: nothing is left behind
            self.sync()
        return deliveries

    async def drop(self) -> None:
        """Close the current socket quietly (it is gone already)."""
        if self.transport is not None:
            with contextlib.suppress(Exception):
                await self.transport.close()

    async def close(self) -> None:
        """Close the current socket."""
        if self.transport is not None:
            await self.transport.close()
