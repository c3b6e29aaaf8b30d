"""How many sessions an endpoint takes at once: asked before the eval, learned from refusals.

(How many the client can pace is `eval.cost.Admission`'s.)

Before items run with `concurrency` above one, each endpoint is asked once, as `duplex-cli
check` does: a session is opened with the items' own config and closed, and its capabilities
read. A server that says `supports_multi_session: false` takes one session at a time, so the
eval runs one item at a time there (a note says so) instead of being refused the rest. A
server that says nothing keeps `concurrency`; a later refusal at capacity (`resource_exhausted`)
holds the extra items back (`EndpointPool.refused`), never counting as a fault.
"""

from __future__ import annotations

import contextlib
import re
from typing import Final

from duplex_client.client.websocket import DuplexClient
from duplex_client.protocol.errors import DuplexClientError, ErrorCode
from duplex_client.run.options import RunOptions
from duplex_client.run.prepare import prepare

#: The error codes a server refuses a session with when it is at its session limit.
CAPACITY_CODES: Final = (ErrorCode.RESOURCE_EXHAUSTED, "duplex_session_busy")
_CAPACITY = re.compile(rf"\b({'|'.join(map(re.escape, CAPACITY_CODES))})\b")


def is_capacity_refusal(error: str | None) -> bool:
    """Whether a run's error says the server refused the session at its session limit."""
    return error is not None and _CAPACITY.search(error) is not None


async def session_limit(url: str, options: RunOptions, model: str | None) -> int | None:
    """1 when the server says it holds one session at a time; None when it does not say (or
    the probe session could not open: the items will find out, and say why)."""
    client = DuplexClient(
        url,
        model=model,
        config=prepare(options).config,
        api_key=options.api_key,
        handshake_timeout=options.handshake_timeout_s,
        close_timeout=5.0,
        heartbeat_interval_s=None,
        reconnect=False,
    )
    try:
        await client.connect()
    except DuplexClientError:
        return None
    stated = client.capabilities.raw.get("supports_multi_session")
    with contextlib.suppress(Exception):  # the answer is in; a slow close changes nothing
        await client.close()
    return 1 if stated is False else None
