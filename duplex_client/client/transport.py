"""Target URL rules (protocol.md §1) and the message transport the session runs over."""

from __future__ import annotations

import ipaddress
import re
import socket
import ssl as ssl_module
from typing import TYPE_CHECKING, Protocol
from urllib.parse import SplitResult, parse_qsl, urlencode, urlsplit, urlunsplit

from duplex_client.framing.redact import safe_url
from duplex_client.protocol.dialects import DEFAULT_PATHS
from duplex_client.protocol.errors import DuplexConnectionError
from duplex_client.usage import UsageError

if TYPE_CHECKING:
    from websockets.asyncio.client import ClientConnection

_SCHEMES = {"http": "ws", "https": "wss", "ws": "ws", "wss": "wss"}
#: Client-side inbound frame limit (protocol.md §8).
CLIENT_MAX_FRAME_BYTES = 64 * 1024 * 1024
#: A host name: dot-separated labels of letters, digits, `-` and `_` (no spaces, no `@`).
_HOST = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,62})(?:\.[A-Za-z0-9_-]{1,63})*\.?")


def check_url(url: str) -> SplitResult:
    """The parts of a user URL (protocol.md §1), or a one-line `UsageError` naming it.

    ws, wss, http and https (or no scheme: ws), a host, and a port in 1..65535 if given.
    """
    text = url.strip() if isinstance(url, str) else ""
    shown = redact_url(text) if text else repr(url)
    if not text:
        how = "empty" if not url else "blank"
        raise UsageError(
            f"url is {how}: give ws://host:port or http://host:port, or no url at "
            "all for the embedded reference server",
            param="url",
        )
    if "://" not in text:
        text = "ws://" + text
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise UsageError(f"{shown}: not a URL ({exc})", param="url", keywords=()) from None
    if parts.scheme.lower() not in _SCHEMES:
        raise UsageError(
            f"{shown}: unsupported URL scheme {parts.scheme!r} (use ws, wss, http, https)",
            param="url",
            keywords=(),
        )
    host = parts.hostname
    if not host:
        raise UsageError(f"{shown}: URL has no host", param="url", keywords=())
    if not _HOST.fullmatch(host) and not _is_ip(host):
        raise UsageError(f"{shown}: not a URL (bad host {host!r})", param="url", keywords=())
    try:
        port = parts.port
    except ValueError as exc:
        problem = "port out of range (1-65535)" if "range" in str(exc) else "port is not a number"
        raise UsageError(f"{shown}: {problem}", param="url", keywords=()) from None
    if port == 0:
        raise UsageError(f"{shown}: port out of range (1-65535)", param="url", keywords=())
    return parts


def build_url(url: str, model: str | None, *, dialect: str = "duplex") -> str:
    """The WebSocket target for a user URL and model name (protocol.md §1).

    Without a model (None) the URL names none and the server uses the one it serves.
    Another dialect (docs/dialects.md) gets its own default path; `openai` only `model=`
    added, `gpt-live` nothing (the model goes in `session.start`).
    A bad URL raises `UsageError` (a `ValueError`) naming it.
    """
    parts = check_url(url)
    scheme = _SCHEMES[parts.scheme.lower()]
    path = parts.path if parts.path not in ("", "/") else DEFAULT_PATHS.get(dialect, "/v1/realtime")
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "autostart"]
    keys = {k for k, _ in query}
    if dialect != "duplex":
        if dialect == "openai" and "model" not in keys and model is not None:
            query.append(("model", model))
        return urlunsplit((scheme, parts.netloc, path, urlencode(query), ""))
    if "duplex" not in keys:
        query.append(("duplex", "1"))
    if "model" not in keys and model is not None:
        query.append(("model", model))
    query.append(("autostart", "0"))
    return urlunsplit((scheme, parts.netloc, path, urlencode(query), ""))


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def redact_url(url: str) -> str:
    """The URL without user info or credential-like query keys (for messages and records)."""
    try:
        return safe_url(url) or url
    except ValueError:  # unparseable (a bad port): no user info and no query, to be safe
        return re.sub(r"(?<=://)[^/@]*@", "", url).split("?", 1)[0].split("#", 1)[0]


