"""`detect_dialect`: ask an endpoint which wire it speaks before a run builds its session.

One short connection: the path decides GPT-Live without one; otherwise the probe frame goes
out and the endpoint's first frame decides (`protocol.dialects.detect`). A duplex endpoint
opens no session for it, so nothing is held or billed; the connection is closed at once.
"""

from __future__ import annotations

import asyncio
import contextlib

from duplex_client.client.transport import TransportClosed, WebSocketTransport, build_url
from duplex_client.protocol.codec import CodecError, loads
from duplex_client.protocol.dialects.detect import (
    PROBE_FRAME,
    Detected,
    from_first_frame,
    from_path,
)
from duplex_client.protocol.errors import DuplexClientError

__all__ = ["detect_dialect"]


async def detect_dialect(
    url: str, *, model: str | None, api_key: str | None, timeout_s: float
) -> Detected | None:
    """The dialect `url` speaks as its wire shows it, or None when it shows none in
    `timeout_s` (unreachable, silent, another answer): the caller takes `duplex`."""
    by_path = from_path(url)
    if by_path is not None:
        return by_path
    try:
        transport = await WebSocketTransport.connect(
            build_url(url, model), api_key=api_key, open_timeout=timeout_s
        )
    except DuplexClientError:
        return None  # the run's own connection says what is wrong
    try:
        with contextlib.suppress(TransportClosed):
            await transport.send(PROBE_FRAME)  # an OpenAI endpoint has spoken already
        frame = await asyncio.wait_for(transport.recv(), timeout_s)
        return from_first_frame(loads(frame)) if isinstance(frame, str) else None
    except (TimeoutError, TransportClosed, CodecError):
        return None
    finally:
        with contextlib.suppress(Exception):
            await transport.close()
