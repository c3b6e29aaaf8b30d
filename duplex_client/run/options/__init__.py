"""The options of one run, whichever way in (`stream`, `live`, `eval`, `replay`): one object.

`RunOptions` holds what the user said, and `validate()` checks it in one place without
opening any file (files are loaded afterwards, by `run.prepare`). Messages name the
keyword arguments (`chunk_ms must be positive, got 0`); `UsageError.render` gives the CLI's
flags instead. Exit codes: 0 ok, 1 the session failed, 2 bad options or input (nothing
sent), 130 interrupted (143 terminated, 129 hangup).
"""

from duplex_client.run.options.choices import DIALECT_CHOICES as DIALECT_CHOICES
from duplex_client.run.options.choices import DUPLEX as DUPLEX
from duplex_client.run.options.choices import (
    PRESET_NAMES,
    SOUNDTRACK_POLICIES,
    WINDOW_MODES,
    InputKind,
)
from duplex_client.run.options.choices import VIDEO_DIALECTS as VIDEO_DIALECTS
from duplex_client.run.options.errors import RunFailed
from duplex_client.run.options.kinds import DEVICE_FIELDS, FILE_FIELDS, PAGE_FIELDS
from duplex_client.run.options.limits import DEFAULT_CHUNK_MS as DEFAULT_CHUNK_MS
from duplex_client.run.options.limits import MAX_CHUNK_MS, MAX_SECONDS, check_number
from duplex_client.run.options.run_dir import default_run_dir
from duplex_client.run.options.run_options import RunOptions
from duplex_client.usage import UsageError

__all__ = [
    "DEVICE_FIELDS",
    "FILE_FIELDS",
    "MAX_CHUNK_MS",
    "MAX_SECONDS",
    "PAGE_FIELDS",
    "PRESET_NAMES",
    "SOUNDTRACK_POLICIES",
    "WINDOW_MODES",
    "InputKind",
    "RunFailed",
    "RunOptions",
    "UsageError",
    "check_number",
    "default_run_dir",
]
