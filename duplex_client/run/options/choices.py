"""What the named options take: presets, soundtrack policies, windows, dialects, input kinds."""

from __future__ import annotations

from typing import Literal

from duplex_client.families import LIVE_PRESET_CHOICES
from duplex_client.protocol.dialects import DIALECTS
from duplex_client.protocol.dialects.detect import AUTO

#: The presets a run takes (`auto`: minicpmo for the model's turns, joyai for vad/ptt).
PRESET_NAMES = LIVE_PRESET_CHOICES
SOUNDTRACK_POLICIES = ("trim", "pad", "full")
WINDOW_MODES = ("off", "basic", "context")
DUPLEX = "duplex"
#: What `dialect` takes: detected (the default), or one named.
DIALECT_CHOICES: tuple[str, ...] = (AUTO, *DIALECTS)
#: The dialects whose wire carries video frames (`auto`: not known until detected).
VIDEO_DIALECTS = frozenset({DUPLEX, AUTO})
#: Where a run's input comes from: files named by the options, live devices, a browser page
#: (`duplex-cli web`: the page's microphone and camera, answers on its player), or an input
#: the caller brings itself (a replay's recording, an eval's items).
InputKind = Literal["files", "devices", "browser", "given"]
