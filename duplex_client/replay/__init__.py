"""A recorded run sent again byte for byte, its payloads re-derived, and replay sweeps."""

from duplex_client.replay.bundle_replay import (
    RecordedRun,
    replay_bundle,
    replay_bundle_blocking,
    same_input,
)
from duplex_client.replay.sweep import sweep_bundle

__all__ = ["RecordedRun", "replay_bundle", "replay_bundle_blocking", "same_input", "sweep_bundle"]
