"""`DuplexClient`: the session client over a real WebSocket (connect, resume, context manager)."""

from __future__ import annotations

import ssl as ssl_module
import time
from types import TracebackType
from typing import Any

from duplex_client.client.config import SessionConfig
from duplex_client.client.resume import ReconnectPolicy
from duplex_client.client.session import DuplexClientBase
from duplex_client.client.transport import Transport, WebSocketTransport, build_url
from duplex_client.protocol import server_events as se


class DuplexClient(DuplexClientBase):
    """Async context manager over a real WebSocket session (protocol.md §1–§2, §6.1).

    By default a dropped socket is answered by reconnecting and resuming the session
    (protocol.md §6.1, `ReconnectPolicy()`); `reconnect=False` makes a drop end the session.

    `handshake_timeout` bounds the whole connection: TCP connect, TLS, the WebSocket upgrade
    and `session.created`. `open_timeout` (seconds) bounds the opening alone, and then the
    handshake gets all of `handshake_timeout` after it. `model=None` names no model (the
    server uses its own). A bad URL raises `UsageError` at once.
    """

    def __init__(
        self,
        url: str,
        *,
        model: str | None = "openbmb/MiniCPM-o-4_5",
        config: SessionConfig | None = None,
        api_key: str | None = None,
        ssl: ssl_module.SSLContext | bool | None = None,
        open_timeout: float | None = None,
        proxy: bool = False,
        reconnect: ReconnectPolicy | bool | None = True,
        **options: Any,
    ) -> None:
        super().__init__(model=model, config=config, reconnect=reconnect, **options)
        self.url = build_url(url, model)
        self._api_key = api_key
        self._ssl = ssl
        self._open_timeout = open_timeout
        self._proxy = proxy

    async def _open_transport(self) -> Transport:
        timeout = self.handshake_timeout if self._open_timeout is None else self._open_timeout
        return await WebSocketTransport.connect(
            self.url,
            api_key=self._api_key,
            ssl=self._ssl,
            open_timeout=timeout,
            proxy=self._proxy,
        )

    async def connect(self) -> se.SessionCreated:
        """Open the socket and run the handshake, within `handshake_timeout` in all."""
        started = time.monotonic()
        transport = await self._open_transport()
        budget = None
        if self._open_timeout is None:
            budget = max(0.0, self.handshake_timeout - (time.monotonic() - started))
        return await self.open(transport, reconnect_with=self._open_transport, budget_s=budget)

    async def __aenter__(self) -> DuplexClient:
        await self.connect()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
