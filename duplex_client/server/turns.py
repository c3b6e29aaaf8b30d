"""The turn lane of `DuplexSession`: commits, response requests and pipeline execution."""

from __future__ import annotations

from typing import TYPE_CHECKING

from duplex_client.protocol.capabilities import UnitKind
from duplex_client.protocol.client_events import InputAudioBufferCommit, ResponseCreate
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.objects import CommittedInfo, ContentPart, Item
from duplex_client.protocol.requests import ResponseOptions
from duplex_client.protocol.server_events import ConversationItemDone, InputAudioBufferCommitted
from duplex_client.server import ids, intake, playback
from duplex_client.server.conversation import Turn
from duplex_client.server.engine.base import Fail, Listen, Speak, TurnView
from duplex_client.server.errors import Reject, event_ref
from duplex_client.server.intake import Work

if TYPE_CHECKING:
    from duplex_client.server.session import DuplexSession


def commit(s: DuplexSession, event: InputAudioBufferCommit, now: float) -> None:
    """`input_audio_buffer.commit`: seal (or flush) the turn; the ack follows its units."""
    cid = event_ref(event)
    if intake.is_repeat(s, cid):
        return
    final, response_create, is_speech = event.final, event.response_create, event.is_speech
    if not intake.has_input(s):
        raise Reject(ErrorCode.INPUT_AUDIO_BUFFER_EMPTY, "nothing to commit", None)
    retain = response_create is False or (response_create is None and not s.settings.auto_response)
    in_flight = sum(
        1
        for w in s.pipeline
        if w.kind == "commit" and w.final and w.decision is None and w.pending is None
    )
    if final and retain and len(s.pending_turns) + in_flight >= s.limits.max_pending_turns:
        raise Reject(
            ErrorCode.INPUT_BACKPRESSURE,
            f"at most {s.limits.max_pending_turns} committed turns may wait for a response",
            None,
        )
    audio_end_ms = s.assembler.audio_end_ms
    intake.remember_id(s, cid)
    if not final:
        for unit in intake.release_queue(s):
            intake.submit(s, unit, now, decide=False)
        s.turn_item_id = s.turn_item_id or ids.item_id()
        work = Work(
            0.0,
            "commit",
            event_id=cid,
            item_id=s.turn_item_id,
            final=False,
            audio_end_ms=audio_end_ms,
        )
        s.enqueue(work, 0, now)
        return
    before = s.assembler.pending_bytes
    residual = s.assembler.flush()
    s.budget.release(before - s.assembler.pending_bytes)
    queued = intake.release_queue(s)
    if residual is not None:
        s.turn_units.append(residual)
        queued.append(residual)
    for unit in queued:
        intake.submit(s, unit, now, decide=False)
    units, s.turn_units = s.turn_units, []
    if s.vad_turns is not None:
        s.vad_turns.turn_sealed()
    speech = any(u.speech for u in units) and is_speech is not False
    turn = intake.new_turn(s, units, speech)
    work = Work(
        0.0,
        "commit",
        event_id=cid,
        turn=turn,
        final=True,
        response_create=response_create,
        audio_end_ms=audio_end_ms,
    )
    if not retain:
        work.set_decision(s.engine.decide_commit(_judged(s, turn), s.commit_count))
        s.commit_count += 1
    s.enqueue(work, work.delay_ms, now)


def _judged(s: DuplexSession, turn: Turn) -> TurnView:
    """The turn the engine decides on: a camera-only turn after retained speech joins it (§3.3)."""
    if turn.units and all(u.kind is UnitKind.VISION for u in turn.units):
        target = next((t for t in reversed(s.pending_turns) if t.speech), None)
        if target is not None:
            merged = Turn(turn.turn_id, target.item_id, target.units + turn.units, speech=True)
            return merged.view()
    return turn.view()


def create_response(s: DuplexSession, event: ResponseCreate, now: float) -> None:
    """`response.create` (its options decoded by the schema), answered in pipeline order."""
    options = ResponseOptions.from_raw(event.response)
    work = Work(0.0, "response_create", event_id=event_ref(event), options=options)
    work.set_decision(
        s.engine.decide_response_create(
            [t.view() for t in s.pending_turns], s.response_create_count
        )
    )
    s.response_create_count += 1
    s.enqueue(work, work.delay_ms, now)


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


def _user_item(turn: Turn) -> Item:
    audio = ContentPart(
        type="input_audio", audio_ms=turn.audio_ms, frames=turn.view().frames, speech=turn.speech
    )
    return Item(
        id=turn.item_id,
        role="user",
        status="completed",
        content=[audio],
        metadata={"turn_id": turn.turn_id, "unit_indices": [u.unit_index for u in turn.units]},
    )


def _exec_commit(s: DuplexSession, work: Work, now: float) -> None:
    cid = work.event_id
    conv = s.conversation
    if not work.final:
        info = CommittedInfo(epoch=s.epoch, client_event_id=cid, final=False)
        ack = InputAudioBufferCommitted(
            client_event_id=cid,
            item_id=work.item_id,
            previous_item_id=conv.last_item_id(),
            audio_end_ms=work.audio_end_ms,
            final=False,
            event=info.to_dict(),
        )
        s.emitter.emit(ack, now)
        return
    turn, decision = work.turn, work.decision
    assert turn is not None
    playback.seal_finished(conv)
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
        item = _user_item(turn).to_dict()
        previous = conv.last_item_id()
        conv.emit_item_added(item, previous, now)
        conv.add_item(item)
        item_id = turn.item_id
    no_response = isinstance(decision, Listen)
    deferred = isinstance(decision, Speak) and conv.active is not None
    inner = CommittedInfo(
        turn_id=turn.turn_id,
        epoch=s.epoch,
        client_event_id=cid,
        no_response=True if no_response else None,
        response_create_deferred=True if deferred else None,
    )
    ack = InputAudioBufferCommitted(
        client_event_id=cid,
        item_id=item_id,
        previous_item_id=previous,
        audio_end_ms=work.audio_end_ms,
        final=True,
        no_response=no_response,
        event=inner.to_dict(),
    )
    s.emitter.emit(ack, now)
    if target is None:
        s.emitter.emit(ConversationItemDone(item=conv.items[item_id]), now)
    if decision is None or deferred:
        turn.deferred = decision if deferred and isinstance(decision, Speak) else None
        if target is None:
            s.pending_turns.append(turn)
    elif isinstance(decision, Listen):
        conv.listen(decision.reason, turn.units[-1] if turn.units else None, now)
    else:
        turns = s.pending_turns + ([turn] if target is None else [])
        s.pending_turns = []
        conv.start(decision=decision, trigger="commit", unit=None, turns=turns, now=now)


def _exec_response_create(s: DuplexSession, work: Work, now: float) -> None:
    cid = work.event_id
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
        options=work.options,
    )
