"""One handler per client event type (the table `DuplexSession.handle` dispatches on)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from duplex_client.protocol.errors import ErrorCode
from duplex_client.server import ids, intake, playback, turns
from duplex_client.server.errors import Reject, client_event_id
from duplex_client.server.settings import apply_update

if TYPE_CHECKING:
    from duplex_client.server.session import DuplexSession

Handler = Callable[["DuplexSession", dict[str, Any], float], None]


def _opt_str(event: dict[str, Any], key: str) -> str | None:
    value = event.get(key)
    if value is not None and not isinstance(value, str):
        raise Reject(ErrorCode.BAD_EVENT, f"{key} must be a string", key)
    return value


# --- session lifecycle ---


def on_update(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`session.update` after the handshake: `session.updated` or a request-local error."""
    old = s.settings
    new = apply_update(
        event.get("session"), old, profile=s.profile, handshake=False, audio_started=s.audio_started
    )
    s.settings = new
    if (new.input_format, new.input_rate) != (old.input_format, old.input_rate):
        units_so_far = s.assembler.next_unit_index
        s.assembler = s._new_assembler()
        s.assembler.next_unit_index = units_so_far
    if s.vad_turns is not None:
        s.vad_turns.configure(new)
    s.emitter.emit({"type": "session.updated", "session": s.session_object()}, now)


