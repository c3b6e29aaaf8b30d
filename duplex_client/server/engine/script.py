"""The scripted engine: decisions and answers from a small JSON script (tests and rehearsals)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

from duplex_client.protocol.capabilities import UnitKind
from duplex_client.server.engine.base import (
    AudioChunk,
    CallTool,
    Decision,
    Fail,
    Listen,
    Speak,
    ToolCallView,
    TurnView,
    UnitView,
)

AUTO: Final = "auto"
Action = Decision | Literal["auto"]
EVENTS: Final = ("unit", "audio_unit", "commit", "response.create", "function_call_output")


class ScriptError(ValueError):
    """The script file or object is invalid (the message names the offending place)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """`on` event (with optional `index` and, for units, `kind`) → action."""

    on: str
    action: Action
    index: int | None = None
    kind: UnitKind | None = None


@dataclass(frozen=True, slots=True)
class Script:
    """Rules (first match wins), per-event defaults and output pacing."""

    rules: tuple[Rule, ...] = ()
    default_unit: Action = field(default_factory=Listen)
    default_commit: Action = AUTO
    default_response_create: Action = AUTO
    chunk_ms: int = 1000
    chunk_interval_ms: int = 0
    unit_listen_events: bool = True

    @classmethod
    def from_dict(cls, data: Any) -> Script:
        """Parse the JSON object form (see docs/protocol.md, "Scripted engine")."""
        if not isinstance(data, dict):
            raise ScriptError("script must be a JSON object")
        unknown = set(data) - {
            "rules",
            "defaults",
            "chunk_ms",
            "chunk_interval_ms",
            "unit_listen_events",
        }
        if unknown:
            raise ScriptError(f"unknown script keys: {sorted(unknown)}")
        rules_raw = data.get("rules", [])
        if not isinstance(rules_raw, list):
            raise ScriptError("rules must be a list")
        rules = tuple(_rule(r, i) for i, r in enumerate(rules_raw))
        defaults = data.get("defaults", {})
        if not isinstance(defaults, dict) or set(defaults) - {"unit", "commit", "response.create"}:
            raise ScriptError("defaults must map unit/commit/response.create to actions")
        if any(
            r.on == "function_call_output" and isinstance(r.action, CallTool | Fail) for r in rules
        ):
            raise ScriptError("a function_call_output rule speaks, listens or is auto")
        base = cls()
        return cls(
            rules=rules,
            default_unit=_action(defaults["unit"], "defaults.unit")
            if "unit" in defaults
            else base.default_unit,
            default_commit=_action(defaults["commit"], "defaults.commit")
            if "commit" in defaults
            else base.default_commit,
            default_response_create=_action(defaults["response.create"], "defaults.response.create")
            if "response.create" in defaults
            else base.default_response_create,
            chunk_ms=_int(data.get("chunk_ms", 1000), "chunk_ms", minimum=10),
            chunk_interval_ms=_int(data.get("chunk_interval_ms", 0), "chunk_interval_ms"),
            unit_listen_events=_bool(data.get("unit_listen_events", True), "unit_listen_events"),
        )

    @classmethod
    def load(cls, path: str | Path) -> Script:
        """Read a JSON script file."""
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise ScriptError(f"cannot read script {path}: {exc}") from None
        return cls.from_dict(data)


