"""The sans-I/O session state machine: client events in, server events out, time injected."""

from duplex_client.server.session.machine import MAX_APPEND_ROWS, DuplexSession

__all__ = ["MAX_APPEND_ROWS", "DuplexSession"]
