"""`python -m duplex_client.server`: the reference server in a process of its own.

Prints `listening <url>` once it is bound, then serves until SIGINT/SIGTERM or until its
standard input closes (so it never outlives a parent that started it with a pipe).
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

from duplex_client.families import DEFAULT_FAMILY
from duplex_client.protocol.dialects import DIALECTS
from duplex_client.server.app import ReferenceServer


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m duplex_client.server", description=__doc__)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--profile", default=DEFAULT_FAMILY)
    p.add_argument("--engine", choices=("speech", "scripted"), default=None)
    p.add_argument("--require-audio", action="store_true")
    p.add_argument("--max-sessions", type=int, default=1)
    p.add_argument("--script", default=None, help="a JSON script for the scripted engine")
    p.add_argument("--first-unit-ms", type=int, default=None)
    p.add_argument("--dialect", choices=DIALECTS, default="duplex")
    p.add_argument("--watch-stdin", action="store_true", help="exit when stdin closes")
    return p


async def _serve(args: argparse.Namespace) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    if args.watch_stdin:
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

        async def watch() -> None:
            await reader.read()  # returns at EOF: the parent is gone or done
            stop.set()

        watcher = asyncio.create_task(watch())
    from duplex_client.server.engine.script import Script
    from duplex_client.server.limits import Limits

    server = ReferenceServer(
        host=args.host,
        port=args.port,
        profile=args.profile,
        require_audio=args.require_audio,
        engine=args.engine,
        script=Script.load(args.script) if args.script else None,
        limits=Limits(max_sessions=args.max_sessions),
        first_unit_ms=args.first_unit_ms,
        dialect=args.dialect,
    )
    async with server:
        print(f"listening {server.url}", flush=True)
        await stop.wait()
    if args.watch_stdin:
        watcher.cancel()


def main(argv: list[str] | None = None) -> int:
    """Parse options and serve until stopped."""
    args = _parser().parse_args(argv)
    try:
        asyncio.run(_serve(args))
    except (ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
