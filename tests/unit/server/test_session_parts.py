"""Unit tests of the session's parts: the input buffer's budget, retained turns, the pipeline."""

from __future__ import annotations

import pytest

from duplex_client.server.assembler import FramePack
from duplex_client.server.conversation import Turn
from duplex_client.server.engine.base import Speak
from duplex_client.server.input_buffer import InputBuffer
from duplex_client.server.pipeline import Pipeline, Work
from duplex_client.server.profiles import get_profile
from duplex_client.server.retained import RetainedTurns
from duplex_client.server.settings import initial_settings

SECOND = 32_000  # bytes of 16 kHz pcm16


def _buffer(limit: int = 10 * SECOND) -> InputBuffer:
    profile = get_profile("minicpmo")  # 1 s units, no server VAD
    return InputBuffer(profile, initial_settings(profile, 300.0), limit)


def test_the_budget_counts_buffered_audio_and_held_units() -> None:
    buf = _buffer(limit=2 * SECOND)
    assert buf.add_audio(bytes(SECOND // 2), True, None) == []
    assert buf.held_bytes == SECOND // 2 and buf.fits(SECOND + SECOND // 2)
    units = buf.add_audio(bytes(SECOND), True, None)  # closes unit 0, half a second stays
    assert len(units) == 1 and buf.held_bytes == SECOND // 2  # a unit for the model is free
    assert buf.accept(units, hold=True) == [] and buf.held_bytes == SECOND + SECOND // 2
    assert not buf.fits(SECOND)
    to_model, turn = buf.seal(None)
    assert [u.unit_index for u in to_model] == [0, 1] and buf.held_bytes == 0
    assert [u.unit_index for u in turn.units] == [0, 1] and turn.turn_id == 1
    assert buf.next_turn_id == 2 and not buf.has_input()


def test_clear_releases_everything_and_keeps_units_sent_to_the_model() -> None:
    buf = _buffer()
    sent = buf.accept(buf.add_audio(bytes(SECOND), True, None), hold=False)
    held = buf.accept(buf.add_audio(bytes(SECOND + 100), True, None), hold=True)
    assert len(sent) == 1 and held == [] and buf.held_bytes == SECOND + 100
    buf.clear()
    assert buf.held_bytes == 0
    assert [u.unit_index for u in buf.open_units] == [0]  # the model already has unit 0


def test_an_idle_turn_keeps_only_its_latest_audio_and_frames() -> None:
    buf = _buffer()
    frames = FramePack(frames=("QUJD",), sha256=("x",))
    for _ in range(3):
        buf.accept(buf.add_audio(bytes(SECOND), False, None), hold=True)
    buf.accept([buf.add_vision(frames)], hold=True)
    buf.trim_idle()
    kept = buf.open_units
    assert [u.unit_index for u in kept] == [2, 3]
    assert buf.held_bytes == sum(u.charge for u in kept) == SECOND + 4


def test_an_open_turn_keeps_the_images_of_its_latest_seen_unit_only() -> None:
    """A stream that never commits holds one image, not every frame it sent."""
    buf = _buffer(limit=100 * SECOND)
    seen = []
    for k in range(30):
        frames = FramePack(frames=(f"QUJD{k:02d}",), sha256=(f"sha{k}",))
        seen += buf.accept(buf.add_audio(bytes(SECOND), True, frames), hold=False)
    assert [u.frames.frames for u in seen] == [(f"QUJD{k:02d}",) for k in range(30)]
    units = buf.open_units
    assert len(units) == 30 and [u.pcm for u in units] == [bytes(SECOND)] * 30
    assert [u.frames.sha256 for u in units if u.frames] == [(f"sha{k}",) for k in range(30)]
    assert [u.frames.frames for u in units if u.frames and u.frames.frames] == [("QUJD29",)]
    _, turn = buf.seal(None)
    view = turn.view()
    assert view.frames == 30 and [u.frames for u in view.units] == [1] * 30
    assert [u.images for u in view.units if u.images] == [("QUJD29",)]


def test_held_units_keep_their_images_until_the_commit() -> None:
    buf = _buffer(limit=100 * SECOND)
    for k in range(3):
        frames = FramePack(frames=(f"QUJD{k}",), sha256=(f"sha{k}",))
        buf.accept(buf.add_audio(bytes(SECOND), True, frames), hold=True)
    to_model, turn = buf.seal(None)
    assert [u.frames.frames for u in to_model if u.frames] == [("QUJD0",), ("QUJD1",), ("QUJD2",)]
    assert [u.view().images for u in turn.units] == [("QUJD0",), ("QUJD1",), ("QUJD2",)]


def test_a_partial_commit_names_the_turn_its_final_commit_keeps() -> None:
    buf = _buffer()
    buf.add_audio(bytes(SECOND // 4), True, None)
    item_id = buf.name_turn()
    assert buf.turn_item_id == item_id
    _, turn = buf.seal(None)
    assert turn.item_id == item_id and buf.turn_item_id is None


def test_retained_turns_join_camera_turns_to_speech() -> None:
    buf = _buffer()
    speech = buf.accept(buf.add_audio(bytes(SECOND), True, None), hold=False)
    retained = RetainedTurns()
    retained.retain(Turn(1, "item_a", speech, speech=True), None)
    camera = Turn(2, "item_b", [buf.add_vision(FramePack(("QUJD",), ("x",)))], speech=False)
    assert retained.judged(camera).speech and len(retained.judged(camera).units) == 2
    host = retained.join(camera)
    assert host is not None and host.item_id == "item_a" and len(host.units) == 2
    assert retained.latest_deferred() is None
    retained.retain(Turn(3, "item_c", speech, speech=True), Speak(text="hi"))
    assert retained.latest_deferred() == Speak(text="hi")
    assert len(retained.take()) == 2 and not retained


def test_pipeline_items_run_in_order_after_their_processing_time() -> None:
    pipeline = Pipeline(0.0, lambda job: None)
    first, second = Work(0.0, "unit"), Work(0.0, "unit")
    pipeline.enqueue(first, 100, 0.0)
    pipeline.enqueue(second, 50, 0.0)  # starts when the first is done
    assert pipeline.next_ready_at() == 0.1
    assert pipeline.pop_due(0.05) is None
    assert pipeline.pop_due(0.1) is first
    assert pipeline.next_ready_at() == pytest.approx(0.15) and pipeline.pop_due(0.16) is second
    assert pipeline.next_ready_at() is None
