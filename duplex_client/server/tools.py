"""Function calls: the engine's calls as responses, the client's outputs, the follow-up answer.

A call is a response of its own, created and done at once (as vLLM-Omni projects one):
`response.created`, the `function_call` item added, `response.output_item.added`, one
`response.function_call_arguments.delta` with the whole arguments, `.done`,
`response.output_item.done`, `conversation.item.done`, `response.done`. The `ToolLedger`
remembers each call until its output arrives; an accepted output joins the history and the
engine's follow-up answer is spoken (after the active response, if one is playing).
"""

from __future__ import annotations

from typing import Any

from duplex_client.protocol import response_events as r
from duplex_client.protocol.fields import SchemaError
from duplex_client.protocol.objects import ResponseObject, StatusDetails
from duplex_client.protocol.server_events import ConversationItemDone
from duplex_client.protocol.tool_items import FunctionCallItem, FunctionCallOutputItem, tool_names
from duplex_client.protocol.tools import (
    DuplexFunctionCallDone,
    FunctionCallArgumentsDelta,
    FunctionCallArgumentsDone,
)
from duplex_client.server import ids
from duplex_client.server.engine.base import CallTool, Listen, Speak, ToolCallView
from duplex_client.server.errors import Reject
from duplex_client.server.ports import SessionPort
from duplex_client.server.tool_ledger import CallRecord, ToolLedger


def callable_here(s: SessionPort, decision: CallTool) -> bool:
    """Whether the session takes this call (a call without fallback is always made)."""
    if decision.fallback is None:
        return True
    settings = s.settings
    return (
        s.profile.supports_tools
        and settings.tool_choice != "none"
        and decision.name in tool_names(list(settings.tools))
    )


def call(s: SessionPort, decision: CallTool, metadata: dict[str, Any], now: float) -> None:
    """Emit the call as a response of its own (or `duplex.function_call.done` if malformed).

    While another response is active the call waits for its end (one response at a time).
    """
    if s.conversation.active is not None:
        ledger(s).calls_waiting.append((decision, metadata))
        return
    call_id = decision.call_id or "call_" + ids.item_id()[5:]
    if decision.malformed or not decision.name:
        raw = {"type": "function_call.done", "name": decision.name, "arguments": decision.arguments}
        s.emit(DuplexFunctionCallDone(event=raw), now)
        return
    conv = s.conversation
    rid = ids.response_id()
    item = FunctionCallItem(
        id=ids.item_id(), name=decision.name, call_id=call_id, arguments=decision.arguments
    ).to_dict()
    iid, args = item["id"], decision.arguments
    meta = {**metadata, "epoch": s.epoch, "trigger": metadata.get("trigger", "function_call")}
    created = ResponseObject(id=rid, status="in_progress", metadata=meta)
    s.emit(r.ResponseCreated(response_id=rid, response=created.to_dict()), now)
    conv.emit_item_added(item, conv.last_item_id(), now)
    conv.add_item(item)
    s.emit(r.ResponseOutputItemAdded(response_id=rid, item_id=iid, item=item), now)
    delta = FunctionCallArgumentsDelta(response_id=rid, item_id=iid, call_id=call_id, delta=args)
    s.emit(delta, now)
    done = FunctionCallArgumentsDone(response_id=rid, item_id=iid, call_id=call_id, arguments=args)
    s.emit(done, now)
    s.emit(r.ResponseOutputItemDone(response_id=rid, item_id=iid, item=item), now)
    s.emit(ConversationItemDone(item=item), now)
    finished = ResponseObject(
        id=rid,
        status="completed",
        status_details=StatusDetails(type="completed", reason="completed"),
        output=[item],
        metadata=meta,
    )
    s.emit(r.ResponseDone(response_id=rid, response=finished.to_dict()), now)
    ledger(s).open(CallRecord(call_id=call_id, name=decision.name, arguments=args, response_id=rid))


def ledger(s: SessionPort) -> ToolLedger:
    """The session's call ledger (kept with its conversation)."""
    return s.conversation.calls


def is_function_output(item: dict[str, Any]) -> bool:
    """Whether a `conversation.item.create` item is a `function_call_output`."""
    return item.get("type") == "function_call_output"


def on_function_output(s: SessionPort, item: dict[str, Any], now: float) -> None:
    """Accept a client's `function_call_output`: history, then the engine's follow-up."""
    try:
        output = FunctionCallOutputItem.decode(item, "item.")
    except SchemaError as exc:
        raise Reject.schema(exc) from None
    record = ledger(s).accept(output.call_id)
    conv = s.conversation
    stored = {"object": "realtime.item", "status": "completed", **item}
    if not isinstance(stored.get("id"), str) or conv.has_item(stored["id"]):
        stored["id"] = ids.item_id()
    conv.emit_item_added(stored, conv.last_item_id(), now)
    conv.add_item(stored)
    s.emit(ConversationItemDone(item=stored), now)
    book = ledger(s)
    view = ToolCallView(
        name=record.name,
        call_id=record.call_id,
        arguments=record.arguments,
        output=output.output,
        index=book.answered,
    )
    book.answered += 1
    book.waiting.append(view)
    follow_up(s, now)


def follow_up(s: SessionPort, now: float) -> bool:
    """Make waiting calls, then answer the oldest waiting output; whether a response started."""
    book, conv = ledger(s), s.conversation
    while book.calls_waiting and conv.active is None:
        waiting, metadata = book.calls_waiting.pop(0)
        call(s, waiting, metadata, now)
    if not book.waiting or conv.active is not None:
        return False
    view = book.waiting.pop(0)
    decision = s.engine.answer_function_output(view)
    if isinstance(decision, Listen):
        return False
    meta = {"function_call": {"name": view.name, "call_id": view.call_id}}
    conv.start(
        decision=Speak(text=decision.text or f"The {view.name} function returned {view.output}."),
        trigger="function_call_output",
        unit=None,
        turns=[],
        now=now,
        extra_metadata=meta,
    )
    return True
