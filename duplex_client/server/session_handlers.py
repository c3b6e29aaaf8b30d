"""One handler per client event type, and the execution of pipeline work (for `DuplexSession`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from duplex_client.protocol.capabilities import UnitKind
from duplex_client.protocol.errors import ErrorCode
from duplex_client.server.conversation import Turn
from duplex_client.server.engine.base import Fail, Listen, Speak
from duplex_client.server.errors import Reject, client_event_id
from duplex_client.server.settings import apply_update

if TYPE_CHECKING:
    from duplex_client.server.session import DuplexSession, Work

Handler = Callable[["DuplexSession", dict[str, Any], float], None]
_RESPONSE_OPTIONS: Final = frozenset(
    {
        "modalities",
        "output_modalities",
        "instructions",
        "temperature",
        "max_output_tokens",
        "metadata",
    }
)


def _opt_bool(event: dict[str, Any], *keys: str) -> bool | None:
    for key in keys:
        value = event.get(key)
        if value is not None:
            if not isinstance(value, bool):
                raise Reject(ErrorCode.BAD_EVENT, f"{key} must be a boolean", key)
            return value
    return None


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
    s.append(event, now)


def on_commit(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`input_audio_buffer.commit`: seal (or flush) the turn; the ack follows its units."""
    from duplex_client.server.session import Work, _item_id

    cid = client_event_id(event)
    if s.is_repeat(cid):
        return
    final = _opt_bool(event, "final")
    final = True if final is None else final
    response_create = _opt_bool(event, "response_create", "create_response")
    is_speech = _opt_bool(event, "is_speech")
    if not s.open_turn_has_input():
        raise Reject(ErrorCode.INPUT_AUDIO_BUFFER_EMPTY, "nothing to commit", None)
    retain = response_create is False or (response_create is None and not s.settings.auto_response)
    in_flight = sum(1 for w in s.pipeline if w.kind == "commit" and w.final and w.decision is None)
    if final and retain and len(s.pending_turns) + in_flight >= s.limits.max_pending_turns:
        raise Reject(
            ErrorCode.INPUT_BACKPRESSURE,
            f"at most {s.limits.max_pending_turns} committed turns may wait for a response",
            None,
        )
    audio_end_ms = s.assembler.audio_end_ms
    s.remember_id(cid)
    if not final:
        for unit in s.release_queue():
            s.submit(unit, now, decide=False)
        s.turn_item_id = s.turn_item_id or _item_id()
        work = Work(
            0.0,
            "commit",
            event={"event_id": cid, "item_id": s.turn_item_id},
            final=False,
            audio_end_ms=audio_end_ms,
        )
        s.enqueue(work, 0, now)
        return
    before = s.assembler.pending_bytes
    residual = s.assembler.flush()
    s.budget.release(before - s.assembler.pending_bytes)
    queued = s.release_queue()
    if residual is not None:
        s.turn_units.append(residual)
        queued.append(residual)
    for unit in queued:
        s.submit(unit, now, decide=False)
    units, s.turn_units = s.turn_units, []
    speech = any(u.speech for u in units) and is_speech is not False
    turn = s.new_turn(units, speech)
    decision = None
    if not retain:
        decision = s.engine.decide_commit(turn.view(), s.commit_count)
        s.commit_count += 1
    work = Work(
        0.0,
        "commit",
        decision=decision,
        event={"event_id": cid},
        turn=turn,
        final=True,
        response_create=response_create,
        audio_end_ms=audio_end_ms,
    )
    s.enqueue(work, decision.delay_ms if decision else 0, now)


def _clear_input(s: DuplexSession) -> None:
    s.budget.release(s.assembler.clear())
    dropped = {id(u) for u in s.release_queue()}
    s.turn_units = [u for u in s.turn_units if id(u) not in dropped]


