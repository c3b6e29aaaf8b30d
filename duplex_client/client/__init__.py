"""Asyncio session client over a transport (WebSocket)."""

from duplex_client.client.config import SessionConfig, redact, ref_audio_data_url
from duplex_client.client.queues import Broadcaster, DropOldestQueue, Subscription
from duplex_client.client.responses import Decision, ResponseHandle, ResponseTracker
from duplex_client.client.resume import ReconnectPolicy
from duplex_client.client.session import DuplexClientBase, EventListener
from duplex_client.client.transport import Transport, TransportClosed, WebSocketTransport, build_url
from duplex_client.client.websocket import DuplexClient

__all__ = [
    "Broadcaster",
    "Decision",
    "DropOldestQueue",
    "DuplexClient",
    "DuplexClientBase",
    "EventListener",
    "ReconnectPolicy",
    "ResponseHandle",
    "ResponseTracker",
    "SessionConfig",
    "Subscription",
    "Transport",
    "TransportClosed",
    "WebSocketTransport",
    "build_url",
    "redact",
    "ref_audio_data_url",
]
