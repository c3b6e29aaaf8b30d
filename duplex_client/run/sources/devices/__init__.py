"""Live devices as a run's source: the live loop (`LiveSession`) and the source around it."""

from duplex_client.run.sources.devices.session import LiveSession
from duplex_client.run.sources.devices.source import (
    BENIGN_ERRORS,
    CAMERA_FRAME_MAX_SIDE,
    CAMERA_JPEG_QUALITY,
    DeviceSource,
    LiveDevices,
    complete_live,
    controls_for,
    live_session,
    preflight,
)
from duplex_client.run.turns import TURN_MODES, TurnMode

__all__ = [
    "BENIGN_ERRORS",
    "CAMERA_FRAME_MAX_SIDE",
    "CAMERA_JPEG_QUALITY",
    "TURN_MODES",
    "DeviceSource",
    "LiveDevices",
    "LiveSession",
    "TurnMode",
    "complete_live",
    "controls_for",
    "live_session",
    "preflight",
]
