"""Answering the server's function calls: handlers, an async iterator, and the record of each.

`ToolDesk` watches the session's events for completed `function_call` items (in
`response.output_item.done`). A call goes, in order, to the handler registered for its name
(`on_function_call`), to a handler for every name (`"*"`), or to the `function_calls()`
iterator. A handler's return value is sent as the `function_call_output`; a handler that
raises sends `{"error": "<Type>: <message>"}` instead, and the error is recorded. A call of
a function the session never declared (and no handler takes) is answered with an error
output at once. Every call and its answer are kept in `records`, in call order.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from duplex_client.protocol import response_events as r
from duplex_client.protocol import server_events as se
from duplex_client.protocol.tools import DuplexFunctionCallDone, output_text

log = logging.getLogger("duplex_client")

#: A handler gets the parsed arguments (a dict for an object) and the call; returns the output.
Handler = Callable[[Any, "FunctionCall"], Any]
#: What answered a call.
AnsweredBy = Literal["handler", "iterator", "unknown_function", "unanswered"]
#: Name under which a handler takes every call without its own handler.
ANY_FUNCTION = "*"
_TERMINAL = frozenset({"session.closed", "session.expired", "session.replaced"})


@dataclass(frozen=True, slots=True)
class FunctionCall:
    """One call the server made: the function's name, its `call_id` and JSON `arguments`."""

    name: str
    call_id: str
    arguments: str
    item_id: str | None = None
    response_id: str | None = None

    def parsed(self) -> Any:
        """The arguments decoded from JSON (`{}` when empty); `ValueError` when not JSON."""
        return json.loads(self.arguments) if self.arguments.strip() else {}


@dataclass(slots=True)
class CallRecord:
    """A call and what became of it (kept in the run bundle)."""

    call: FunctionCall
    received_at: float
    answered_by: AnsweredBy = "unanswered"
    output: str | None = None
    error: str | None = None
    answered_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {
            "name": self.call.name,
            "call_id": self.call.call_id,
            "arguments": self.call.arguments,
            "item_id": self.call.item_id,
            "response_id": self.call.response_id,
            "answered_by": self.answered_by,
            "output": self.output,
            "error": self.error,
        }


def describe(record: CallRecord) -> str:
    """`name(arguments) -> output` (or `-> error: ...`) for the transcript and the turns row."""
    call = record.call
    said = f"{call.name}({call.arguments})"
    if record.error is not None:
        return f"{said} -> error: {record.error}"
    return f"{said} -> {record.output if record.output is not None else '(no answer)'}"


SendOutput = Callable[[str, str], Awaitable[object]]


@dataclass
class ToolDesk:
    """The client's side of function calling for one session."""

    send_output: SendOutput
    declared: frozenset[str]
    clock: Callable[[], float]
    handlers: dict[str, Handler] = field(default_factory=dict)
    records: list[CallRecord] = field(default_factory=list)
    #: Engine calls the server passed on as `duplex.function_call.done` (unanswerable).
    malformed: list[dict[str, Any]] = field(default_factory=list)
    _queue: asyncio.Queue[FunctionCall | None] = field(default_factory=asyncio.Queue)
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)
    _by_id: dict[str, CallRecord] = field(default_factory=dict)

    def register(self, name: str, handler: Handler) -> None:
        """Answer calls of `name` (`"*"`: of any name without its own handler) with `handler`."""
        if not name:
            raise ValueError("on_function_call needs a function name (or '*')")
        if not callable(handler):
            raise TypeError(f"the handler for {name!r} is not callable")
        self.handlers[name] = handler

    def on_event(self, event: se.ServerEvent, received_at: float) -> None:
        """Listener: dispatch each completed `function_call` item once."""
        if event.type in _TERMINAL:
            self._queue.put_nowait(None)
            return
        if isinstance(event, DuplexFunctionCallDone):
            self.malformed.append(dict(event.event))
            log.warning("server passed on a function call without call_id or name: %s", event.event)
            return
        if not isinstance(event, r.ResponseOutputItemDone):
            return
        item = event.item
        if item.get("type") != "function_call":
            return
        call_id, name = item.get("call_id"), item.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str) or call_id in self._by_id:
            return
        arguments = item.get("arguments")
        call = FunctionCall(
            name=name,
            call_id=call_id,
            arguments=arguments if isinstance(arguments, str) else "",
            item_id=item.get("id") if isinstance(item.get("id"), str) else None,
            response_id=event.response_id,
        )
        record = CallRecord(call=call, received_at=received_at)
        self.records.append(record)
        self._by_id[call_id] = record
        self._dispatch(record)

    def _dispatch(self, record: CallRecord) -> None:
        call = record.call
        handler = self.handlers.get(call.name) or self.handlers.get(ANY_FUNCTION)
        if handler is not None:
            self._spawn(self._run(record, handler))
        elif call.name not in self.declared:
            record.error = f"unknown function {call.name!r}: the session does not declare it"
            log.warning("server called %s", record.error)
            output = output_text({"error": record.error})
            self._spawn(self._answer(record, output, "unknown_function"))
        else:
            self._queue.put_nowait(call)

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run(self, record: CallRecord, handler: Handler) -> None:
        call = record.call
        try:
            try:
                args = call.parsed()
            except ValueError as exc:
                raise ValueError(f"arguments are not JSON ({exc})") from None
            result = handler(args, call)
            if inspect.isawaitable(result):
                result = await result
            output = output_text(result)
        except Exception as exc:  # the handler's failure is the call's answer
            record.error = f"{type(exc).__name__}: {exc}"
            log.warning("function %s (call %s) failed: %s", call.name, call.call_id, record.error)
            output = output_text({"error": record.error})
        await self._answer(record, output, "handler")

    async def _answer(self, record: CallRecord, output: str, by: AnsweredBy) -> None:
        record.output, record.answered_by, record.answered_at = output, by, self.clock()
        try:
            await self.send_output(record.call.call_id, output)
        except Exception as exc:  # the session ended: recorded, not raised into a task
            record.error = record.error or f"output not sent: {exc}"

    async def answer(self, call_id: str, output: Any) -> None:
        """Send the output for a call taken from `function_calls()` (any value: JSON-encoded)."""
        text = output_text(output)
        record = self._by_id.get(call_id)
        if record is not None:
            record.output, record.answered_by = text, "iterator"
            record.answered_at = self.clock()
        await self.send_output(call_id, text)

    async def calls(
        self, ended: Callable[[], Awaitable[object]] | None = None
    ) -> AsyncIterator[FunctionCall]:
        """Calls no handler takes, as they arrive; ends with the session (or once `ended()` did)."""
        stop = asyncio.ensure_future(ended()) if ended is not None else None
        try:
            while True:
                get = asyncio.ensure_future(self._queue.get())
                waits = {get} if stop is None else {get, stop}
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                if not get.done():
                    get.cancel()
                    return
                call = get.result()
                if call is None:
                    self._queue.put_nowait(None)  # every iterator ends
                    return
                yield call
        finally:
            if stop is not None:
                stop.cancel()

    async def drain(self, timeout: float) -> None:
        """Wait (up to `timeout`) for handlers still running."""
        if self._tasks:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await asyncio.gather(*self._tasks, return_exceptions=True)

    def end(self) -> None:
        """The session ended: iterations stop."""
        self._queue.put_nowait(None)
