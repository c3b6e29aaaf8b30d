"""Fixtures: an in-process reference server on 127.0.0.1 port 0 per test."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import pytest

from duplex_client.server import ReferenceServer

MakeServer = Callable[..., Awaitable[ReferenceServer]]


@pytest.fixture
async def make_server() -> AsyncIterator[MakeServer]:
    """Start servers with config overrides (scripted engine unless told); stopped at the end."""
    async with AsyncExitStack() as stack:

        async def make(**overrides: Any) -> ReferenceServer:
            overrides.setdefault("engine", "scripted")
            return await stack.enter_async_context(ReferenceServer(**overrides))

        yield make


@pytest.fixture
async def server(make_server: MakeServer) -> ReferenceServer:
    """A default (minicpmo) server."""
    return await make_server()
