"""Asyncio session client over a transport (WebSocket): the shell of the sans-I/O session.

`ClientConnection`, the response state and `SessionConfig` are the pure core's
(`duplex_client.protocol.session`), re-exported here.
"""

from duplex_client.client.config import ref_audio_data_url
from duplex_client.client.queues import Broadcaster, DropOldestQueue, Subscription
from duplex_client.client.responses import ResponseHandle
from duplex_client.client.resume import ReconnectPolicy
from duplex_client.client.session import DuplexClientBase, EventListener
from duplex_client.client.tools import CallRecord, FunctionCall
from duplex_client.client.transport import Transport, TransportClosed, WebSocketTransport, build_url
from duplex_client.client.websocket import DuplexClient
from duplex_client.protocol.session import (
    ClientConnection,
    Decision,
    LocalProtocolError,
    Output,
    ResponseTracker,
    SessionConfig,
    SessionEndedError,
    State,
    redact,
)

__all__ = [
    "Broadcaster",
    "CallRecord",
    "ClientConnection",
    "Decision",
    "DropOldestQueue",
    "DuplexClient",
    "DuplexClientBase",
    "EventListener",
    "FunctionCall",
    "LocalProtocolError",
    "Output",
    "ReconnectPolicy",
    "ResponseHandle",
    "ResponseTracker",
    "SessionConfig",
    "SessionEndedError",
    "State",
    "Subscription",
    "Transport",
    "TransportClosed",
    "WebSocketTransport",
    "build_url",
    "redact",
    "ref_audio_data_url",
]
