"""Live mode: microphone and camera to a duplex session, answers to the speaker.

Light on import: the device libraries (sounddevice/PortAudio, OpenCV) load only when a
source or the player starts. `run_live(url, LiveOptions(...))` is what `duplex-cli live`
runs; `LiveSession` is the loop for code that opens its own client and devices.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from duplex_client.live.camera import Camera, CameraFeed
    from duplex_client.live.controls import KEY_BINDINGS, LiveControls, PushToTalk
    from duplex_client.live.devices import DeviceError, audio_devices, camera_devices
    from duplex_client.live.filemic import FileMicrophone
    from duplex_client.live.keys import NoKeys, TerminalKeys
    from duplex_client.live.mic import Microphone
    from duplex_client.live.options import LiveOptions, LiveUsageError
    from duplex_client.live.playback import PlaybackSync
    from duplex_client.live.player import Player
    from duplex_client.live.progress import LiveProgress
    from duplex_client.live.run import LiveDevices, run_live
    from duplex_client.live.session import LiveSession
    from duplex_client.live.sources import AudioBlock, CapturedFrame

_LAZY = {
    "AudioBlock": "sources",
    "Camera": "camera",
    "CameraFeed": "camera",
    "CapturedFrame": "sources",
    "DeviceError": "devices",
    "FileMicrophone": "filemic",
    "KEY_BINDINGS": "controls",
    "LiveControls": "controls",
    "LiveDevices": "run",
    "LiveOptions": "options",
    "LiveUsageError": "options",
    "LiveProgress": "progress",
    "LiveSession": "session",
    "Microphone": "mic",
    "NoKeys": "keys",
    "PlaybackSync": "playback",
    "Player": "player",
    "PushToTalk": "controls",
    "TerminalKeys": "keys",
    "audio_devices": "devices",
    "camera_devices": "devices",
    "run_live": "run",
}

__all__ = [
    "KEY_BINDINGS",
    "AudioBlock",
    "Camera",
    "CameraFeed",
    "CapturedFrame",
    "DeviceError",
    "FileMicrophone",
    "LiveControls",
    "LiveDevices",
    "LiveOptions",
    "LiveProgress",
    "LiveSession",
    "LiveUsageError",
    "Microphone",
    "NoKeys",
    "PlaybackSync",
    "Player",
    "PushToTalk",
    "TerminalKeys",
    "audio_devices",
    "camera_devices",
    "run_live",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'duplex_client.live' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"duplex_client.live.{module}"), name)
