"""Audio and camera devices: PortAudio loaded with a clear error, listing and choosing devices."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from duplex_client.protocol.errors import DuplexClientError

Kind = Literal["input", "output"]
#: One line saying what to install when `import sounddevice` cannot find PortAudio.
PORTAUDIO_HINT = "PortAudio is not installed: install libportaudio2 (apt-get install libportaudio2)"
#: What to try when a machine has no sound card.
NO_DEVICE_HINT = (
    "no sound card? start PulseAudio with null sinks (docs/live.md), "
    "or use --mic-file/--no-mic and --no-playback"
)
#: Camera indexes `duplex-cli devices` probes.
DEFAULT_CAMERA_PROBES = 4


class DeviceError(DuplexClientError):
    """A device library or device is missing or unusable; the message says what to do."""


def load_sounddevice() -> Any:
    """The `sounddevice` module, or a `DeviceError` naming libportaudio2 / the `mic` extra."""
    try:
        import sounddevice
    except OSError as exc:
        raise DeviceError(f"{PORTAUDIO_HINT} ({exc})") from None
    except ImportError:
        raise DeviceError(
            "the sounddevice package is missing: pip install 'duplex-client[mic]'"
        ) from None
    return sounddevice


def close_stream(stream: Any) -> None:
    """Stop and close a sounddevice stream, going on past a step that fails (a lost device)."""
    if stream is None:
        return
    for step in (stream.stop, stream.close):
        try:
            step()
        except Exception:  # the device may already be gone: closing must still finish
            continue


@dataclass(frozen=True, slots=True)
class AudioDevice:
    """One PortAudio device as `duplex-cli devices` lists it."""

    index: int
    name: str
    hostapi: str
    max_input_channels: int
    max_output_channels: int
    default_samplerate: float
    default_input: bool = False
    default_output: bool = False


def _defaults(sd: Any) -> tuple[int, int]:
    pair = getattr(getattr(sd, "default", None), "device", (-1, -1))
    try:
        inp, out = pair
    except (TypeError, ValueError):
        inp = out = pair
    return (inp if isinstance(inp, int) else -1, out if isinstance(out, int) else -1)


def audio_devices(sd: Any) -> list[AudioDevice]:
    """Every PortAudio device (empty on a machine without sound devices)."""
    try:
        raw = list(sd.query_devices())
    except Exception as exc:  # PortAudioError or a broken host API
        raise DeviceError(f"cannot list audio devices: {exc}") from None
    apis: list[str] = []
    with contextlib.suppress(Exception):
        apis = [str(api.get("name", "?")) for api in sd.query_hostapis()]
    d_in, d_out = _defaults(sd)
    out = []
    for i, dev in enumerate(raw):
        index = int(dev.get("index", i))
        api = int(dev.get("hostapi", 0))
        out.append(
            AudioDevice(
                index=index,
                name=str(dev.get("name", f"device {index}")),
                hostapi=apis[api] if 0 <= api < len(apis) else str(api),
                max_input_channels=int(dev.get("max_input_channels", 0)),
                max_output_channels=int(dev.get("max_output_channels", 0)),
                default_samplerate=float(dev.get("default_samplerate", 0.0)),
                default_input=index == d_in,
                default_output=index == d_out,
            )
        )
    return out


def resolve_audio_device(sd: Any, spec: int | str | None, kind: Kind) -> AudioDevice:
    """The device `spec` names (an index, or a case-insensitive name part; None: the default)."""
    devices = audio_devices(sd)
    usable = [d for d in devices if _channels(d, kind) > 0]
    what = "microphone (input)" if kind == "input" else "speaker (output)"
    if not usable:
        raise DeviceError(f"no audio {what} device found: {NO_DEVICE_HINT}")
    if spec is None or spec == "":
        chosen = [d for d in usable if (d.default_input if kind == "input" else d.default_output)]
        return chosen[0] if chosen else usable[0]
    text = str(spec).strip()
    if text.isdigit():
        for d in usable:
            if d.index == int(text):
                return d
        raise DeviceError(f"no {what} device with index {text}: see `duplex-cli devices`")
    matches = [d for d in usable if text.lower() in d.name.lower()]
    if not matches:
        raise DeviceError(f"no {what} device named like {text!r}: see `duplex-cli devices`")
    return matches[0]


def _channels(device: AudioDevice, kind: Kind) -> int:
    return device.max_input_channels if kind == "input" else device.max_output_channels


def default_video_capture() -> Callable[[int | str], Any]:
    """`cv2.VideoCapture` (imported now, with OpenCV's own log output silenced)."""
    import cv2

    with contextlib.suppress(Exception):
        cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)

    def factory(source: int | str) -> Any:
        return cv2.VideoCapture(source)

    return factory


def camera_devices(
    capture_factory: Callable[[int | str], Any] | None = None,
    *,
    probes: int = DEFAULT_CAMERA_PROBES,
) -> list[int]:
    """Camera indexes in `0..probes-1` that open (each probe is released at once)."""
    factory = capture_factory or default_video_capture()
    found = []
    for index in range(probes):
        cap = factory(index)
        try:
            if cap.isOpened():
                found.append(index)
        finally:
            cap.release()
    return found


def camera_source(spec: str | None) -> int | str:
    """A `--camera` value as OpenCV takes it: digits are a device index, anything else a path."""
    if spec is None or spec == "":
        return 0
    return int(spec) if spec.strip().isdigit() else spec
