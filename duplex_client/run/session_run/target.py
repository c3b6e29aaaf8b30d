"""Where a run goes: the URL and the model it lists, or the embedded reference server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable

from duplex_client.families import embedded_profile as family_profile
from duplex_client.run.embedded import embedded_server
from duplex_client.run.options import RunOptions


async def with_listed_model(
    url: str, options: RunOptions, note: Callable[[str], None]
) -> RunOptions:
    """Without `model`, the one model the server lists (told to `note`), else the preset's."""
    from duplex_client.client.http import DEFAULT_HTTP_TIMEOUT_S, with_model
    from duplex_client.families import default_model

    timeout_s = min(DEFAULT_HTTP_TIMEOUT_S, options.handshake_timeout_s / 2)
    default = default_model(options.preset_name())
    return await with_model(url, options, default=default, note=note, timeout_s=timeout_s)


def embedded_profile(options: RunOptions) -> str:
    """The reference server profile for the options' preset (the default family's if none)."""
    return family_profile(options.preset_name())


@contextlib.asynccontextmanager
async def target_url(url: str | None, options: RunOptions) -> AsyncIterator[str]:
    """The URL to run against: `url`, or the embedded reference server started for this run.

    The embedded server runs in a child process for every way in, so the speech engine's
    CPU bursts (ASR and TTS hold the GIL for up to a few hundred ms) never delay the
    client's media clock or a live microphone's capture.
    """
    if url is not None:
        yield url
        return
    async with embedded_server(
        profile=embedded_profile(options),
        require_audio=options.require_audio,
        script=options.server_script,
        dialect=options.dialect,
    ) as server:
        yield server
