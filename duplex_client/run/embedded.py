"""The embedded reference server: a child process on a loopback port, for one run.

It runs in its own process so that the speech engine's CPU bursts (ASR and TTS hold the
GIL for up to a few hundred ms) never delay the client's media clock.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import tempfile
from collections.abc import AsyncIterator

from duplex_client.families import DEFAULT_FAMILY
from duplex_client.protocol.errors import DuplexConnectionError


@contextlib.asynccontextmanager
async def embedded_server(
    *,
    profile: str = DEFAULT_FAMILY,
    require_audio: bool = False,
    engine: str | None = None,
    max_sessions: int = 1,
    script: str | None = None,
    startup_timeout_s: float = 60.0,
    dialect: str = "duplex",
) -> AsyncIterator[str]:
    """Start `python -m duplex_client.server` on 127.0.0.1:0 and yield its URL."""
    args = ["--port", "0", "--profile", profile, "--watch-stdin", "--dialect", dialect]
    args += ["--max-sessions", str(max_sessions)]
    if script:
        args += ["--script", script]
    if require_audio:
        args.append("--require-audio")
    if engine:
        args += ["--engine", engine]
    with tempfile.TemporaryFile() as errors:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "duplex_client.server",
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=errors,
        )
        try:
            assert proc.stdout is not None
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), startup_timeout_s)
            except TimeoutError:
                line = b""
            if not line.startswith(b"listening "):
                errors.seek(0)
                tail = errors.read().decode(errors="replace").strip().splitlines()[-1:]
                raise DuplexConnectionError(
                    "the embedded reference server did not start" + (f": {tail[0]}" if tail else "")
                )
            yield line.split()[1].decode()
        finally:
            await _stop(proc)


async def _stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        await asyncio.wait_for(proc.wait(), 5.0)
    except TimeoutError:
        proc.kill()
        await proc.wait()