def on_clear(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`input_audio_buffer.clear`: drop buffered audio and queued frames, release their charge."""
    _clear_input(s)
    s.emitter.emit(
        {"type": "input_audio_buffer.cleared", "client_event_id": client_event_id(event)}, now
    )


def on_input_cancel(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`input.cancel`: as clear, plus an epoch advance."""
    _clear_input(s)
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


def on_response_create(s: DuplexSession, event: dict[str, Any], now: float) -> None:
    """`response.create`: validated now, answered when the pipeline reaches it."""
    from duplex_client.server.session import Work

    opts = event.get("response") or {}
    if not isinstance(opts, dict):
        raise Reject(ErrorCode.BAD_EVENT, "response must be an object", "response")
    for key in opts:
        if key not in _RESPONSE_OPTIONS:
            raise Reject(
                ErrorCode.UNSUPPORTED_NATIVE_RESPONSE_OPTIONS,
                f"response.{key} is not supported on the native lane",
                f"response.{key}",
            )
    modalities = opts.get("output_modalities", opts.get("modalities"))
    if modalities is not None and (
        not isinstance(modalities, list)
        or not modalities
        or any(m not in ("audio", "text") for m in modalities)
    ):
        raise Reject(
            ErrorCode.BAD_EVENT, "modalities must list audio and/or text", "response.modalities"
        )
    if opts.get("metadata") is not None and not isinstance(opts["metadata"], dict):
        raise Reject(ErrorCode.BAD_EVENT, "metadata must be an object", "response.metadata")
    cap = opts.get("max_output_tokens")
    if (
        cap is not None
        and cap != "inf"
        and (isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0)
    ):
        raise Reject(
            ErrorCode.BAD_EVENT,
            "max_output_tokens must be a positive integer",
            "response.max_output_tokens",
        )
    options = {**opts, "modalities": modalities} if modalities is not None else dict(opts)
    decision = s.engine.decide_response_create(
        [t.view() for t in s.pending_turns], s.response_create_count
    )
    s.response_create_count += 1
    work = Work(
        0.0,
        "response_create",
        decision=decision,
        event={"event_id": client_event_id(event), "response": options},
    )
    s.enqueue(work, decision.delay_ms, now)


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
    s.emitter.emit(s.conversation.ack(event), now)


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
    from duplex_client.server.session import _item_id

    item = event.get("item")
    if not isinstance(item, dict):
        raise Reject(ErrorCode.BAD_EVENT, "item must be an object", "item")
    item = {"object": "realtime.item", "status": "completed", **item}
    if not isinstance(item.get("id"), str) or item["id"] in s.conversation.items:
        item["id"] = _item_id()
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
    "input_audio_buffer.commit": on_commit,
    "input_audio_buffer.clear": on_clear,
    "input.cancel": on_input_cancel,
    "response.create": on_response_create,
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


# --- pipeline execution ---


def execute(s: DuplexSession, work: Work, now: float) -> None:
    """Run one pipeline item whose processing time has elapsed."""
    if work.kind == "unit":
        _exec_unit(s, work, now)
    elif work.kind == "commit":
        _exec_commit(s, work, now)
    else:
        _exec_response_create(s, work, now)


def _exec_unit(s: DuplexSession, work: Work, now: float) -> None:
    decision, unit = work.decision, work.unit
    if decision is None or unit is None:
        return
    if isinstance(decision, Fail):
        s.reject(Reject(decision.code, decision.message), None, now)
    elif isinstance(decision, Listen):
        if s.engine.unit_listen_events:
            s.conversation.listen(decision.reason, unit, now)
    elif s.conversation.active is None:
        s.conversation.start(decision=decision, trigger="unit", unit=unit, turns=[], now=now)


def _user_item(turn: Turn) -> dict[str, Any]:
    return {
        "id": turn.item_id,
        "object": "realtime.item",
        "type": "message",
        "role": "user",
        "status": "completed",
        "content": [
            {
                "type": "input_audio",
                "audio_ms": turn.audio_ms,
                "frames": turn.view().frames,
                "speech": turn.speech,
            }
        ],
        "metadata": {"turn_id": turn.turn_id, "unit_indices": [u.unit_index for u in turn.units]},
    }


def _exec_commit(s: DuplexSession, work: Work, now: float) -> None:
    cid = work.event.get("event_id")
    conv = s.conversation
    if not work.final:
        s.emitter.emit(
            {
                "type": "input_audio_buffer.committed",
                "client_event_id": cid,
                "item_id": work.event.get("item_id"),
                "previous_item_id": conv.last_item_id(),
                "audio_end_ms": work.audio_end_ms,
                "final": False,
                "event": {
                    "type": "input.committed",
                    "epoch": s.epoch,
                    "client_event_id": cid,
                    "final": False,
                },
            },
            now,
        )
        return
    turn, decision = work.turn, work.decision
    assert turn is not None
    conv.seal_finished()
    if isinstance(decision, Fail):
        s.reject(Reject(decision.code, decision.message), cid, now)
        return
    target = None
    if turn.units and all(u.kind is UnitKind.VISION for u in turn.units):
        target = next((t for t in reversed(s.pending_turns) if t.speech), None)
    if target is not None:
        target.units.extend(turn.units)
        item_id = target.item_id
        previous = None
    else:
        item = _user_item(turn)
        previous = conv.last_item_id()
        conv.emit_item_added(item, previous, now)
        conv.add_item(item)
        item_id = turn.item_id
    no_response = isinstance(decision, Listen)
    deferred = isinstance(decision, Speak) and conv.active is not None
    inner: dict[str, Any] = {
        "type": "input.committed",
        "turn_id": turn.turn_id,
        "epoch": s.epoch,
        "client_event_id": cid,
    }
    ack: dict[str, Any] = {
        "type": "input_audio_buffer.committed",
        "client_event_id": cid,
        "item_id": item_id,
        "previous_item_id": previous,
        "audio_end_ms": work.audio_end_ms,
        "final": True,
    }
    if no_response:
        ack["no_response"] = inner["no_response"] = True
    if deferred:
        inner["response_create_deferred"] = True
    ack["event"] = inner
    s.emitter.emit(ack, now)
    if target is None:
        s.emitter.emit({"type": "conversation.item.done", "item": conv.items[item_id]}, now)
    if decision is None or deferred:
        turn.deferred = deferred
        if target is None:
            s.pending_turns.append(turn)
    elif isinstance(decision, Listen):
        conv.listen(decision.reason, turn.units[-1] if turn.units else None, now)
    else:
        turns = s.pending_turns + ([turn] if target is None else [])
        s.pending_turns = []
        conv.start(decision=decision, trigger="commit", unit=None, turns=turns, now=now)


def _exec_response_create(s: DuplexSession, work: Work, now: float) -> None:
    cid = work.event.get("event_id")
    conv = s.conversation
    if conv.active is not None:
        s.reject(
            Reject(ErrorCode.RESPONSE_ALREADY_ACTIVE, "a response is already active"), cid, now
        )
        return
    turns = list(s.pending_turns)
    if not turns and s.turn_units:
        units = list(s.turn_units)
        turns = [
            Turn(
                turn_id=s.next_turn_id, item_id="", units=units, speech=any(u.speech for u in units)
            )
        ]
    if not turns:
        s.reject(
            Reject(ErrorCode.RESPONSE_CREATE_WITHOUT_INPUT, "there is no input to answer"), cid, now
        )
        return
    decision = work.decision
    if isinstance(decision, Fail):
        s.reject(Reject(decision.code, decision.message), cid, now)
        return
    assert decision is not None
    s.pending_turns = []
    conv.start(
        decision=decision,
        trigger="response.create",
        unit=None,
        turns=turns,
        now=now,
        options=work.event.get("response"),
    )
