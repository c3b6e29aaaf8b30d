"""What `duplex-cli live` can be told: devices, turns, switches, session preset, bundle."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplex_client.client.config import SessionConfig, ref_audio_data_url
from duplex_client.run.controls import PttMode, parse_schedule
from duplex_client.run.sources.devices import TURN_MODES, TurnMode
from duplex_client.run.turns import COMMIT_TURNS, LiveUsageError, no_commits_message

PRESETS = ("auto", "minicpmo", "joyai", "aura", "personaplex", "nemotron", "none")
#: Presets whose sessions take no commits (model-owned turns, or one continuous stream).
COMMIT_FREE = frozenset({"personaplex", "nemotron"})

__all__ = ["COMMIT_FREE", "PRESETS", "LiveOptions", "LiveUsageError"]


@dataclass(frozen=True, slots=True)
class LiveOptions:
    """Everything `duplex-cli live` can be told; the SDK takes the same names."""

    #: None: the one model the server lists, else the preset's (`presets.preset_model`).
    model: str | None = None
    preset: str = "auto"
    turn: TurnMode = "model"
    ptt_mode: PttMode = "toggle"
    config: SessionConfig | None = None
    api_key: str | None = field(default=None, repr=False)
    ref_audio: str | None = field(default=None, repr=False)
    instructions: str | None = None
    temperature: float | None = None
    mic: str | None = None
    mic_file: str | None = None
    no_mic: bool = False
    camera: str | None = None
    camera_file: str | None = None
    no_camera: bool = False
    speaker: str | None = None
    no_playback: bool = False
    echo_gate: bool = False
    start_muted: bool = False
    camera_off: bool = False
    frame_max_side: int = 640
    jpeg_quality: int = 80
    chunk_ms: int = 200
    jitter_ms: int = 80
    duration_s: float | None = None
    actions: tuple[str, ...] = ()
    output_dir: Path | None = None
    require_audio: bool = False
    server_script: str | None = None
    reconnect: bool = True

    def validate(self) -> None:
        """Raise `LiveUsageError` with a one-line message for any invalid combination."""
        checks = [
            (self.turn in TURN_MODES, f"--turn must be one of {', '.join(TURN_MODES)}"),
            (self.ptt_mode in ("toggle", "hold"), "--ptt-mode must be toggle or hold"),
            (self.preset in PRESETS, f"--preset must be one of {', '.join(PRESETS)}"),
            (not (self.mic_file and self.no_mic), "--mic-file and --no-mic are exclusive"),
            (not (self.camera_file and self.no_camera), "--camera-file and --no-camera clash"),
            (not (self.camera and self.camera_file), "--camera and --camera-file are exclusive"),
            (self.chunk_ms > 0, f"--chunk-ms must be positive, got {self.chunk_ms}"),
            (self.jitter_ms >= 0, f"--jitter-ms must be >= 0, got {self.jitter_ms}"),
            (1 <= self.jpeg_quality <= 100, "--jpeg-quality must be 1..100"),
            (self.frame_max_side >= 0, "--frame-max-side must be >= 0"),
            (self.duration_s is None or self.duration_s > 0, "--duration-s must be positive"),
        ]
        for ok, message in checks:
            if not ok:
                raise LiveUsageError(message)
        if self.preset in COMMIT_FREE and self.turn in COMMIT_TURNS and self.config is None:
            raise LiveUsageError(no_commits_message(self.turn, f"the {self.preset} preset"))
        try:
            parse_schedule(self.actions)
        except ValueError as exc:
            raise LiveUsageError(str(exc)) from None

    def preset_name(self) -> str:
        """The preset in effect (`auto`: minicpmo for model turns, joyai otherwise)."""
        if self.preset != "auto":
            return self.preset
        return "minicpmo" if self.turn == "model" else "joyai"

    def _ref_audio_url(self) -> str | None:
        """The reference voice as a data URL, decoded first (not audio: `LiveUsageError`)."""
        if self.ref_audio is None:
            return None
        try:
            return ref_audio_data_url(self.ref_audio)
        except (OSError, ValueError) as exc:
            raise LiveUsageError(f"--ref-audio: {exc}") from None

    def session_config(self, preset: str | None = None) -> SessionConfig:
        """The session config: `config` if given, else the preset adjusted to the turn mode."""
        from duplex_client import presets

        if self.config is not None:
            return self.config
        name = preset or self.preset_name()
        overrides: dict[str, Any] = {}
        if self.instructions is not None:
            overrides["instructions"] = self.instructions
        if self.temperature is not None:
            overrides["temperature"] = self.temperature
        ref_audio = self._ref_audio_url()
        if name == "minicpmo":
            config = presets.minicpmo_4_5(ref_audio=ref_audio, **overrides)
        elif name == "joyai":
            config = presets.joyai(manual=self.turn != "vad", **overrides)
        else:
            plain = presets.PLAIN.get(name)
            config = plain() if plain is not None else SessionConfig()
            if ref_audio is not None:
                overrides["ref_audio"] = ref_audio
            config = config.with_overrides(**overrides)
        if self.turn == "vad" and not config.turn_detection:
            config = config.with_overrides(
                turn_detection=dict(presets.SERVER_VAD), overlap_policy="barge_in_on_speech"
            )
        elif self.turn != "vad" and config.turn_detection:
            config = config.with_overrides(turn_detection=None)
        return config
