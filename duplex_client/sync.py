"""Blocking facade for scripts and notebooks: `with SyncDuplexClient(url) as c: ...`."""

from duplex_client.client.sync import SyncDuplexClient, SyncResponseHandle, run_blocking

__all__ = ["SyncDuplexClient", "SyncResponseHandle", "run_blocking"]
