"""`turn.signal` and `barge_in`: the turn state, barge-in, and the events a signal stands for.

A signal whose `event` names another client event (`input.cancel`, `response.cancel`,
`session.update`, `conversation.item.create` / `.delete` / `.truncate`) is that event, its
fields in `payload`; the handler table runs it. Any other signal moves the turn state and is
answered by `turn.event` (protocol.md §4.5).
"""

from __future__ import annotations

from typing import Any, Final

from duplex_client.protocol import client_events as ce
from duplex_client.protocol.duplex_events import TurnEvent
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.fields import SchemaError
from duplex_client.protocol.server_events import InputAudioBufferCleared
from duplex_client.server.errors import Reject, event_ref
from duplex_client.server.ports import SessionPort

#: Signals that stand for another client event, by that event's class.
FORWARDED: Final[dict[str, type[ce.ClientEvent]]] = {
    cls.TYPE: cls
    for cls in (
        ce.InputCancel,
        ce.ResponseCancel,
        ce.SessionUpdate,
        ce.ConversationItemCreate,
        ce.ConversationItemDelete,
        ce.ConversationItemTruncate,
    )
}


def forwarded(event: ce.TurnSignal) -> ce.ClientEvent | None:
    """The client event a signal stands for (decoded by its schema), or None; raises `Reject`."""
    cls = FORWARDED.get(event.event)
    if cls is None:
        return None
    payload = event.payload
    if cls is ce.SessionUpdate:
        if payload is None:
            raise Reject(
                ErrorCode.BAD_EVENT, "session.update requires a session payload", "payload"
            )
        fields: dict[str, Any] = {"session": payload}
    elif cls is ce.ResponseCancel:
        rid = (payload or {}).get("response_id", event.response_id)
        fields = {} if rid is None else {"response_id": rid}
    else:
        fields = dict(payload or {})
    try:
        return cls.decode({**fields, "type": cls.TYPE, "event_id": event.event_id})
    except SchemaError as exc:
        raise Reject.schema(exc) from None


def signal(s: SessionPort, event: ce.TurnSignal, now: float) -> None:
    """A turn signal: `barge_in` interrupts; each is answered by `turn.event`."""
    if event.event == "barge_in":
        barge_in(s, event, now)
    state = s.turn.signal(event.event)
    s.emit(
        TurnEvent(session_id=s.session_id, event=event.event, turn_state=state, epoch=s.epoch), now
    )


def barge_in(s: SessionPort, event: ce.ClientEvent, now: float) -> None:
    """Interrupt the active response; with none, drop pending input (an epoch advance)."""
    if not s.caps.supports_barge_in:
        raise Reject(ErrorCode.BARGE_IN_UNSUPPORTED, "this model does not support barge-in", None)
    if s.conversation.active is not None:
        s.interrupt("barge_in", now)
        return
    s.inputs.clear()
    epoch = s.advance_epoch()
    s.turn.signal("barge_in")
    s.emit(InputAudioBufferCleared(client_event_id=event_ref(event), epoch=epoch), now)
