"""A TCP proxy for fault tests: forwards bytes, can swallow the client's side and cut sockets.

`blackhole = True` drops what the client sends (it is written to the socket but never
reaches the server: the appends "lost in flight" that a resume must resend); `cut()` aborts
every open connection, both sides, like a network failure.
"""

from __future__ import annotations

import asyncio
import contextlib


class FaultyProxy:
    """`async with FaultyProxy(port) as proxy: proxy.url` forwards to 127.0.0.1:`port`."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.blackhole = False
        self.swallowed = 0
        self.connections = 0
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        """`ws://127.0.0.1:<port>`."""
        assert self._server is not None
        return f"ws://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def __aenter__(self) -> FaultyProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.cut()
        assert self._server is not None
        self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def cut(self) -> None:
        """Abort every open connection on both sides."""
        for writer in self._writers:
            writer.transport.abort()
        self._writers.clear()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        self._writers += [writer, up_writer]
        pumps = [
            asyncio.create_task(self._pump(reader, up_writer, from_client=True)),
            asyncio.create_task(self._pump(up_reader, writer, from_client=False)),
        ]
        self._tasks.update(pumps)
        await asyncio.gather(*pumps, return_exceptions=True)
        self._tasks.difference_update(pumps)

    async def _pump(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, *, from_client: bool
    ) -> None:
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            while data := await reader.read(65536):
                if from_client and self.blackhole:
                    self.swallowed += len(data)
                    continue
                writer.write(data)
                await writer.drain()
        writer.transport.abort()