def on_heartbeat(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`session.heartbeat` → `session.heartbeat_ack` (never journaled)."""
    s.emitter.emit({"type": "session.heartbeat_ack", "session_id": s.session_id}, now)


def on_event_ack(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`session.event_ack`: acknowledged events leave the journal."""
    seq = event.get("server_event_seq")
    if isinstance(seq, bool) or not isinstance(seq, int) or seq < 0:
        raise Reject(
            ErrorCode.BAD_EVENT, "server_event_seq must be an integer >= 0", "server_event_seq"
        )
    journal = s.journal
    if journal is not None and not journal.ack(seq):
        raise Reject(
            ErrorCode.INVALID_EVENT_ACK,
            f"ack {seq} is above the highest seq sent ({journal.last_seq})",
            "server_event_seq",
        )


def on_close(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`session.close`: cancel any response, `session.closed` last, then close 1000."""
    s.conversation.cancel("session_closed", now)
    s.finish("client_close", now)


def on_resume(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`session.resume` on an attached socket is request-local unsupported."""
    raise Reject(
        ErrorCode.UNSUPPORTED_SESSION_RESUME,
        "session.resume is only valid as the first message of a new socket",
        "type",
    )


# --- input ---


def on_append(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`input_audio_buffer.append`."""
    intake.append(s, event, now)


def on_clear(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`input_audio_buffer.clear`: drop buffered audio and queued frames, release their charge."""
    intake.clear(s)
    s.emitter.emit(
        {"type": "input_audio_buffer.cleared", "client_event_id": client_event_id(event)}, now
    )


def on_input_cancel(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`input.cancel`: as clear, plus an epoch advance."""
    intake.clear(s)
    s.epoch += 1
    s.emitter.emit(
        {
            "type": "input_audio_buffer.cleared",
            "client_event_id": client_event_id(event),
            "epoch": s.epoch,
        },
        now,
    )


# --- responses ---


def on_response_cancel(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`response.cancel {response_id?}`: a cancelled `response.done`, or `response_not_active`."""
    rid = _opt_str(event, "response_id")
    active = s.conversation.active
    if active is None or (rid is not None and rid != active.response_id):
        raise Reject(ErrorCode.RESPONSE_NOT_ACTIVE, "no such active response", "response_id")
    s.epoch += 1
    s.conversation.cancel("client_cancelled", now)


def on_output_clear(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`output_audio_buffer.clear {response_id?}`: no more audio for that response."""
    rid = _opt_str(event, "response_id")
    active = s.conversation.active
    if active is not None and rid in (None, active.response_id):
        s.interrupt("client_cancelled", now)
        return
    s.emitter.emit({"type": "output_audio_buffer.cleared", "response_id": rid}, now)


def on_playback_ack(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`playback.ack` → `playback.acknowledged`."""
    s.emitter.emit(playback.ack(s.conversation, event), now)


def on_barge_in(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`barge_in`: interrupt the active response."""
    if s.conversation.active is None:
        raise Reject(ErrorCode.RESPONSE_NOT_ACTIVE, "nothing to interrupt", None)
    s.interrupt("barge_in", now)


def on_turn_signal(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`turn.signal {signal}`: `barge_in`/`interrupt` interrupt; other signals are accepted."""
    signal = event.get("signal")
    if not isinstance(signal, str):
        raise Reject(ErrorCode.BAD_EVENT, "signal must be a string", "signal")
    if signal in ("barge_in", "interrupt"):
        on_barge_in(s, event, now)


def on_text_append(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`input.text.append` is chat-lane only."""
    raise Reject(ErrorCode.NATIVE_TEXT_APPEND_UNSUPPORTED, "text input needs the chat lane", "text")


# --- conversation items ---


def _item_arg(s: DuplexSession, event: dict[str, Any]) -> str:
    item_id = event.get("item_id")
    if not isinstance(item_id, str) or not item_id:
        raise Reject(ErrorCode.MISSING_ITEM_ID, "item_id is required", "item_id")
    if item_id not in s.conversation.items:
        raise Reject(ErrorCode.ITEM_NOT_FOUND, f"no item {item_id}", "item_id")
    return item_id


def on_item_create(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`conversation.item.create`: add an item to history."""

    item = event.get("item")
    if not isinstance(item, dict):
        raise Reject(ErrorCode.BAD_EVENT, "item must be an object", "item")
    item = {"object": "realtime.item", "status": "completed", **item}
    if not isinstance(item.get("id"), str) or item["id"] in s.conversation.items:
        item["id"] = ids.item_id()
    s.conversation.emit_item_added(item, s.conversation.last_item_id(), now)
    s.conversation.add_item(item)


def on_item_retrieve(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`conversation.item.retrieve` → `conversation.item.retrieved`."""
    item_id = _item_arg(s, event)
    s.emitter.emit(
        {"type": "conversation.item.retrieved", "item": s.conversation.items[item_id]}, now
    )


def on_item_delete(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`conversation.item.delete` → `conversation.item.deleted`."""
    item_id = _item_arg(s, event)
    del s.conversation.items[item_id]
    s.conversation.order.remove(item_id)
    s.emitter.emit({"type": "conversation.item.deleted", "item_id": item_id}, now)


def on_item_truncate(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`conversation.item.truncate`: cut an assistant item's audio (as a truncating ack would)."""
    item_id = _item_arg(s, event)
    end = event.get("audio_end_ms")
    if isinstance(end, bool) or not isinstance(end, int) or end < 0:
        raise Reject(
            ErrorCode.BAD_EVENT, "audio_end_ms must be a non-negative integer", "audio_end_ms"
        )
    state = s.conversation.responses.get(item_id[5:])
    if state is not None:
        state.committed_ms = min(end, state.audio_ms)
        state.truncated = True
    s.emitter.emit(
        {
            "type": "conversation.item.truncated",
            "item_id": item_id,
            "content_index": event.get("content_index", 0),
            "audio_end_ms": end,
        },
        now,
    )


HANDLERS: Final[dict[str, Handler]] = {
    "session.update": on_update,
    "session.heartbeat": on_heartbeat,
    "session.event_ack": on_event_ack,
    "session.close": on_close,
    "session.resume": on_resume,
    "input_audio_buffer.append": on_append,
    "input_audio_buffer.commit": turns.commit,
    "input_audio_buffer.clear": on_clear,
    "input.cancel": on_input_cancel,
    "response.create": turns.create_response,
    "response.cancel": on_response_cancel,
    "output_audio_buffer.clear": on_output_clear,
    "playback.ack": on_playback_ack,
    "conversation.item.create": on_item_create,
    "conversation.item.retrieve": on_item_retrieve,
    "conversation.item.delete": on_item_delete,
    "conversation.item.truncate": on_item_truncate,
    "input.text.append": on_text_append,
    "barge_in": on_barge_in,
    "turn.signal": on_turn_signal,
}