class OpeningTimeout(DuplexConnectionError):
    """The WebSocket did not open in time (no upgrade answer)."""


class TransportClosed(Exception):
    """The transport's connection ended; `code`/`reason` are the close frame's, if any."""

    def __init__(self, code: int | None = None, reason: str = "") -> None:
        super().__init__(f"connection closed ({code}{': ' + reason if reason else ''})")
        self.code = code
        self.reason = reason


class Transport(Protocol):
    """A message pipe: whole JSON text frames out and in."""

    async def send(self, data: bytes) -> None:
        """Send one JSON text frame (UTF-8 bytes); raises `TransportClosed` when closed."""
        ...

    async def recv(self) -> str | bytes:
        """The next frame; raises `TransportClosed` when the connection ended."""
        ...

    async def close(self) -> None:
        """Close the connection (idempotent)."""
        ...


#: How long a starting vLLM-Omni holds a new duplex connection before its upgrade, at most:
#: `DUPLEX_WARMUP_CLIENT_WAIT_S` in `vllm_omni/entrypoints/duplex/warmup.py` (0.30.0).
SERVER_WARMUP_HOLD_S = 180.0
#: The client's default allowance for that hold, on top of its own opening timeout.
DEFAULT_WARMUP_S = SERVER_WARMUP_HOLD_S + 5.0


class WebSocketTransport:
    """`Transport` over a `websockets` client connection."""

    def __init__(self, conn: ClientConnection) -> None:
        from websockets.exceptions import ConnectionClosed
        from websockets.protocol import State

        self._conn = conn
        # Kept here: a function-level import costs about 3 µs on every send and receive.
        self._closed = ConnectionClosed
        self._open = State.OPEN
        #: Whether this websockets' connection has what `send_now` reads (17.x's asyncio
        #: connection does); without it every frame goes through `send`.
        self.writes_at_once = all(
            hasattr(conn, name) for name in ("send_in_progress", "paused", "send_data")
        )
        #: Seconds opening took: TCP, TLS and the upgrade (a warming-up server holds the last).
        self.opening_s = 0.0

    @classmethod
    async def connect(
        cls,
        url: str,
        *,
        api_key: str | None = None,
        ssl: ssl_module.SSLContext | bool | None = None,
        open_timeout: float = 10.0,
        max_size: int = CLIENT_MAX_FRAME_BYTES,
        proxy: bool = False,
        warmup_s: float = 0.0,
    ) -> WebSocketTransport:
        """Open the WebSocket; failures become `DuplexConnectionError` with a one-line message.

        `warmup_s`: how much longer than `open_timeout` opening may take, for a starting
        vLLM-Omni that holds the upgrade until its warm-up is done (a refused connection
        still fails at once).
        """
        import time

        from websockets.asyncio.client import connect
        from websockets.exceptions import InvalidStatus, WebSocketException

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else None
        kwargs: dict[str, object] = {}
        if ssl is not None and ssl is not False:
            kwargs["ssl"] = ssl
        target = redact_url(url)
        warmup_s = max(0.0, warmup_s)
        started = time.monotonic()
        try:
            conn = await connect(
                url,
                additional_headers=headers,
                open_timeout=open_timeout + warmup_s,
                max_size=max_size,
                compression=None,
                proxy=True if proxy else None,
                ping_interval=20,
                ping_timeout=20,
                close_timeout=5,
                **kwargs,  # type: ignore[arg-type]
            )
        except InvalidStatus as exc:
            status = exc.response.status_code
            raise DuplexConnectionError(
                f"{target}: server rejected the WebSocket upgrade with HTTP {status}"
                f"{_STATUS_HINTS.get(status, _status_hint(status))}"
            ) from None
        except TimeoutError:
            if warmup_s:
                raise OpeningTimeout(
                    f"{target}: no answer to the WebSocket upgrade within "
                    f"{open_timeout + warmup_s:g} s, though GET /health answers: the server "
                    "may still be warming up (vLLM-Omni holds new duplex connections until its "
                    f"start-up warm-up is done, up to {SERVER_WARMUP_HOLD_S:g} s)"
                ) from None
            raise OpeningTimeout(
                f"{target}: timed out opening the connection (no answer within {open_timeout:g} s)"
            ) from None
        except (OSError, WebSocketException) as exc:
            old = _old_http_status(exc)
            if old is not None:  # an HTTP/1.0 server (python -m http.server) answered
                raise DuplexConnectionError(
                    f"{target}: server rejected the WebSocket upgrade with HTTP {old}"
                    f"{_STATUS_HINTS.get(old, _status_hint(old))}"
                ) from None
            raise DuplexConnectionError(
                f"{target}: cannot connect: {_describe(exc, url)}"
            ) from None
        transport = cls(conn)
        transport.opening_s = time.monotonic() - started
        return transport

    async def send(self, data: bytes) -> None:
        """Send bytes as one text frame."""
        try:
            await self._conn.send(data, text=True)
        except self._closed as exc:
            raise TransportClosed(*_close_info(exc)) from None

    def send_now(self, data: bytes) -> bool:
        """Write `data` as one text frame now if `send` would not wait; False if it would.

        The frame is the one `send` writes (the same protocol object frames it). `send` waits
        while another message goes out in fragments or the socket's buffer is full, and reports
        a connection that is not open: those cases are left to it. What `send` adds on the way
        (an async context manager, an async generator, its drain) is most of a send's Python
        work for the small frames a stream writes five times a second.
        """
        conn = self._conn
        if (
            conn.send_in_progress is not None
            or conn.paused
            or conn.protocol.state is not self._open
            or conn.transport.is_closing()
        ):
            return False
        conn.protocol.send_text(data)
        conn.send_data()
        return True

    async def recv(self) -> str | bytes:
        """Receive one frame."""
        try:
            return await self._conn.recv()
        except self._closed as exc:
            raise TransportClosed(*_close_info(exc)) from None

    async def close(self) -> None:
        """Close with code 1000."""
        await self._conn.close()