def _int(value: Any, where: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ScriptError(f"{where} must be an integer >= {minimum}")
    return value


def _bool(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ScriptError(f"{where} must be true or false")
    return value


def _action(spec: Any, where: str) -> Action:
    if not isinstance(spec, dict) or not isinstance(spec.get("do"), str):
        raise ScriptError(f"{where}: an action is an object with a 'do' string")
    do = spec["do"]
    delay = _int(spec.get("delay_ms", 0), f"{where}.delay_ms")
    if do == "speak":
        text = spec.get("text")
        if text is not None and not isinstance(text, str):
            raise ScriptError(f"{where}.text must be a string")
        audio_ms = spec.get("audio_ms")
        shown = spec.get("show")
        if shown is not None and not isinstance(shown, str):
            raise ScriptError(f"{where}.show must be a string")
        return Speak(
            text=text,
            audio_ms=None if audio_ms is None else _int(audio_ms, f"{where}.audio_ms", 1),
            delay_ms=delay,
            shown=shown,
        )
    if do == "listen":
        return Listen(delay_ms=delay)
    if do == "fail":
        code = spec.get("code")
        if not isinstance(code, str) or not code:
            raise ScriptError(f"{where}.code must be an error code string")
        message = spec.get("message", "scripted failure")
        return Fail(code=code, message=str(message), delay_ms=delay)
    if do == "call":
        return _call(spec, where, delay)
    if do == AUTO:
        return AUTO
    raise ScriptError(f"{where}.do must be speak, listen, fail, call or auto")


def _call(spec: dict[str, Any], where: str, delay: int) -> CallTool:
    """`{"do": "call", "name", "arguments"?, "call_id"?, "malformed"?}` (arguments: JSON)."""
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ScriptError(f"{where}.name must be the function's name")
    arguments = spec.get("arguments", {})
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, separators=(",", ":"))
    call_id = spec.get("call_id", "")
    if not isinstance(call_id, str):
        raise ScriptError(f"{where}.call_id must be a string")
    malformed = _bool(spec.get("malformed", False), f"{where}.malformed")
    return CallTool(
        name=name, arguments=arguments, call_id=call_id, malformed=malformed, delay_ms=delay
    )


def _rule(spec: Any, i: int) -> Rule:
    where = f"rules[{i}]"
    if not isinstance(spec, dict) or spec.get("on") not in EVENTS:
        raise ScriptError(f"{where}.on must be one of {', '.join(EVENTS)}")
    index = spec.get("index")
    kind = spec.get("kind")
    if kind is not None and kind not in UnitKind.__members__:
        raise ScriptError(f"{where}.kind must be AUDIO, VISION or OMNI")
    action = _action(spec, where)
    if action == AUTO and spec["on"] in ("unit", "audio_unit"):
        raise ScriptError(f"{where}: 'auto' is only for commit and response.create")
    return Rule(
        on=spec["on"],
        action=action,
        index=None if index is None else _int(index, f"{where}.index"),
        kind=None if kind is None else UnitKind(kind),
    )


class ScriptedEngine:
    """An `Engine` driven by a `Script`; answers are tone sequences with transcript deltas."""

    def __init__(self, script: Script | None = None) -> None:
        self.script = script or Script()

    @property
    def chunk_interval_ms(self) -> int:
        """Gap between output chunks."""
        return self.script.chunk_interval_ms

    @property
    def unit_listen_events(self) -> bool:
        """Whether listened-to units get a standalone `response.listen`."""
        return self.script.unit_listen_events

    def _match(self, on: str, index: int | None, kind: UnitKind | None = None) -> Action | None:
        for rule in self.script.rules:
            if rule.on != on or (rule.index is not None and rule.index != index):
                continue
            if rule.kind is not None and rule.kind != kind:
                continue
            return rule.action
        return None

    def decide_unit(self, unit: UnitView) -> Decision:
        """First matching `unit` / `audio_unit` rule, else the unit default."""
        action = self._match("unit", unit.unit_index, unit.kind)
        if action is None and unit.audio_unit_index is not None:
            action = self._match("audio_unit", unit.audio_unit_index, unit.kind)
        if action is None:
            action = self.script.default_unit
        return Listen() if action == AUTO else action

    def decide_commit(self, turn: TurnView, index: int) -> Decision:
        """First matching `commit` rule, else the default; `auto` speaks to speech or frames."""
        action = self._match("commit", index) or self.script.default_commit
        if action == AUTO:
            return Speak() if turn.speech or turn.frames else Listen(reason="no_speech")
        return action

    def decide_response_create(self, turns: Sequence[TurnView], index: int) -> Decision:
        """First matching `response.create` rule, else the default (auto: speak)."""
        action = self._match("response.create", index) or self.script.default_response_create
        return Speak() if action == AUTO else action

    def compose(self, turns: Sequence[TurnView], unit: UnitView | None) -> str:
        """Describe what was heard and seen, so tests can tell which input was answered."""
        if not turns:
            where = f"unit {unit.unit_index}" if unit is not None else "the stream"
            return f"I am speaking after {where}."
        audio_ms = sum(t.audio_ms for t in turns)
        frames = sum(t.frames for t in turns)
        units = sum(len(t.units) for t in turns)
        speech = "with speech" if any(t.speech for t in turns) else "without speech"
        return f"I heard {audio_ms} ms of audio {speech} and saw {frames} images in {units} units."

    def answer_function_output(self, call: ToolCallView) -> Speak | Listen:
        """First matching `function_call_output` rule; `auto` says what the function returned."""
        action = self._match("function_call_output", call.index) or AUTO
        if isinstance(action, Speak | Listen):
            return action
        return Speak(text=f"The {call.name} function returned {call.output}.")

    def render(self, text: str, sample_rate_hz: int, audio_ms: int | None) -> list[AudioChunk]:
        """Tone-per-word PCM16 cut into `chunk_ms` pieces, each with its transcript words."""
        from duplex_client.server.engine.tones import split_chunks, tone_sequence

        words = text.split()
        pcm = tone_sequence(words, sample_rate_hz, audio_ms)
        pieces = split_chunks(pcm, words, sample_rate_hz, self.script.chunk_ms)
        return [AudioChunk(pcm=p, text=t) for p, t in pieces]
