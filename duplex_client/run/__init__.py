"""The run layer: one session end to end, from a source to a run bundle and a `RunResult`.

`stream_clip(url, input_video=..., tail_silence_s=...)` is what `duplex-cli stream` runs;
`run_live(url, options)` what `duplex-cli live` runs. Both go through the same options,
session run, listener and bundle.
"""

from duplex_client.run.live import run_live
from duplex_client.run.options import (
    PRESET_NAMES,
    SOUNDTRACK_POLICIES,
    WINDOW_MODES,
    RunFailed,
    RunOptions,
    UsageError,
    default_run_dir,
)
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import (
    EXIT_FAILED,
    EXIT_HANGUP,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    RunResult,
)
from duplex_client.run.session_run import run_session, target_url
from duplex_client.run.sources.files import open_source
from duplex_client.run.stream import run_stream, stream_clip, stream_clip_blocking

__all__ = [
    "EXIT_FAILED",
    "EXIT_HANGUP",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "PRESET_NAMES",
    "SOUNDTRACK_POLICIES",
    "WINDOW_MODES",
    "RunFailed",
    "RunOptions",
    "RunProgress",
    "RunResult",
    "UsageError",
    "default_run_dir",
    "open_source",
    "run_live",
    "run_session",
    "run_stream",
    "stream_clip",
    "stream_clip_blocking",
    "target_url",
]
