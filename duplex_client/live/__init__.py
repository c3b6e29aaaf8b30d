"""Deprecated: live mode is now the run layer's device source (`duplex_client.run`).

Every name this package had still imports from here for one release, with a
`DeprecationWarning` naming its new home (`duplex_client.MOVED_MODULES` lists the moved modules).
"""

from __future__ import annotations

from typing import Any

#: Each name of the old package → the module that holds it now.
_NAMES = {
    "AudioBlock": "duplex_client.media.devices.capture",
    "CapturedFrame": "duplex_client.media.devices.capture",
    "Camera": "duplex_client.media.devices.camera",
    "CameraFeed": "duplex_client.media.devices.camera",
    "DeviceError": "duplex_client.media.devices.lookup",
    "audio_devices": "duplex_client.media.devices.lookup",
    "camera_devices": "duplex_client.media.devices.lookup",
    "FileMicrophone": "duplex_client.media.devices.filemic",
    "Microphone": "duplex_client.media.devices.mic",
    "Player": "duplex_client.media.devices.player",
    "NoKeys": "duplex_client.media.devices.keys",
    "TerminalKeys": "duplex_client.media.devices.keys",
    "KEY_BINDINGS": "duplex_client.run.controls",
    "LiveControls": "duplex_client.run.controls",
    "PushToTalk": "duplex_client.run.controls",
    "PlaybackSync": "duplex_client.run.playback",
    "LiveProgress": "duplex_client.run.progress",
    "LiveSession": "duplex_client.run.sources.devices",
    "LiveOptions": "duplex_client.run.live",
    "LiveUsageError": "duplex_client.run.turns",
    "LiveDevices": "duplex_client.run.sources.devices",
    "run_live": "duplex_client.run.live",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'duplex_client.live' has no attribute {name!r}")
    import importlib
    import warnings

    warnings.warn(
        f"duplex_client.live.{name} moved to {module}.{name}; the old name goes in the next "
        "release",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module(module), name)
