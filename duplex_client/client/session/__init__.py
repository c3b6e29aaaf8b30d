"""The asyncio session client: the client class, its state views and G.711 input encoding."""

from duplex_client.client.session.client import (
    DuplexClientBase,
    EventListener,
    PcmArray,
    Subscription,
)
from duplex_client.client.session.g711 import encode_g711
from duplex_client.client.session.state import SessionState

__all__ = [
    "DuplexClientBase",
    "EventListener",
    "PcmArray",
    "SessionState",
    "Subscription",
    "encode_g711",
]
