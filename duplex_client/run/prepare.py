"""What the options name on disk, loaded and checked, and the one options → session config.

`prepare(options)` runs after `RunOptions.validate()` and before anything is written: it
reads the tools file and the fixed answers, decodes the reference voice, and builds the
`SessionConfig` every way in sends (`stream`, `live`, `eval`, `replay`). A bad file is a
`UsageError` naming the option, never the file's content (a reference voice is a secret).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from duplex_client.analysis.annotations import (
    AnnotationError,
    SpeechSegment,
    check_range,
    load_annotations,
    parse_annotations,
)
from duplex_client.client.config import SessionConfig, ref_audio_data_url
from duplex_client.protocol.dialects import FIXED_RATE_HZ
from duplex_client.run.tools import load_tools, parse_tool_results
from duplex_client.usage import UsageError

if TYPE_CHECKING:  # the options only hand themselves over: `RunOptions.session_config()`
    from duplex_client.run.options import InputKind, RunOptions


@dataclass(frozen=True, slots=True)
class PreparedRun:
    """The session config to send and the fixed answers to function calls."""

    config: SessionConfig
    #: The output sent for each declared function (`tool_results`).
    tool_results: dict[str, str] = field(default_factory=dict)


def prepare(options: RunOptions, *, inputs: InputKind = "files") -> PreparedRun:
    """Load what `options` names and build the session config (`UsageError` if bad).

    `inputs` is the kind of run: a live run's turn mode shapes the preset's turn detection;
    a file run keeps the preset's own.
    """
    tools: tuple[dict[str, Any], ...] = ()
    choice = None
    if options.tools is not None:
        tools, choice = load_tools(options.tools)
    results: dict[str, str] = {}
    if options.tool_results is not None:
        results = parse_tool_results(options.tool_results, [str(t.get("name")) for t in tools])
    config = options.config
    if config is None:
        live = inputs in ("devices", "browser")
        config = _preset_config(options, ref_audio_url(options), live=live)
    if tools:
        config = config.with_overrides(tools=tools, tool_choice=choice)
    fixed = FIXED_RATE_HZ.get(options.dialect)
    if fixed is not None:  # the dialect's one PCM rate (OpenAI GA: 24 kHz both ways)
        config = config.with_overrides(
            input_audio_format="pcm16", input_sample_rate_hz=fixed, output_sample_rate_hz=fixed
        )
    return PreparedRun(config, results)


def _preset_config(options: RunOptions, ref_audio: str | None, *, live: bool) -> SessionConfig:
    from duplex_client.presets import preset_config

    overrides: dict[str, Any] = {}
    if options.instructions is not None:
        overrides["instructions"] = options.instructions
    if options.temperature is not None:
        overrides["temperature"] = options.temperature
    if options.sliding_window is not None:
        overrides["extra_body"] = {"sliding_window_mode": options.sliding_window}
        overrides["extra_body"].update(options.window_knobs)
    return preset_config(
        options.preset_name(),
        turn=options.turn if live else None,
        manual_commit=options.manual_commit,
        ref_audio=ref_audio,
        **overrides,
    )


def ref_audio_url(options: RunOptions) -> str | None:
    """`ref_audio` as a data URL, decoded first: not a WAV with samples is a `UsageError`.

    The message names the file, never its content (a reference voice is a secret).
    """
    if options.ref_audio is None:
        return None
    try:
        return ref_audio_data_url(options.ref_audio)
    except (OSError, ValueError) as exc:
        raise UsageError(f"ref_audio: {exc}", param="ref_audio") from None


def user_speech(options: RunOptions, media_ms: int) -> list[SpeechSegment] | None:
    """The annotated user speech, checked against the media length (None: not given)."""
    if options.annotations is None:
        return None
    try:
        source = "annotations"
        if isinstance(options.annotations, str | os.PathLike):
            source = os.fspath(options.annotations)  # the file names itself in the message
            segments = load_annotations(source)
        else:
            rows = [
                {"start_ms": a.start_ms, "end_ms": a.end_ms} if isinstance(a, SpeechSegment) else a
                for a in options.annotations
            ]
            segments = parse_annotations(rows, source="annotations")
        check_range(segments, media_ms, source=source)
    except AnnotationError as exc:
        message = str(exc)  # given segments name themselves `annotations:` already
        if not message.startswith("annotations:"):
            message = f"annotations: {message}"
        raise UsageError(message, param="annotations") from None
    return segments
