"""`SessionConfig`: the session object the client sends in `session.update` (protocol.md §2.1).

Pure: reading and checking a reference voice file is the shell's
(`duplex_client.client.config.ref_audio_data_url`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from duplex_client.protocol.tool_items import (
    check_tool_choice,
    check_tools,
    choice_name,
    tool_names,
)

#: Keys whose values are secrets or bulky credentials and never reach logs or dumps.
SECRET_SESSION_KEYS = frozenset({"ref_audio", "resume_token", "api_key", "authorization"})


@dataclass(frozen=True, slots=True)
class SessionConfig:
    """Everything the client asks of a session; `to_session()` builds the wire object."""

    modalities: tuple[str, ...] = ("audio", "text")
    input_audio_format: str = "pcm16"
    output_audio_format: str = "pcm16"
    input_sample_rate_hz: int = 16000
    output_sample_rate_hz: int = 24000
    turn_detection: dict[str, Any] | None = None
    overlap_policy: str | None = None
    playback_commit_policy: str | None = None
    ref_audio: str | None = field(default=None, repr=False)
    instructions: str | None = None
    voice: str | None = None
    temperature: float | None = None
    max_response_output_tokens: int | str | None = None
    idle_timeout_s: float | None = None
    #: Overlap tuning (`overlap_short_ack_ms`, `overlap_barge_in_ms`, `overlap_silence_rms`).
    overlap_short_ack_ms: int | None = None
    overlap_barge_in_ms: int | None = None
    overlap_silence_rms: float | None = None
    #: Ask the server to transcribe committed user audio (e.g. `{"model": "…"}`).
    input_audio_transcription: dict[str, Any] | None = None
    extra_body: dict[str, Any] = field(default_factory=lambda: {"auto_response": True})
    #: Function tools the session declares (`{"type": "function", "name", ...}`; a bare
    #: `{"name", ...}` gets `type: function`) and the `tool_choice` (protocol.md "Tools").
    tools: Sequence[Mapping[str, Any]] = ()
    tool_choice: str | dict[str, Any] | None = None

    def __post_init__(self) -> None:
        """Check `tools` and `tool_choice` now: a tool declared twice is a `ValueError`."""
        tools = tuple({"type": "function", **dict(t)} for t in self.tools)
        object.__setattr__(self, "tools", tools)
        problem = check_tools(list(tools))
        if problem is None and self.tool_choice is not None:
            problem = check_tool_choice(self.tool_choice)
            named = choice_name(self.tool_choice)
            if problem is None and named is not None and named not in tool_names(list(tools)):
                problem = f"tool_choice names {named!r}, which tools does not declare"
        if problem is not None:
            raise ValueError(f"invalid tools: {problem}")

    @property
    def tool_names(self) -> tuple[str, ...]:
        """The declared functions' names."""
        return tool_names(list(self.tools))

    @property
    def auto_response(self) -> bool:
        """`extra_body.auto_response` (default true)."""
        return bool(self.extra_body.get("auto_response", True))

    @property
    def interrupts_on_speech(self) -> bool:
        """Whether user speech interrupts a playing response (protocol.md §4.4)."""
        td = self.turn_detection or {}
        return bool(td.get("interrupt_response")) or self.overlap_policy == "barge_in_on_speech"

    def with_overrides(self, **overrides: Any) -> SessionConfig:
        """A copy with fields replaced; an `extra_body` override is merged into this one's."""
        extra = overrides.pop("extra_body", None)
        cfg = dataclasses.replace(self, **overrides)
        if extra:
            cfg = dataclasses.replace(cfg, extra_body={**self.extra_body, **extra})
        return cfg

    def to_session(self, model: str | None) -> dict[str, Any]:
        """The `session` object for `session.update` (never contains a `session_id`).

        `model` None leaves the model out: the server uses the one it serves.
        """
        extra = {"auto_response": True, **self.extra_body}
        session: dict[str, Any] = {
            **({"model": model} if model is not None else {}),
            "modalities": list(self.modalities),
            "input_audio_format": self.input_audio_format,
            "output_audio_format": self.output_audio_format,
            "sample_rate_hz": self.input_sample_rate_hz,
            "audio": {
                "input": {"sample_rate_hz": self.input_sample_rate_hz},
                "output": {"sample_rate_hz": self.output_sample_rate_hz},
            },
            "turn_detection": self.turn_detection,
            "extra_body": extra,
        }
        optional = {
            "overlap_policy": self.overlap_policy,
            "playback_commit_policy": self.playback_commit_policy,
            "ref_audio": self.ref_audio,
            "instructions": self.instructions,
            "voice": self.voice,
            "temperature": self.temperature,
            "max_response_output_tokens": self.max_response_output_tokens,
            "idle_timeout_s": self.idle_timeout_s,
            "overlap_short_ack_ms": self.overlap_short_ack_ms,
            "overlap_barge_in_ms": self.overlap_barge_in_ms,
            "overlap_silence_rms": self.overlap_silence_rms,
            "input_audio_transcription": self.input_audio_transcription,
            "tools": [dict(t) for t in self.tools] or None,
            "tool_choice": self.tool_choice,
        }
        session.update({k: v for k, v in optional.items() if v is not None})
        return session

    def sliding_window(self) -> dict[str, Any]:
        """The sliding-window knobs exactly as sent in `extra_body` (protocol.md §2.4)."""
        keys = (
            "sliding_window_mode",
            "basic_window_high_tokens",
            "basic_window_low_tokens",
            "context_max_units",
            "context_previous_max_tokens",
        )
        return {k: self.extra_body[k] for k in keys if k in self.extra_body}


def redact(obj: Any) -> Any:
    """A deep copy of a JSON-like value with secret keys replaced by `"<redacted>"`."""
    if isinstance(obj, dict):
        return {
            k: ("<redacted>" if k.lower() in SECRET_SESSION_KEYS and v else redact(v))
            for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [redact(v) for v in obj]
    return obj
