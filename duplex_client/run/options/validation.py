"""`RunOptions.validate`: every combination checked in one place, nothing opened or loaded."""

from __future__ import annotations

from dataclasses import fields
from typing import TYPE_CHECKING, Any

from duplex_client.families import preset_family
from duplex_client.run.checks import check_more
from duplex_client.run.controls import PTT_MODES, parse_schedule
from duplex_client.run.options.choices import (
    DIALECT_CHOICES,
    PRESET_NAMES,
    SOUNDTRACK_POLICIES,
    VIDEO_DIALECTS,
    WINDOW_MODES,
    InputKind,
)
from duplex_client.run.options.kinds import DEVICE_FIELDS, FILE_FIELDS, PAGE_FIELDS
from duplex_client.run.options.limits import LIMITS, OPTIONAL_NUMBERS, check_number
from duplex_client.run.turns import COMMIT_TURNS, TURN_MODES, no_commits_error
from duplex_client.usage import UsageError

if TYPE_CHECKING:
    from duplex_client.run.options.run_options import RunOptions


def validate_options(options: RunOptions, inputs: InputKind) -> None:
    """Raise `UsageError` with a one-line message for any invalid combination."""
    check_input_kind(options, inputs)
    if inputs == "files":
        check_files(options)
    if inputs in ("devices", "browser"):
        check_devices(options)
    for name in LIMITS:
        value = getattr(options, name)
        if value is not None or name not in OPTIONAL_NUMBERS:
            check_number(name, value)
    check_session(options)
    check_more(options, inputs)  # knobs, temperature, family features, video, config
    if options.annotations is not None and not options.realtime:
        raise UsageError(
            "annotations needs real-time pacing: without it there is no listener clock "
            "to measure latency on",
            param="annotations",
        )


def _defaults(options: RunOptions) -> dict[str, Any]:
    """The defaults of the file and device options."""
    kinds = FILE_FIELDS | DEVICE_FIELDS
    return {f.name: f.default for f in fields(options) if f.name in kinds}


def check_input_kind(options: RunOptions, inputs: InputKind) -> None:
    """A file option on a device run (or the reverse) is refused, never ignored; so is a
    device a browser run would leave to its page."""
    if inputs == "given":
        return
    defaults = _defaults(options)
    other, kind = (DEVICE_FIELDS, "live") if inputs == "files" else (FILE_FIELDS, "file")
    this = {"files": "a file run", "devices": "a live run", "browser": "a browser run"}
    for name in sorted(other):
        if getattr(options, name) != defaults[name]:
            raise UsageError(
                f"{name} is an option of a {kind} run, not of {this[inputs]}", param=name
            )
    if inputs == "browser":
        for name in sorted(PAGE_FIELDS):
            if getattr(options, name) != defaults[name]:
                raise UsageError(
                    f"{name} is an option of a terminal live run, not of a browser run "
                    "(the page chooses its devices and holds the talk button)",
                    param=name,
                )


def check_files(options: RunOptions) -> None:
    """The input files: at least one, video or image, an image with a length."""
    if not (options.input_video or options.input_audio or options.input_image):
        raise UsageError(
            "nothing to stream: give input_video, input_audio or input_image",
            keywords=("input_video", "input_audio", "input_image"),
        )
    if options.input_video and options.input_image:
        raise UsageError(
            "input_video and input_image are exclusive",
            param="input_image",
            keywords=("input_video", "input_image"),
        )
    if options.input_image and not options.input_audio and options.tail_silence_s <= 0:
        raise UsageError(
            "an image alone has no length: add input_audio or tail_silence_s",
            param="input_image",
            keywords=("input_audio", "tail_silence_s"),
        )


def check_devices(options: RunOptions) -> None:
    """The device switches that exclude each other, and the scripted actions."""
    clashes = (
        ("mic_file", "no_mic"),
        ("camera_file", "no_camera"),
        ("camera", "camera_file"),
        ("camera", "no_camera"),
        ("mic", "mic_file"),
        ("mic", "no_mic"),
    )
    for a, b in clashes:
        if getattr(options, a) and getattr(options, b):
            raise UsageError(f"{a} and {b} are exclusive", param=b, keywords=(a, b))
    try:
        parse_schedule(options.actions)
    except ValueError as exc:
        raise UsageError(f"actions: {exc}", param="actions") from None


def check_session(options: RunOptions) -> None:
    """The named choices, the dialect, and commits the preset's family takes."""
    choices = [
        ("preset", options.preset in PRESET_NAMES, ", ".join(PRESET_NAMES)),
        ("turn", options.turn in TURN_MODES, ", ".join(TURN_MODES)),
        ("ptt_mode", options.ptt_mode in PTT_MODES, " or ".join(PTT_MODES)),
        ("soundtrack", options.soundtrack in SOUNDTRACK_POLICIES, "trim, pad or full"),
        ("sliding_window", options.sliding_window in (None, *WINDOW_MODES), "off, basic, context"),
        ("dialect", options.dialect in DIALECT_CHOICES, ", ".join(DIALECT_CHOICES)),
    ]
    for name, ok, allowed in choices:
        if not ok:
            raise UsageError(
                f"{name} must be one of {allowed}, got {getattr(options, name)!r}", param=name
            )
    check_dialect(options)
    family = preset_family(options.preset_name())
    if family is not None and not family.client_commits and options.config is None:
        if options.turn in COMMIT_TURNS:
            raise no_commits_error(options.turn, f"the {options.preset} preset")
        if options.manual_commit:
            raise UsageError(
                f"manual_commit commits the input, but the {options.preset} preset takes no "
                "commits",
                param="manual_commit",
            )


def check_dialect(options: RunOptions) -> None:
    """Another dialect carries audio only: video would be recorded as sent, and never be."""
    if options.dialect in VIDEO_DIALECTS:  # auto: checked again once detected
        return
    for name in ("input_video", "input_image", "camera", "camera_file"):
        if not getattr(options, name):
            continue
        said = f"{name}: the {options.dialect} dialect carries audio only, no video frames"
        if name in ("camera", "camera_file"):  # live: the microphone alone
            raise UsageError(
                f"{said}; leave it out (no camera is opened in this dialect)", param=name
            )
        hint = " (it takes a clip's soundtrack too)" if name == "input_video" else ""
        raise UsageError(
            f"{said}; give input_audio instead{hint}",
            param=name,
            keywords=(name, "input_audio"),
        )
    family = preset_family(options.preset_name())
    if family is not None and "video" in family.required_modalities:
        raise UsageError(
            f"preset {family.name} ({family.title}) requires video on every unit: the "
            f"{options.dialect} dialect carries audio only",
            param="preset",
            keywords=("preset", "dialect"),
        )
