"""Function calling on the wire: declared tools, `function_call` items, their events and outputs.

- A session declares `tools` (a list of `FunctionTool`) and a `tool_choice` in `session.update`;
  a bad declaration is refused with `invalid_tools`.
- The server calls a function in a response of its own: `response.created`, the
  `function_call` item (`conversation.item.added`/`.created`, `response.output_item.added`),
  `response.function_call_arguments.delta` and `.done`, `response.output_item.done`,
  `conversation.item.done`, `response.done`. A call the engine produced without a `call_id`
  or a `name` is passed on as `duplex.function_call.done` carrying the engine's event.
- The client answers with `conversation.item.create` of a `function_call_output` item
  (`FunctionCallOutputItem`): a malformed one is `invalid_function_call_output`, one for a
  call the session never made `unknown_function_call`, a second one `duplicate_function_output`.

These names and shapes are vLLM-Omni's (docs/protocol.md, "Tools").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

from duplex_client.protocol.client_events import ConversationItemCreate
from duplex_client.protocol.response_events import ResponseEvent
from duplex_client.protocol.server_events import ServerEvent
from duplex_client.protocol.tool_items import (
    FUNCTION_CALL,
    FUNCTION_CALL_OUTPUT,
    TOOL_CHOICES,
    TOOL_RECORD_CLASSES,
    FunctionCallItem,
    FunctionCallOutputItem,
    FunctionTool,
    NamedToolChoice,
    check_tool_choice,
    check_tools,
    choice_name,
    tool_names,
)


def function_call_output(
    call_id: str, output: str, *, previous_item_id: str | None = None
) -> ConversationItemCreate:
    """The `conversation.item.create` that answers a call."""
    item = FunctionCallOutputItem(call_id=call_id, output=output).to_dict()
    return ConversationItemCreate(item=item, previous_item_id=previous_item_id)


def output_text(value: Any) -> str:
    """A handler's result as the `output` string: strings as they are, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


# --- server events ---


@dataclass(kw_only=True, slots=True)
class FunctionCallArgumentsDelta(ResponseEvent):
    """`response.function_call_arguments.delta`: a piece of a call's JSON arguments."""

    TYPE: ClassVar[str] = "response.function_call_arguments.delta"
    item_id: str | None = None
    output_index: int = 0
    call_id: str | None = None
    delta: str = ""


@dataclass(kw_only=True, slots=True)
class FunctionCallArgumentsDone(ResponseEvent):
    """`response.function_call_arguments.done`: a call's complete JSON arguments."""

    TYPE: ClassVar[str] = "response.function_call_arguments.done"
    item_id: str | None = None
    output_index: int = 0
    call_id: str | None = None
    arguments: str = ""


@dataclass(kw_only=True, slots=True)
class DuplexFunctionCallDone(ServerEvent):
    """`duplex.function_call.done`: an engine call without `call_id` or `name`, passed on raw."""

    TYPE: ClassVar[str] = "duplex.function_call.done"
    event: dict[str, Any] = field(default_factory=dict)


#: The server events of function calling (registered with the other server events).
TOOL_EVENT_CLASSES: tuple[type[ServerEvent], ...] = (
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
    DuplexFunctionCallDone,
)

__all__ = [
    "FUNCTION_CALL",
    "FUNCTION_CALL_OUTPUT",
    "TOOL_CHOICES",
    "TOOL_EVENT_CLASSES",
    "TOOL_RECORD_CLASSES",
    "DuplexFunctionCallDone",
    "FunctionCallArgumentsDelta",
    "FunctionCallArgumentsDone",
    "FunctionCallItem",
    "FunctionCallOutputItem",
    "FunctionTool",
    "NamedToolChoice",
    "check_tool_choice",
    "check_tools",
    "choice_name",
    "function_call_output",
    "output_text",
    "tool_names",
]
