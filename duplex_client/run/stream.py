"""Stream a clip, WAV or image to a duplex session end to end and leave a run bundle.

`stream_clip(url, input_video=..., tail_silence_s=...)` is what `duplex-cli stream` runs;
without a URL it starts the bundled reference server on a loopback port. It is the one
session run (`run_session`) with the options' files as its source.
"""

from __future__ import annotations

import dataclasses
import difflib
from typing import Any

from duplex_client.client.sync import run_blocking
from duplex_client.run.options import RunOptions
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult
from duplex_client.run.session_run import run_session
from duplex_client.run.sources.files import FileSource
from duplex_client.usage import UsageError

__all__ = ["run_stream", "stream_clip", "stream_clip_blocking"]


async def stream_clip(
    url: str | None = None,
    *,
    progress: RunProgress | None = None,
    **options: Any,
) -> RunResult:
    """Stream a clip/WAV/image (keyword options as in `RunOptions`) and return the result.

    Never raises for a failed session: the result says what happened (`ok`, `status`,
    `error`, `exit_code`) and the bundle holds everything received. Bad options or input
    (and a bad URL) raise `UsageError` / `MediaError` before anything is sent or written.
    Media warnings (a truncated file) go to `result.warnings`, not to `warnings.warn`.
    """
    return await run_stream(url, options_from(options, "stream_clip"), progress=progress)


def stream_clip_blocking(url: str | None = None, **options: Any) -> RunResult:
    """Blocking twin of `stream_clip` for scripts and notebooks (inside a running event loop,
    a Jupyter cell, it runs on a worker thread with its own loop)."""
    return run_blocking(stream_clip(url, **options))


async def run_stream(
    url: str | None, options: RunOptions, *, progress: RunProgress | None = None
) -> RunResult:
    """The session run with the options' input files as its source."""
    return await run_session(url, options, FileSource(), progress=progress)


def options_from(keywords: dict[str, Any], caller: str) -> RunOptions:
    """`RunOptions(**keywords)`; an unknown keyword is a `UsageError` naming a close one."""
    known = {f.name for f in dataclasses.fields(RunOptions)}
    for name in keywords:
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise UsageError(f"{name} is not an option of {caller}{hint}", keywords=())
    return RunOptions(**keywords)
