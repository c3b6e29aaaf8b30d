"""One page's socket: messages in and out, the clock pings, and the session it starts.

Outgoing messages go through a queue (`post` never blocks, so the playback sync and the
capture can post from synchronous code); a writer task sends them in order. Every page
message is checked (`web.protocol`); a bad one is answered with an `error` and one terminal
line, never a crash. When the socket closes mid-session the session is stopped as if the
page had pressed Stop: the bundle is finished with what arrived.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from typing import TYPE_CHECKING, Any

import orjson
from websockets.asyncio.server import ServerConnection
from websockets.exceptions import ConnectionClosed

from duplex_client.web.clock import PageClock
from duplex_client.web.protocol import (
    PAGE_ACTIONS,
    PageError,
    number,
    parse_binary,
    parse_start,
    parse_text,
)
from duplex_client.web.session import PageSession, ready_message

if TYPE_CHECKING:
    from duplex_client.web.server import WebApp

log = logging.getLogger("duplex_client.web")
#: Clock pings: a burst when the page connects, then one a second.
PING_BURST, PING_EVERY_S = 5, 1.0
#: How long a stopping session may take to finish its bundle when the page goes away.
STOP_TIMEOUT_S = 60.0


class PageConnection:
    """The page's socket (see the module docstring)."""

    def __init__(self, app: WebApp, ws: ServerConnection) -> None:
        self.app = app
        self.ws = ws
        self.clock = PageClock()
        self.closed = False
        self.session: PageSession | None = None
        self._task: asyncio.Task[None] | None = None
        self._out: asyncio.Queue[str | bytes] = asyncio.Queue()
        self._pings: dict[int, float] = {}
        self._ids = itertools.count(1)
        request = ws.request
        self.user_agent = request.headers.get("User-Agent", "") if request is not None else ""

    def post(self, msg: dict[str, Any] | bytes) -> None:
        """Send a message to the page (in order, without blocking; dropped once closed)."""
        if not self.closed:
            self._out.put_nowait(msg if isinstance(msg, bytes) else orjson.dumps(msg).decode())

    async def run(self) -> None:
        """Serve the page until its socket closes; a running session is then stopped."""
        writer = asyncio.create_task(self._write(), name="duplex-web-writer")
        pinger = asyncio.create_task(self._ping(), name="duplex-web-pings")
        self.post(ready_message(self.app))
        try:
            async for message in self.ws:
                self._dispatch(message)
        except ConnectionClosed:
            pass
        finally:
            self.closed = True  # a reloaded page may connect while this session finishes
            if self.session is not None and self._task is not None and not self._task.done():
                self.app.say(f"session {self.session.number}: the page went away: stopping")
            await self.shutdown()
            for task in (writer, pinger):
                task.cancel()
            await asyncio.gather(writer, pinger, return_exceptions=True)

    async def shutdown(self) -> None:
        """Stop the running session (its bundle is finished) and wait for it, bounded."""
        if self.session is not None:
            self.session.controls.apply("quit")
        if self._task is not None and not self._task.done():
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._task), STOP_TIMEOUT_S)

    # --- in ---

    def _dispatch(self, message: str | bytes) -> None:
        try:
            if isinstance(message, bytes):
                self._media(message)
            else:
                self._control(parse_text(message))
        except PageError as exc:
            self.app.say(f"page: bad message: {exc}")
            self.post({"type": "error", "message": f"protocol: {exc}"})

    def _media(self, data: bytes) -> None:
        packet = parse_binary(data)
        session = self.session
        if session is not None and self.clock.synced:
            session.source.feed(packet)

    def _control(self, msg: dict[str, Any]) -> None:
        kind, session = msg["type"], self.session
        running = session is not None and self._task is not None and not self._task.done()
        if kind == "pong":
            sent = self._pings.pop(int(number(msg, "id")), None)
            if sent is not None:
                self.clock.pong(sent, number(msg, "page_ms"), time.monotonic())
        elif kind == "start":
            self._start(msg, running)
        elif kind == "page_error":
            what = str(msg.get("message", "unknown"))[:300]
            self.app.say(f"page: {what}")
        elif not running or session is None:
            if kind not in ("played", "cleared", "stop", "control", "device_lost"):
                raise PageError(f"unknown message type {kind!r}")
        elif kind == "control":
            action = msg.get("action")
            if action not in PAGE_ACTIONS:
                raise PageError(f"control: unknown action {action!r}")
            session.controls.apply(str(action))
        elif kind == "stop":
            session.controls.apply("quit")
        elif kind == "played":
            if session.source.player is not None:
                session.source.player.report(msg)
        elif kind == "cleared":
            if session.source.player is not None:
                session.source.player.stopped(msg.get("n"))
        elif kind == "device_lost":
            device = "audio" if msg.get("kind") == "audio" else "video"
            reason = str(msg.get("reason") or "ended")[:200]
            what = _device(device)
            self.app.say(f"session {session.number}: the page's {what} stopped ({reason})")
            session.source.lost(device, reason)
        else:
            raise PageError(f"unknown message type {kind!r}")

    def _start(self, msg: dict[str, Any], running: bool) -> None:
        if running:
            raise PageError("start: a session is already running")
        if not self.clock.synced:
            raise PageError("start: the page's clock is not synced yet (no pong)")
        from duplex_client.web.session import offered

        request = parse_start(msg, offered(self.app))
        if not request.facts.get("user_agent"):
            request.facts["user_agent"] = self.user_agent[:512] or None
        self.session = PageSession(self, self.app.new_session(), request)
        self._task = asyncio.create_task(self.session.run(), name="duplex-web-session")

    # --- out ---

    async def _write(self) -> None:
        while True:
            message = await self._out.get()
            try:
                await self.ws.send(message)
            except ConnectionClosed:
                return

    async def _ping(self) -> None:
        for k in itertools.count():
            ping_id = next(self._ids)
            self._pings[ping_id] = time.monotonic()
            self.post({"type": "ping", "id": ping_id})
            if len(self._pings) > 32:  # unanswered ones
                self._pings.pop(min(self._pings))
            await asyncio.sleep(0.05 if k < PING_BURST else PING_EVERY_S)


def _device(kind: str) -> str:
    return "microphone" if kind == "audio" else "camera"
