"""The speech engine's one demonstrable tool: a question about the time calls `get_time`.

The decision is made on the recognised words, so it is testable without audio: "what time
is it", "tell me the time" and the like become a `get_time` call (the answer the engine would
otherwise give is its fallback, used when the session does not declare the tool); the
function's output is then spoken as "It is <output>."
"""

from __future__ import annotations

import json
import re
from typing import Final

from duplex_client.server.engine.base import CallTool, Decision, Listen, Speak, ToolCallView

GET_TIME: Final = "get_time"
#: "time" as a word, asked about ("what time", "the time", "time is it").
_ASKS_TIME: Final = re.compile(r"\b(what|the|current)\s+time\b|\btime\s+is\s+it\b")


def asks_time(transcript: str) -> bool:
    """Whether recognised words ask for the time."""
    return _ASKS_TIME.search(transcript.lower()) is not None


def with_tool_call(transcripts: list[str], decision: Decision) -> Decision:
    """`decision`, or a `get_time` call falling back to it when the words ask the time."""
    if not isinstance(decision, Speak | Listen):
        return decision
    if not asks_time(" ".join(t for t in transcripts if t)):
        return decision
    return CallTool(name=GET_TIME, arguments="{}", fallback=decision)


def spoken_output(output: str) -> str:
    """A function output as words: a JSON object's values, a JSON scalar, or the text itself."""
    try:
        value = json.loads(output)
    except ValueError:
        return output.strip()
    if isinstance(value, dict):
        return ", ".join(str(v) for v in value.values())
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    return str(value)


def follow_up(call: ToolCallView) -> Speak:
    """What the engine says once a call's output arrived."""
    said = spoken_output(call.output)
    if call.name == GET_TIME:
        return Speak(text=f"It is {said}.")
    return Speak(text=f"The {call.name} function returned {said}.")
