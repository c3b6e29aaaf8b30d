"""Blocking facade for scripts and notebooks: `with SyncDuplexClient(url) as c: ...`."""

from duplex_client.client.sync import SyncDuplexClient

__all__ = ["SyncDuplexClient"]
