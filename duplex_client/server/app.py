"""The network envelope (websockets: routing, auth, attachments, timers) and `ReferenceServer`."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from typing import Any, cast
from urllib.parse import parse_qs

from websockets.asyncio.server import Server, ServerConnection, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed
from websockets.http11 import Request, Response
from websockets.protocol import State

from duplex_client.protocol.codec import CodecError, NotAnObjectError, loads
from duplex_client.protocol.dialects import server_mapping
from duplex_client.protocol.dialects.gpt_live import LIVE_PATH  # served too in that dialect
from duplex_client.protocol.errors import ErrorCode
from duplex_client.server import playback
from duplex_client.server.attachment import Attachment, Runner
from duplex_client.server.config import WARMUP_HOLD_S, ServerConfig
from duplex_client.server.dialect_socket import DialectSocket
from duplex_client.server.emitter import Output, Send
from duplex_client.server.errors import Reject, error_event
from duplex_client.server.registry import Registry
from duplex_client.server.session import DuplexSession

log = logging.getLogger("duplex_client.server")
PATHS = ("/v1/realtime", "/v1/duplex")
#: `duplex=` values that ask `/v1/realtime` for the turn-based handler (`/v1/duplex` ignores it).
_OFF = ("0", "false", "off", "no")
_ON = ("1", "true", "on", "yes")


def _flag(query: dict[str, list[str]], key: str) -> str:
    return query.get(key, [""])[-1].strip().lower()


def _default_open(model: str) -> dict[str, Any]:
    """The session a handler opens by itself (upstream's default payload: the URL's model)."""
    return {"type": "session.update", "session": {"model": model} if model else {}}


class ReferenceServer:
    """The bundled reference server; `async with ReferenceServer(profile=...) as s: s.url`."""

    def __init__(self, config: ServerConfig | None = None, **overrides: Any) -> None:
        if config is None:
            config = ServerConfig(**overrides)
        elif overrides:
            raise TypeError("pass either a ServerConfig or keyword overrides, not both")
        self.config = config
        self.registry = Registry(config)
        self._runners: dict[str, Runner] = {}
        self._server: Server | None = None
        self._port = config.port
        #: When the warm-up ends (loop time), set at start; None: no warm-up.
        self.warm_at: float | None = None

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
            # a warm-up holds the opening handshake: it must not time out meanwhile
            open_timeout=10 + (WARMUP_HOLD_S if self.config.warmup_s > 0 else 0),
            ping_interval=20,
            ping_timeout=60,
            close_timeout=2,
        )
        self._port = self._server.sockets[0].getsockname()[1]
        if self.config.warmup_s > 0:
            self.warm_at = asyncio.get_running_loop().time() + self.config.warmup_s
        log.info("reference server listening on %s (profile %s)", self.url, self.config.profile)

    async def stop(self) -> None:
        """End every session (`session.closed {reason: "shutdown"}`) and stop serving."""
        for runner in list(self._runners.values()):
            runner.deliver(runner.session.shut_down(runner.now()))
            if runner.attachment is not None:  # let the notice out, briefly
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(runner.attachment.drain(), 1.0)
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
            return max(candidates, key=lambda s: s.life.opened_at)
        found = self.registry.get(session_id)
        if found is None:
            raise KeyError(session_id)
        return found

    def appends(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The appends a session accepted, as `input_timeline.json`-shaped rows (§10)."""
        return list(self.session(session_id).ledger.appends)

    def history(self, session_id: str | None = None) -> list[dict[str, Any]]:
        """The conversation history as the model keeps it (acks bound assistant audio)."""
        return playback.history(self.session(session_id).conversation)

    # --- HTTP and WebSocket ---

    async def _process_request(self, conn: ServerConnection, request: Request) -> Response | None:
        path, _, query = request.path.partition("?")
        if path == "/health":
            return conn.respond(200, "ok\n")
        served = self.config.served_model
        paths = (*PATHS, LIVE_PATH) if self.config.dialect == "gpt-live" else PATHS
        if path not in paths and not (path == "/v1/models" and served is not None):
            return conn.respond(404, "not found\n")
        key = self.config.api_key
        if key is not None and not _authorized(request.headers, key):
            return conn.respond(401, "unauthorized\n")
        if path == "/v1/models":
            listing = {"object": "list", "data": [{"id": served, "object": "model"}]}
            response = conn.respond(200, json.dumps(listing))
            response.headers["Content-Type"] = "application/json"
            return response
        await self._hold_for_warmup(query)
        return None

    async def _hold_for_warmup(self, query: str) -> None:
        """Hold a new connection, before its upgrade, until the warm-up is over.

        As vLLM-Omni 0.30.0's `_wait_for_duplex_warmup` (`entrypoints/openai/api_server.py`):
        the warm-up's own connection (`vllm_omni_warmup=1`) passes, and no one waits more than
        `WARMUP_HOLD_S`.
        """
        if self.warm_at is None or parse_qs(query).get("vllm_omni_warmup", [""])[-1] == "1":
            return
        wait = min(self.warm_at - asyncio.get_running_loop().time(), WARMUP_HOLD_S)
        if wait > 0:
            log.info("holding a connection %.1f s for the warm-up", wait)
            await asyncio.sleep(wait)

    async def _handle(self, ws: ServerConnection) -> None:
        try:
            await self._serve(ws)
        except Exception as exc:  # the handler itself failed, as upstream's catch-all answers
            log.exception("duplex websocket session failed")
            rej = Reject(ErrorCode.REALTIME_INPUT_FAILED, str(exc)[:200] or type(exc).__name__)
            await _send_all(ws, self.registry.handshake_error(rej, None, close_code=1011))

    async def _serve(self, ws: ServerConnection) -> None:
        target = ws.request.path if ws.request else ""
        query = parse_qs(target.partition("?")[2])
        mapping = server_mapping(self.config.dialect)
        if mapping is not None:  # another wire (docs/dialects.md)
            ws = cast(ServerConnection, DialectSocket(ws, mapping))
        if mapping is not None and mapping.speaks_first:  # the session opens at the upgrade
            now = asyncio.get_running_loop().time()
            model = query.get("model", [""])[-1]
            refused = self.registry.wrong_model(model)
            if refused is not None:
                await _send_all(ws, refused)
                return
            session, outputs = self.registry.open(mapping.opening(model), now)
            if session is None:
                await _send_all(ws, outputs)
                return
            opened = self._runners[session.session_id] = Runner(session, self._runner_finished)
            await self._attach(ws, opened, outputs, None)
            return
        if target.partition("?")[0] == PATHS[0] and _flag(query, "duplex") in _OFF:
            await _send_all(ws, self.registry.refuse_turn_based())  # no turn-based handler
            return
        refused = self.registry.wrong_model(query.get("model", [""])[-1])
        if refused is not None:  # as the `openai.py` dispatcher: before any message
            await _send_all(ws, refused)
            return
        model = query.get("model", [""])[-1]
        # vLLM-Omni 0.30.0 `RealtimeEnvelope`: `resume=1` or `autostart=0` makes the handler
        # wait for the client's first message; otherwise `?model=` opens a session at once
        resume_only = _flag(query, "resume") in _ON or _flag(query, "autostart") in _OFF
        pending: dict[str, Any] | None = None
        if model and not resume_only:
            now = asyncio.get_running_loop().time()
            session, outputs = self.registry.open(_default_open(model), now)
            replaced = None
        else:
            first = await self._first_message(ws)
            if first is None:
                return
            event, now = first
            etype = event.get("type")
            if etype == "session.resume":
                result = self.registry.resume(event, now)
                session, outputs = result.session, result.outputs
                replaced = result.replaced_generation
            elif etype == "session.update":
                session, outputs = self.registry.open(event, now)
                replaced = None
            else:  # any other first message opens the default session and then runs
                session, outputs = self.registry.open(_default_open(model), now)
                replaced, pending = None, event
        if session is None:
            await _send_all(ws, outputs)
            return
        runner = self._runners.get(session.session_id)
        if runner is None:
            runner = self._runners[session.session_id] = Runner(session, self._runner_finished)
        await self._attach(ws, runner, outputs, replaced, pending)

    async def _first_message(self, ws: ServerConnection) -> tuple[dict[str, Any], float] | None:
        """The client's first event and when it came; None after a handshake error (sent)."""
        first_timeout = self.config.limits.first_message_timeout_s
        try:
            message = await asyncio.wait_for(ws.recv(), first_timeout)
        except TimeoutError:
            rej = Reject(ErrorCode.CONFIG_TIMEOUT, "no first message in time")
            await _send_all(ws, self.registry.handshake_error(rej, None))
            return None
        except ConnectionClosed:
            return None
        try:
            event = self._decode(message)
        except Reject as rej:
            await _send_all(ws, self.registry.handshake_error(rej, None))
            return None
        if self.config.faults.created_delay_ms:
            # the delay ends early when the client goes away (or the server stops)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(ws.wait_closed(), self.config.faults.created_delay_ms / 1000)
            if ws.state is State.CLOSED:
                return None
        return event, asyncio.get_running_loop().time()

    async def _attach(
        self,
        ws: ServerConnection,
        runner: Runner,
        outputs: list[Output],
        replaced: int | None,
        pending: dict[str, Any] | None = None,
    ) -> None:
        session = runner.session
        old = runner.attachment
        att = Attachment(ws, runner)
        runner.attachment = att
        if old is not None and replaced is not None:
            old.replaced = True
            old.push(session.replaced_outputs(replaced), reserve=True)
            log.info("session %s: attachment %d replaced", session.session_id, replaced)
        runner.deliver(outputs)
        if pending is not None:  # the first message that opened a default session
            runner.handle(pending)
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

    async def _read(self, ws: ServerConnection, att: Attachment, runner: Runner) -> None:
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

    def _runner_finished(self, runner: Runner) -> None:
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
        except NotAnObjectError:
            raise Reject(ErrorCode.BAD_EVENT, "a realtime event must be a JSON object") from None
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
