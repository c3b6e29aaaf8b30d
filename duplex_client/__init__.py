"""duplex-client: SDK for full-duplex realtime sessions with omni models."""

__version__ = "0.1.0"
