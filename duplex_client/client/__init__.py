"""Asyncio session client over a transport (WebSocket)."""

from duplex_client.client.config import SessionConfig, redact, ref_audio_data_url
from duplex_client.client.connection import ClientConnection
from duplex_client.client.effects import LocalProtocolError, Output, SessionEndedError, State
from duplex_client.client.queues import Broadcaster, DropOldestQueue, Subscription
from duplex_client.client.responses import Decision, ResponseHandle, ResponseTracker
from duplex_client.client.resume import ReconnectPolicy
from duplex_client.client.session import DuplexClientBase, EventListener
from duplex_client.client.tools import CallRecord, FunctionCall
from duplex_client.client.transport import Transport, TransportClosed, WebSocketTransport, build_url
from duplex_client.client.websocket import DuplexClient

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
