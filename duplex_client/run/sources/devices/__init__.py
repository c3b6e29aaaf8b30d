"""Live devices as a run's source: the live loop (`LiveSession`) and the source around it."""

from duplex_client.run.sources.devices.session import LiveSession
from duplex_client.run.sources.devices.source import (
    BENIGN_ERRORS,
    DeviceSource,
    LiveDevices,
    controls_for,
    preflight,
)
from duplex_client.run.turns import TURN_MODES, TurnMode

__all__ = [
    "BENIGN_ERRORS",
    "TURN_MODES",
    "DeviceSource",
    "LiveDevices",
    "LiveSession",
    "TurnMode",
    "controls_for",
    "preflight",
]
