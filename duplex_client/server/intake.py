"""Input intake for `DuplexSession`: appends (validate, charge, frame), units into the pipeline."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from duplex_client.protocol.client_events import InputAudioBufferAppend
from duplex_client.protocol.errors import ErrorCode
from duplex_client.protocol.requests import ResponseOptions
from duplex_client.protocol.server_events import InputAudioBufferSpeechStarted
from duplex_client.server import ids
from duplex_client.server.assembler import Unit, detect_speech
from duplex_client.server.conversation import Turn
from duplex_client.server.engine.base import Decision, Fail, Listen, Pending
from duplex_client.server.errors import Reject, event_ref
from duplex_client.server.inputs import ParsedAppend, parse_append

if TYPE_CHECKING:
    from duplex_client.server.session import DuplexSession


@dataclass
class Work:
    """One item of the model's serial input pipeline (units, commits, response requests)."""

    ready_at: float
    kind: str
    unit: Unit | None = None
    decision: Decision | None = None
    #: The engine's decision while it waits for off-loop work; `override` then replaces it.
    pending: Pending | None = None
    override: Decision | None = None
    #: The client event this work answers (commits and response requests), its turn's item.
    event_id: str | None = None
    item_id: str | None = None
    options: ResponseOptions | None = None
    turn: Turn | None = None
    final: bool = True
    response_create: bool | None = None
    audio_end_ms: int = 0

    def set_decision(self, decision: Decision | Pending) -> None:
        """Take the engine's answer, final or pending."""
        if isinstance(decision, Pending):
            self.pending = decision
        else:
            self.decision = decision

    @property
    def delay_ms(self) -> int:
        """The decision's scripted delay (none while pending)."""
        return self.decision.delay_ms if self.decision is not None else 0

    @property
    def ready(self) -> bool:
        """Whether nothing off-loop is still awaited."""
        return self.pending is None or self.pending.ready()

    def settle(self) -> None:
        """Make the pending decision (in pipeline order), then apply the override."""
        if self.pending is not None:
            self.decision = self.pending.finish()
            self.pending = None
        if self.override is not None:
            self.decision, self.override = self.override, None


def remember_id(s: DuplexSession, event_id: str | None) -> None:
    """Add an accepted append/commit id to the completed-id cache."""
    if event_id is None:
        return
    s.seen_ids[event_id] = None
    while len(s.seen_ids) > s.limits.completed_id_cache:
        s.seen_ids.popitem(last=False)
    s.last_input_event_id = event_id


def is_repeat(s: DuplexSession, event_id: str | None) -> bool:
    """Whether this append/commit id was already accepted (an idempotent resend)."""
    return event_id is not None and event_id in s.seen_ids


def append(s: DuplexSession, event: InputAudioBufferAppend, now: float) -> None:
    """`input_audio_buffer.append`: check against the session, charge, frame, queue units."""
    cid = event_ref(event)
    if is_repeat(s, cid):
        return
    parsed = parse_append(event, s.settings, s.caps, s.profile.illegal_unit_code)
    if not s.budget.fits(parsed.charge):
        raise Reject(ErrorCode.INPUT_BACKPRESSURE, "pending input limit reached; not retained")
    speech = parsed.is_speech
    if speech is None:
        speech = detect_speech(parsed.pcm, s.settings.input_format)
    if parsed.pcm:
        s.audio_started = True
        before = s.assembler.pending_bytes
        units = s.assembler.add_audio(parsed.pcm, speech, parsed.frames)
        # Only what stays buffered is charged here; accept_units charges queued units.
        delta = s.assembler.pending_bytes - before
        if delta >= 0:
            s.budget.charge(delta)
        else:
            s.budget.release(-delta)
    else:
        assert parsed.frames is not None
        units = [s.assembler.add_vision(parsed.frames)]
    remember_id(s, cid)
    _record(s, cid, units, parsed)
    vad = s.vad_turns
    if speech and parsed.pcm and (vad is None or not vad.server_vad(s.settings)):
        _maybe_barge_in(s, now)
    accept_units(s, units, now, decide=True)
    if vad is not None:
        vad.after_append(s, parsed.pcm, now)