_STATUS_HINTS = {
    401: " (wrong or missing API key)",
    403: " (forbidden)",
    404: " (no WebSocket endpoint at this path)",
}


def _status_hint(status: int) -> str:
    if status < 400:
        return " (an HTTP endpoint, not a WebSocket one)"
    return " (server error)" if status >= 500 else ""


def _old_http_status(exc: BaseException) -> int | None:
    """The status of an HTTP/1.0 answer websockets refused as "not a valid HTTP response"."""
    import re

    from websockets.exceptions import InvalidMessage

    if not isinstance(exc, InvalidMessage) or exc.__cause__ is None:
        return None
    found = re.search(r"HTTP/1\.[01] (\d{3})\b", str(exc.__cause__))
    return int(found.group(1)) if found else None


def _describe(exc: BaseException, url: str) -> str:
    """One line for a failed connection attempt."""
    from websockets.exceptions import InvalidHandshake

    tls = url.lower().startswith(("wss:", "https:"))
    if isinstance(exc, ssl_module.SSLCertVerificationError):
        return f"TLS certificate rejected ({exc.verify_message or exc.reason})"
    if isinstance(exc, ssl_module.SSLError):
        hint = " (is it a plain ws:// server?)" if tls else ""
        return f"TLS handshake failed ({exc.reason or exc}){hint}"
    if tls and isinstance(exc, ConnectionResetError | EOFError | ssl_module.SSLEOFError):
        return (
            "TLS handshake failed: the server dropped the connection (is it a plain ws:// server?)"
        )
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (is the server running on that host and port?)"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host ({exc.strerror or exc})"
    if isinstance(exc, InvalidHandshake):
        return f"not a WebSocket server ({exc})"
    return str(exc) or type(exc).__name__


def _close_info(exc: Exception) -> tuple[int | None, str]:
    rcvd = getattr(exc, "rcvd", None)
    if rcvd is None:
        return None, ""
    return int(rcvd.code), str(rcvd.reason)
