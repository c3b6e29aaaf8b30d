"""`DuplexClient`: the session client over a real WebSocket (connect, resume, context manager)."""

from __future__ import annotations

import logging
import ssl as ssl_module
import time
from types import TracebackType
from typing import Any

from duplex_client.client.config import SessionConfig
from duplex_client.client.dialect import DialectTransport
from duplex_client.client.resume import ReconnectPolicy
from duplex_client.client.session import DuplexClientBase
from duplex_client.client.transport import (
    DEFAULT_WARMUP_S,
    OpeningTimeout,
    Transport,
    WebSocketTransport,
    build_url,
)
from duplex_client.protocol import server_events as se
from duplex_client.protocol.capabilities import DEFAULT_CHUNK_PERIOD_MS
from duplex_client.protocol.dialects import DIALECTS, client_mapping
from duplex_client.usage import UsageError

log = logging.getLogger("duplex_client")
#: An opening slower than this was held by the server (a warm-up), not slowed by the network.
HELD_AFTER_S = 2.0


class DuplexClient(DuplexClientBase):
    """Async context manager over a real WebSocket session (protocol.md §1–§2, §6.1).

    By default a dropped socket is answered by reconnecting and resuming the session
    (protocol.md §6.1, `ReconnectPolicy()`); `reconnect=False` makes a drop end the session.

    `handshake_timeout` bounds the whole connection: TCP connect, TLS, the WebSocket upgrade
    and `session.created`. `open_timeout` (seconds) bounds the opening alone, and then the
    handshake gets all of `handshake_timeout` after it. A starting vLLM-Omni holds the
    upgrade until its warm-up is done (up to 180 s): opening may take `warmup_timeout` more,
    a hold does not count against the handshake, and `warmup_held_s` says how long it was.
    `model=None` names no model (the server uses its own). A bad URL raises `UsageError`.

    `dialect` (docs/dialects.md): the wire the endpoint speaks; `duplex` (ours), `openai`
    (OpenAI Realtime GA) or `gpt-live` (GPT-Live), mapped to and from the same events, with
    synthesised capabilities whose grid is `dialect_grid_ms` (the client's own chunking).
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
        warmup_timeout: float = DEFAULT_WARMUP_S,
        dialect: str = "duplex",
        dialect_grid_ms: int = DEFAULT_CHUNK_PERIOD_MS,
        **options: Any,
    ) -> None:
        if dialect not in DIALECTS:
            raise UsageError(
                f"dialect {dialect!r} is not one of {', '.join(DIALECTS)}", param="dialect"
            )
        super().__init__(model=model, config=config, reconnect=reconnect, **options)
        #: The wire the endpoint speaks (docs/dialects.md).
        self.dialect = dialect
        self._dialect_grid_ms = dialect_grid_ms
        self.url = build_url(url, model, dialect=dialect)
        self._api_key = api_key
        self._ssl = ssl
        self._open_timeout = open_timeout
        self._proxy = proxy
        self.warmup_timeout = warmup_timeout
        #: How long the last opening waited beyond a normal one: a server warming up (0: none).
        self.warmup_held_s = 0.0

    async def _open_transport(self) -> Transport:
        """Open the socket; an upgrade held past the timeout is waited for if /health answers.

        A starting vLLM-Omni answers `GET /health` but holds the upgrade until its warm-up is
        done; a host that answers neither fails within the timeout (and a short probe).
        """
        timeout = self.handshake_timeout if self._open_timeout is None else self._open_timeout
        started = time.monotonic()
        try:
            transport = await self._connect(timeout, 0.0)
        except OpeningTimeout as exc:
            if self.warmup_timeout <= 0 or not await self._health_answers(min(1.0, timeout)):
                raise
            log.warning(
                "%s; GET /health answers: waiting for a warm-up (up to %g s)",
                exc,
                self.warmup_timeout,
            )
            transport = await self._connect(timeout, self.warmup_timeout)
        opening = time.monotonic() - started
        held = opening > HELD_AFTER_S
        self.warmup_held_s = round(opening, 3) if held else 0.0
        if held:
            log.warning(
                "the server held the connection %.1f s before accepting it (warming up?)", opening
            )
        return transport

    async def _connect(self, timeout: float, warmup_s: float) -> Transport:
        transport = await WebSocketTransport.connect(
            self.url,
            api_key=self._api_key,
            ssl=self._ssl,
            open_timeout=timeout,
            proxy=self._proxy,
            warmup_s=warmup_s,
        )
        mapping = client_mapping(self.dialect, grid_ms=self._dialect_grid_ms)
        return transport if mapping is None else DialectTransport(transport, mapping)

    async def _health_answers(self, timeout_s: float) -> bool:
        """Whether `GET /health` answers 2xx within `timeout_s` (the server is up, not mute)."""
        from duplex_client.client.http import HttpProbeError, fetch_health

        try:
            health = await fetch_health(self.url, api_key=self._api_key, timeout_s=timeout_s)
        except HttpProbeError:
            return False
        return health.ok

    async def connect(self) -> se.SessionCreated:
        """Open the socket and run the handshake, within `handshake_timeout` in all.

        A warm-up hold (an opening longer than `HELD_AFTER_S`) does not count: the handshake
        then gets the whole `handshake_timeout` for `session.created`.
        """
        started = time.monotonic()
        transport = await self._open_transport()
        budget = None
        if self._open_timeout is None:
            spent = 0.0 if self.warmup_held_s else time.monotonic() - started
            budget = max(0.0, self.handshake_timeout - spent)
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
