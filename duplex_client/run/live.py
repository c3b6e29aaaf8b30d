"""`duplex-cli live` end to end: microphone and camera to a session, answers to the speaker.

`run_live(url, RunOptions(...))` is the one session run (`run_session`) with the live
devices as its source and the speaker as its listener; it writes the same bundle as
`stream` (with `segment: live` timeline rows). Device modules are injectable through
`LiveDevices`, the switches through `LiveControls`.
"""

from __future__ import annotations

from typing import Any

from duplex_client.run.controls import LiveControls
from duplex_client.run.options import RunOptions
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult
from duplex_client.run.session_run import run_session
from duplex_client.run.sources.devices import DeviceSource, LiveDevices
from duplex_client.run.turns import LiveUsageError

__all__ = ["LiveDevices", "LiveOptions", "LiveUsageError", "run_live"]


async def run_live(
    url: str | None,
    options: RunOptions,
    *,
    progress: RunProgress | None = None,
    controls: LiveControls | None = None,
    devices: LiveDevices | None = None,
) -> RunResult:
    """Run a live session until quit or `duration_s`; the result and the bundle say how.

    Never raises for a failed session; bad options raise `UsageError`, missing devices
    `DeviceError`, before anything is sent (also options only the opened session refuses,
    e.g. `turn="ptt"` where it takes no commits: the bundle's result.json then says so,
    with exit code 2).
    """
    source = DeviceSource(controls, devices)
    return await run_session(url, options, source, progress=progress)


def LiveOptions(**options: Any) -> RunOptions:
    """The options of a live run: `RunOptions` (this name is kept for one release)."""
    import warnings

    warnings.warn(
        "LiveOptions is now RunOptions (one options object for every run); the old name "
        "goes in the next release",
        DeprecationWarning,
        stacklevel=2,
    )
    from duplex_client.run.stream import options_from

    return options_from(options, "LiveOptions")