def _record(s: DuplexSession, cid: str | None, units: list[Unit], parsed: ParsedAppend) -> None:
    """Keep the §10-shaped row of an accepted append (for tests and debugging)."""
    s.append_count += 1
    last = units[-1] if units else None
    shas = parsed.frames.sha256 if parsed.frames else ()
    s.appends.append(
        {
            "index": s.append_count - 1,
            "event_id": cid,
            "unit_kind": last.kind.value if last else None,
            "unit_index": last.unit_index if last else None,
            "audio_unit_index": last.audio_unit_index if last else None,
            "duration_ms": s.assembler.to_ms(len(parsed.pcm) // s.settings.bytes_per_sample),
            "audio_end_ms": s.assembler.audio_end_ms,
            "is_speech": parsed.is_speech,
            "frames": [
                {"sha256": h, "bytes": b} for h, b in zip(shas, parsed.frame_bytes, strict=True)
            ],
        }
    )


def _maybe_barge_in(s: DuplexSession, now: float) -> None:
    """Under `barge_in_on_speech`, user speech interrupts a playing response (§4.4)."""
    active = s.conversation.active
    if s.settings.overlap_policy != "barge_in_on_speech" or active is None or not active.audio_ms:
        return
    started = InputAudioBufferSpeechStarted(audio_start_ms=s.assembler.audio_end_ms, item_id=None)
    s.emitter.emit(started, now)
    s.interrupt("barge_in", now)


def accept_units(s: DuplexSession, units: list[Unit], now: float, *, decide: bool) -> None:
    """Route emitted units: queued (manual lane, still charged) or into the model pipeline."""
    for unit in units:
        s.turn_units.append(unit)
        if not s.settings.auto_response:
            s.manual_queue.append(unit)
            s.budget.charge(unit.charge)
            continue
        submit(s, unit, now, decide=decide)


def submit(s: DuplexSession, unit: Unit, now: float, *, decide: bool) -> None:
    """Hand a unit to the model pipeline (decided now, emitted when its processing is over)."""
    work = Work(0.0, "unit", unit=unit)
    if decide:
        work.set_decision(s.engine.decide_unit(unit.view()))
        if unit.unit_index < s.settings.force_listen_count:
            work.override = Listen(reason="force_listen")
    if s.faults.error_code and unit.unit_index == s.faults.error_at_unit:
        work.override = Fail(s.faults.error_code, f"injected fault at unit {unit.unit_index}")
    if work.override is not None and work.pending is None:
        work.decision, work.override = work.override, None
    s.enqueue(work, s.faults.unit_processing_ms(unit.unit_index) + work.delay_ms, now)


def release_queue(s: DuplexSession) -> list[Unit]:
    """Take the manual-lane queue (its charge is released: the units go to the model)."""
    units, s.manual_queue = s.manual_queue, []
    for u in units:
        s.budget.release(u.charge)
    return units


def clear(s: DuplexSession) -> None:
    """Drop buffered audio, queued frames and queued units, releasing their charge."""
    s.budget.release(s.assembler.clear())
    dropped = {id(u) for u in release_queue(s)}
    s.turn_units = [u for u in s.turn_units if id(u) not in dropped]
    if s.vad_turns is not None:
        s.vad_turns.turn_sealed()


def has_input(s: DuplexSession) -> bool:
    """Whether anything uncommitted or retained could be committed."""
    return bool(
        s.turn_units
        or s.assembler.partial_bytes
        or s.assembler.queued_frames
        or s.manual_queue
        or s.pending_turns
    )


def new_turn(s: DuplexSession, units: list[Unit], speech: bool) -> Turn:
    """Seal the open turn's units into a `Turn`."""
    turn = Turn(
        turn_id=s.next_turn_id, item_id=s.turn_item_id or ids.item_id(), units=units, speech=speech
    )
    s.next_turn_id += 1
    s.turn_item_id = None
    return turn
