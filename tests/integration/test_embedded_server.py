"""The embedded reference server runs in a child process that never outlives its run."""

from __future__ import annotations

import pytest

from duplex_client import DuplexClient, DuplexConnectionError
from duplex_client.run.embedded import embedded_server


async def test_embedded_server_serves_and_stops() -> None:
    async with embedded_server(profile="aura", engine="scripted") as url:
        assert url.startswith("ws://127.0.0.1:")
        async with DuplexClient(url, model="m") as client:
            assert client.capabilities.video_required
    with pytest.raises(DuplexConnectionError, match=r"refused|cannot connect"):
        await DuplexClient(url, model="m").connect()


async def test_embedded_server_start_failure_is_one_clear_error() -> None:
    with pytest.raises(DuplexConnectionError, match=r"did not start: error: .*bogus"):
        async with embedded_server(profile="bogus"):
            pass
