"""The records of function calling: declared tools, `tool_choice`, call and output items.

Kept apart from the events (`protocol.tools`) so the session request can check `tools`
without importing the client events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Final

from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.fields import SchemaError
from duplex_client.protocol.schema import OMIT, Record, Rule

#: `tool_choice` strings (the object form names one declared function).
TOOL_CHOICES: Final = ("auto", "none", "required")
FUNCTION_CALL: Final = "function_call"
FUNCTION_CALL_OUTPUT: Final = "function_call_output"

_TOOLS: Final = ErrorCode.INVALID_TOOLS
_OUTPUT: Final = ErrorCode.INVALID_FUNCTION_CALL_OUTPUT


@dataclass(kw_only=True, slots=True)
class FunctionTool(Record):
    """One declared tool: `{"type": "function", "name", "description"?, "parameters"?}`."""

    CODE = _TOOLS
    type: Annotated[str, Rule(choices=("function",))] = "function"
    name: Annotated[str, Rule(non_empty=True)]
    description: Annotated[str | None, OMIT] = None
    parameters: Annotated[dict[str, Any] | None, OMIT] = None


@dataclass(kw_only=True, slots=True)
class NamedToolChoice(Record):
    """The object form of `tool_choice`: `{"type": "function", "name": ...}`."""

    CODE = _TOOLS
    type: Annotated[str, Rule(choices=("function",))] = "function"
    name: Annotated[str, Rule(non_empty=True)]


def check_tools(value: Any) -> str | None:
    """Why a `tools` list is refused (None: accepted): each a function tool, names unique."""
    seen: set[str] = set()
    for i, tool in enumerate(value):
        if not isinstance(tool, dict):
            return f"tools[{i}] must be an object"
        try:
            name = FunctionTool.decode(tool, f"tools[{i}].").name
        except SchemaError as exc:
            return exc.message
        if name in seen:
            return f"tools[{i}].name: tool {name!r} is declared twice"
        seen.add(name)
    return None


def check_tool_choice(value: Any) -> str | None:
    """Why a `tool_choice` is refused: one of auto/none/required, or a named function."""
    if isinstance(value, str):
        return None if value in TOOL_CHOICES else f"tool_choice must be one of {TOOL_CHOICES}"
    if not isinstance(value, dict):
        return "tool_choice must be a string or a {type: function, name} object"
    try:
        NamedToolChoice.decode(value, "tool_choice.")
    except SchemaError as exc:
        return exc.message
    return None


def tool_names(tools: Any) -> tuple[str, ...]:
    """The names of a (validated) tools list, in order."""
    if not isinstance(tools, list | tuple):
        return ()
    return tuple(t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str))


def choice_name(tool_choice: Any) -> str | None:
    """The function a named `tool_choice` forces (None for the string forms)."""
    if isinstance(tool_choice, dict) and isinstance(tool_choice.get("name"), str):
        return str(tool_choice["name"])
    return None


@dataclass(kw_only=True, slots=True)
class FunctionCallItem(Record):
    """A `function_call` conversation item (what the server called, with JSON `arguments`)."""

    id: str
    object: str = "realtime.item"
    type: str = FUNCTION_CALL
    status: str = "completed"
    name: str
    call_id: str
    arguments: str = ""


@dataclass(kw_only=True, slots=True)
class FunctionCallOutputItem(Record):
    """A client's `function_call_output` item: the `output` (a string) for one `call_id`."""

    CODE = _OUTPUT
    NULL_IS_ABSENT = False
    type: Annotated[str, Rule(choices=(FUNCTION_CALL_OUTPUT,))] = FUNCTION_CALL_OUTPUT
    call_id: Annotated[str, Rule(non_empty=True)]
    output: str
    id: Annotated[str | None, OMIT] = None


#: The nested objects of function calling (the round-trip test covers each).
TOOL_RECORD_CLASSES: tuple[type[Record], ...] = (
    FunctionTool,
    NamedToolChoice,
    FunctionCallItem,
    FunctionCallOutputItem,
)
