"""The network envelope (websockets: routing, auth, attachments, timers) and `ReferenceServer`."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections import deque
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response

from duplex_client.protocol.codec import CodecError, loads
from duplex_client.protocol.errors import ErrorCode
from duplex_client.server.config import ServerConfig
from duplex_client.server.emitter import CloseSocket, Output, Send
from duplex_client.server.errors import Reject, client_event_id, error_event
from duplex_client.server.registry import Registry
from duplex_client.server.session import DuplexSession

log = logging.getLogger("duplex_client.server")
PATHS = ("/v1/realtime", "/v1/duplex")
_DRAIN_WAIT_S = 5.0
_LOGGED = frozenset(
    {
        "session.created",
        "session.resumed",
        "session.closed",
        "session.expired",
        "session.resync_required",
        "input_audio_buffer.committed",
        "response.created",
        "response.done",
    }
)


class _Attachment:
    """One socket attached to a session: an ordered, bounded send queue and its writer task."""

    def __init__(self, ws: ServerConnection, runner: _Runner) -> None:
        self.ws = ws
        self.runner = runner
        self.replaced = False
        self.closing = False
        self._queue: deque[Output] = deque()
        self._bytes = 0
        self._wake = asyncio.Event()
        self.low_water = asyncio.Event()
        self.low_water.set()
        self._task = asyncio.create_task(self._write())

    def push(self, outputs: list[Output], *, reserve: bool = False) -> bool:
        """Queue outputs; False if the output buffer limit would be exceeded (nothing queued)."""
        limits = self.runner.session.limits
        max_bytes = limits.output_buffer_bytes + (limits.output_reserve_bytes if reserve else 0)
        max_events = limits.output_buffer_events + (limits.output_reserve_events if reserve else 0)
        size = sum(len(o.data) for o in outputs if isinstance(o, Send))
        if outputs and (
            self._bytes + size > max_bytes or len(self._queue) + len(outputs) > max_events + 1
        ):
            return False
        self._queue.extend(outputs)
        self._bytes += size
        self._wake.set()
        if self._bytes > self._low_mark():
            self.low_water.clear()
        return True

    def _low_mark(self) -> int:
        return self.runner.session.limits.output_buffer_bytes // 4

    @property
    def backlog_bytes(self) -> int:
        """Bytes queued but not yet written."""
        return self._bytes

    async def _write(self) -> None:
        try:
            while True:
                while not self._queue:
                    self._wake.clear()
                    await self._wake.wait()
                item = self._queue.popleft()
                if isinstance(item, CloseSocket):
                    self.closing = True
                    await self.ws.close(item.code, item.reason[:120])
                    return
                self._bytes -= len(item.data)
                if self._bytes <= self._low_mark():
                    self.low_water.set()
                await self.ws.send(item.data, text=True)
                self.runner.sent(self, item)
        except ConnectionClosed:
            pass

    async def stop(self) -> None:
        """Stop writing (the socket is gone or replaced)."""
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def drain(self) -> None:
        """Wait until the writer finished (it ends after a close)."""
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


class _Runner:
    """Binds a sans-I/O session to its current attachment and drives its timers."""

    def __init__(
        self, session: DuplexSession, on_finished: Callable[[_Runner], None] | None = None
    ) -> None:
        self.session = session
        self._on_finished = on_finished
        self.attachment: _Attachment | None = None
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._sent_total = 0
        self._timer = asyncio.create_task(self._timers())

    def now(self) -> float:
        """The session clock (the event loop's monotonic time)."""
        return self._loop.time()

    def deliver(self, outputs: list[Output], *, wake: bool = True) -> None:
        """Route outputs to the attached socket; a detached session only journals them."""
        for out in outputs:
            if isinstance(out, Send) and (out.type in _LOGGED or out.code):
                log.info("session %s: %s%s", self.session.session_id, out.type,
                         f" {out.code}" if out.code else "")  # fmt: skip
        att = self.attachment
        if att is not None and not att.push(outputs):
            self.session.fail(
                ErrorCode.RESOURCE_EXHAUSTED,
                "output buffer overflow: the client is not reading",
                self.now(),
                close_code=1008,
            )
            if not att.push(self.session.emitter.drain(), reserve=True):
                att.ws.transport.abort()
        if wake:
            self._wake.set()  # deadlines may have moved

    def handle(self, event: dict[str, Any]) -> None:
        """Feed one client event to the session."""
        self.deliver(self.session.handle(event, self.now()))

    def sent(self, att: _Attachment, send: Send) -> None:
        """Count sent events; the drop fault aborts the socket after N of them (once)."""
        self._sent_total += 1
        faults = self.session.faults
        if (
            faults.drop_after_events is not None
            and not self.session.drop_fault_used
            and self._sent_total >= faults.drop_after_events
        ):
            self.session.drop_fault_used = True
            log.info("session %s: fault: dropping the socket", self.session.session_id)
            att.ws.transport.abort()

    async def _timers(self) -> None:
        while not self.session.closed:
            deadline = self.session.next_deadline()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout_at(deadline):
                    await self._wake.wait()
            self._wake.clear()
            att = self.attachment
            if att is not None and not att.low_water.is_set():
                # Let the socket drain before producing more output (the output buffer's guard).
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_DRAIN_WAIT_S):
                        await att.low_water.wait()
            else:
                await asyncio.sleep(0)
            if not self.session.closed:
                self.deliver(self.session.tick(self.now()), wake=False)
        if self._on_finished is not None:
            self._on_finished(self)

    async def stop(self) -> None:
        """Stop the timer task."""
        self._timer.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._timer


