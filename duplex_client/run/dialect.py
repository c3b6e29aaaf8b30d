"""The dialect a run speaks: as given, or detected from the endpoint before anything is built.

`auto` (the default) asks the endpoint once (`client.detect`): what its wire shows is the
run's dialect, said on the progress when it is not `duplex`; an endpoint that shows nothing
is taken for `duplex`, whose handshake then refuses another wire with a hint. The embedded
server is ours, spoken to in the dialect it was started with (`duplex` for `auto`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.run.options import DUPLEX, RunOptions

__all__ = ["PROBE_TIMEOUT_S", "with_dialect"]

#: The longest the probe waits for the endpoint (connection and first frame each): both
#: answer at once, an OpenAI endpoint speaking first and a duplex one refusing the probe.
PROBE_TIMEOUT_S = 5.0


async def with_dialect(
    url: str | None, options: RunOptions, note: Callable[[str], None]
) -> RunOptions:
    """`options` with `dialect` resolved (`auto` detected; anything else as it is)."""
    if options.dialect != AUTO:
        return options
    dialect = DUPLEX
    if url is not None:
        from duplex_client.client.detect import detect_dialect

        detected = await detect_dialect(
            url,
            model=options.model_name,
            api_key=options.api_key,
            timeout_s=min(PROBE_TIMEOUT_S, options.handshake_timeout_s),
        )
        if detected is not None:
            dialect = detected.dialect
            if dialect != DUPLEX:
                note(f"dialect {dialect} detected: {detected.how} (--dialect to choose)")
    return dataclasses.replace(options, dialect=dialect)
