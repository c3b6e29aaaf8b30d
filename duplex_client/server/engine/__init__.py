"""Engines decide listen/speak per unit or turn and render the answers."""

from duplex_client.server.engine.base import (
    AudioChunk,
    Decision,
    Engine,
    Fail,
    Listen,
    Speak,
    TurnView,
    UnitView,
)
from duplex_client.server.engine.script import Script, ScriptedEngine, ScriptError

__all__ = [
    "AudioChunk",
    "Decision",
    "Engine",
    "Fail",
    "Listen",
    "Script",
    "ScriptError",
    "ScriptedEngine",
    "Speak",
    "TurnView",
    "UnitView",
]