class ReferenceServer:
    """The bundled reference server; `async with ReferenceServer(profile=...) as s: s.url`."""

    def __init__(self, config: ServerConfig | None = None, **overrides: Any) -> None:
        if config is None:
            config = ServerConfig(**overrides)
        elif overrides:
            raise TypeError("pass either a ServerConfig or keyword overrides, not both")
        self.config = config
        self.registry = Registry(config)
        self._runners: dict[str, _Runner] = {}
        self._server: Server | None = None
        self._port = config.port

    # --- lifecycle ---

    async def start(self) -> None:
        """Bind and start serving (port 0 picks a free port)."""
        limit = self.config.limits.max_inbound_frame_bytes
        self._server = await serve(
            self._handle,
            self.config.host,
            self.config.port,
            compression=None,
            max_size=max(2 * limit, limit + 1024 * 1024),
            max_queue=64,
            process_request=self._process_request,
            ping_interval=20,
            ping_timeout=60,
            close_timeout=2,
        )
        self._port = self._server.sockets[0].getsockname()[1]
        log.info("reference server listening on %s (profile %s)", self.url, self.config.profile)

    async def stop(self) -> None:
        """Close every connection and stop serving."""
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for runner in list(self._runners.values()):
            await runner.stop()
        self._runners.clear()

    async def serve_forever(self) -> None:
        """Serve until cancelled."""
        if self._server is None:
            await self.start()
        assert self._server is not None
        await self._server.serve_forever()

    async def __aenter__(self) -> ReferenceServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # --- addresses and inspection ---

    @property
    def host(self) -> str:
        """The bound host."""
        return self.config.host

    @property
    def port(self) -> int:
        """The bound port (the real one when configured with 0)."""
        return self._port

    @property
    def url(self) -> str:
        """`ws://host:port/v1/realtime` (clients add `duplex=1`, `model`, `autostart=0`)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"ws://{host}:{self.port}{PATHS[0]}"

    @property
    def http_url(self) -> str:
        """`http://host:port` (for `GET /health`)."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def session_ids(self) -> list[str]:
        """Ids of live sessions (attached or within their disconnect grace)."""
        return list(self.registry.sessions)

    def session(self, session_id: str | None = None) -> DuplexSession:
        """A live or recently ended session; without an id, the most recently opened one."""
        if session_id is None:
            candidates = [*self.registry.closed.values(), *self.registry.sessions.values()]
            if not candidates:
                raise KeyError("no session yet")
            return max(candidates, key=lambda s: s.opened_at)
        found = self.registry.get(session_id)
        if found is None:
            raise KeyError(session_id)
        return found

    def appends(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The appends a session accepted, as `input_timeline.json`-shaped rows (§14)."""
        return list(self.session(session_id).appends)

    def history(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The conversation history as the model keeps it (acks bound assistant audio)."""
        return self.session(session_id).conversation.history()

    # --- HTTP and WebSocket ---

    def _process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        path = request.path.partition("?")[0]
        if path == "/health":
            return conn.respond(200, "ok\n")
        if path not in PATHS:
            return conn.respond(404, "not found\n")
        key = self.config.api_key
        if key is not None and not _authorized(request.headers, key):
            return conn.respond(401, "unauthorized\n")
        return None

    async def _handle(self, ws: ServerConnection) -> None:
        query = parse_qs((ws.request.path if ws.request else "").partition("?")[2])
        resume_only = query.get("resume", ["0"])[-1] in ("1", "true", "on")
        first_timeout = self.config.limits.first_message_timeout_s
        try:
            message = await asyncio.wait_for(ws.recv(), first_timeout)
        except TimeoutError:
            rej = Reject(ErrorCode.CONFIG_TIMEOUT, "no first message in time")
            await _send_all(ws, self.registry.handshake_error(rej, None))
            return
        except ConnectionClosed:
            return
        try:
            event = self._decode(message)
        except Reject as rej:
            await _send_all(ws, self.registry.handshake_error(rej, None))
            return
        etype = event.get("type")
        if self.config.faults.created_delay_ms:
            await asyncio.sleep(self.config.faults.created_delay_ms / 1000)
        now = asyncio.get_running_loop().time()
        if etype == "session.update" and not resume_only:
            session, outputs = self.registry.open(event, now)
            replaced = None
        elif etype == "session.resume":
            result = self.registry.resume(event, now)
            session, outputs, replaced = result.session, result.outputs, result.replaced_generation
        else:
            wrong = Reject(
                ErrorCode.BAD_EVENT,
                "the first message must be session.update or session.resume",
                "type",
            )
            outputs = self.registry.handshake_error(wrong, client_event_id(event))
            session = None
        if session is None:
            await _send_all(ws, outputs)
            return
        runner = self._runners.get(session.session_id)
        if runner is None:
            runner = self._runners[session.session_id] = _Runner(session, self._runner_finished)
        await self._attach(ws, runner, outputs, replaced)

    async def _attach(
        self, ws: ServerConnection, runner: _Runner, outputs: list[Output], replaced: int | None
    ) -> None:
        session = runner.session
        old = runner.attachment
        att = _Attachment(ws, runner)
        runner.attachment = att
        if old is not None and replaced is not None:
            old.replaced = True
            old.push(session.replaced_outputs(replaced), reserve=True)
            log.info("session %s: attachment %d replaced", session.session_id, replaced)
        runner.deliver(outputs)
        try:
            await self._read(ws, att, runner)
        finally:
            if runner.attachment is att:
                runner.attachment = None
                if not session.closed:
                    runner.deliver(session.detach(runner.now()))
                    if not session.closed:
                        log.info("session %s: detached", session.session_id)
            if att.closing:
                await att.drain()
            else:
                await att.stop()
            if (
                session.closed
                and self._runners.get(session.session_id) is runner
                and runner.attachment is None
            ):
                del self._runners[session.session_id]
                await runner.stop()

    async def _read(self, ws: ServerConnection, att: _Attachment, runner: _Runner) -> None:
        session = runner.session
        with contextlib.suppress(ConnectionClosed):
            async for message in ws:
                if att.replaced or session.closed:
                    continue
                try:
                    event = self._decode(message)
                except Reject as rej:
                    att.push(
                        [session.emitter.build(error_event(rej.code, rej.message, param=rej.param))]
                    )
                    continue
                runner.handle(event)
                if session.closed:
                    await att.drain()
                    return

    def _runner_finished(self, runner: _Runner) -> None:
        if runner.attachment is None and self._runners.get(runner.session.session_id) is runner:
            del self._runners[runner.session.session_id]

    def _decode(self, message: str | bytes) -> dict[str, Any]:
        """One text frame → JSON object, or `Reject` (binary, too large, not JSON)."""
        if isinstance(message, bytes):
            raise Reject(ErrorCode.BAD_EVENT, "binary frames are not part of the protocol", None)
        limit = self.config.limits.max_inbound_frame_bytes
        if len(message) > limit or (len(message) * 4 > limit and len(message.encode()) > limit):
            raise Reject(
                ErrorCode.EVENT_TOO_LARGE, f"frame above {limit} bytes was discarded", None
            )
        try:
            return loads(message)
        except CodecError as exc:
            raise Reject(ErrorCode.INVALID_JSON, str(exc)[:200], None) from None


def _authorized(headers: Headers, key: str) -> bool:
    value = headers.get("Authorization", "")
    scheme, _, given = value.partition(" ")
    ok = hmac.compare_digest(given.strip().encode(), key.encode())
    return scheme.lower() == "bearer" and ok


async def _send_all(ws: ServerConnection, outputs: list[Output]) -> None:
    with contextlib.suppress(ConnectionClosed):
        for out in outputs:
            if isinstance(out, Send):
                if out.code:
                    log.info("handshake refused: %s", out.code)
                await ws.send(out.data, text=True)
            else:
                await ws.close(out.code, out.reason[:120])
