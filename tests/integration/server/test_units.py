"""Conformance: unit assembly on the grid, unit kinds, commits, and the accepted-append record."""

from __future__ import annotations

import hashlib
from typing import Any

from duplex_client.protocol import ErrorCode
from duplex_client.server import Script
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import JPEG, Wire, append, b64, frame, silence, tone


def _listens(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e["response"]["metadata"] for e in events if e["type"] == "response.listen"]


async def test_audio_units_close_on_the_grid(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    for i in range(10):  # 10 x 200 ms: units close at 1000 and 2000 ms
        await wire.send(append(tone(200), event_id=f"evt_{i}"))
    events = await wire.until(
        lambda e: e["type"] == "response.listen" and e["response"]["metadata"]["unit_index"] == 1
    )
    metas = _listens(events)
    assert [(m["unit_index"], m["unit_kind"], m["audio_unit_index"]) for m in metas] == [
        (0, "AUDIO", 0),
        (1, "AUDIO", 1),
    ]
    rows = server.appends()
    assert [r["unit_index"] for r in rows] == [None] * 4 + [0] + [None] * 4 + [1]
    assert [r["audio_end_ms"] for r in rows] == [200 * (i + 1) for i in range(10)]
    await wire.close()


async def test_vision_then_audio_keeps_the_first_audio_unit(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(event_id="evt_v0", frames=[frame(0)], is_speech=False))
    await wire.send(append(event_id="evt_v1", frames=[frame(1)], is_speech=False))
    for i in range(5):
        frames = [frame(9)] if i == 4 else None
        await wire.send(append(tone(200), event_id=f"evt_a{i}", frames=frames))
    events = await wire.until(
        lambda e: e["type"] == "response.listen" and e["response"]["metadata"]["unit_index"] == 2
    )
    metas = _listens(events)
    assert [(m["unit_index"], m["unit_kind"], m["audio_unit_index"]) for m in metas] == [
        (0, "VISION", None),
        (1, "VISION", None),
        (2, "OMNI", 0),  # the first audio unit, still first_unit_ms long
    ]
    rows = server.appends()
    assert (
        rows[0]["unit_kind"] == "VISION"
        and rows[0]["audio_end_ms"] == 0
        and rows[0]["duration_ms"] == 0
    )
    assert rows[-1] | {"frames": None} == rows[-1] | {
        "unit_kind": "OMNI",
        "unit_index": 2,
        "audio_unit_index": 0,
        "audio_end_ms": 1000,
        "frames": None,
    }
    assert rows[-1]["frames"][0]["sha256"] == hashlib.sha256(JPEG + bytes([9]) * 8).hexdigest()
    await wire.close()


async def test_frames_on_a_non_closing_append_are_queued_fifo(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(200), event_id="evt_0", frames=[frame(1)]))  # closes nothing
    await wire.send(append(tone(800), event_id="evt_1"))  # closes unit 0: gets the queued group
    events = await wire.until("response.listen")
    assert _listens(events)[0]["unit_kind"] == "OMNI"
    rows = server.appends()
    assert rows[0]["unit_kind"] is None and len(rows[0]["frames"]) == 1
    assert rows[1]["unit_kind"] == "OMNI"
    await wire.close()


async def test_require_audio_rejects_frame_only_appends(make_server: MakeServer) -> None:
    server = await make_server(require_audio=True)
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(event_id="evt_v", frames=[frame(0)]))
    err = await wire.error(ErrorCode.BAD_EVENT)
    assert err["error"]["param"] == "audio" and err["error"]["event_id"] == "evt_v"
    # the fallback (silent PCM with the frame on the closing append) is accepted
    await wire.send(append(silence(1000), event_id="evt_f", frames=[frame(0)], is_speech=False))
    metas = _listens(await wire.until("response.listen"))
    assert metas[0]["unit_kind"] == "OMNI"
    await wire.close()


async def test_require_audio_can_emulate_invalid_video_frames(make_server: MakeServer) -> None:
    server = await make_server(require_audio=True, illegal_unit_code=ErrorCode.INVALID_VIDEO_FRAMES)
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(event_id="evt_v", frames=[frame(0)]))
    await wire.error(ErrorCode.INVALID_VIDEO_FRAMES)
    await wire.close()


async def test_aura_video_required(make_server: MakeServer) -> None:
    server = await make_server(profile="aura")
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(1000), event_id="evt_a"))
    err = await wire.error(ErrorCode.INVALID_INPUT_MODALITY)  # vLLM-Omni's code, per append
    assert err["error"]["param"] == "video_frames"
    await wire.send(append(event_id="evt_v", frames=[frame(0)]))  # a frame-only unit
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    events = await wire.until("response.done")
    committed = next(e for e in events if e["type"] == "input_audio_buffer.committed")
    assert "no_response" not in committed  # a frame-only unit opens a turn
    created = next(e for e in events if e["type"] == "response.created")
    assert created["response"]["metadata"]["unit_kind"] == "VISION"
    await wire.send(append(tone(1000), event_id="evt_o", frames=[frame(1)]))
    assert _listens(await wire.until("response.listen"))[0]["unit_kind"] == "OMNI"
    await wire.close()


async def test_commit_pads_the_residual_and_acknowledges(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    for i in range(7):  # 1400 ms: unit 0 closes, 400 ms residual
        await wire.send(append(tone(200), event_id=f"evt_{i}"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    events = await wire.until("response.done")
    types = [e["type"] for e in events]
    i_added = types.index("conversation.item.added")
    i_ack = types.index("input_audio_buffer.committed")
    assert (
        i_added < types.index("conversation.item.created") < i_ack < types.index("response.created")
    )
    ack = events[i_ack]
    assert ack["client_event_id"] == "evt_c" and ack["event"]["client_event_id"] == "evt_c"
    assert ack["audio_end_ms"] == 1400 and ack["final"] is True
    assert ack["item_id"] == events[i_added]["item"]["id"]
    created = next(e for e in events if e["type"] == "response.created")
    meta = created["response"]["metadata"]
    assert (meta["unit_index"], meta["unit_kind"], meta["audio_unit_index"]) == (1, "AUDIO", 1)
    # the next audio unit starts at the commit's position (a whole chunk period later)
    for i in range(5):
        await wire.send(append(tone(200), event_id=f"evt_n{i}"))
    metas = _listens(await wire.until("response.listen"))
    assert metas[-1]["unit_index"] == 2
    assert server.appends()[-1]["audio_end_ms"] == 2400 and server.appends()[-1]["unit_index"] == 2
    await wire.close()


async def test_quiet_commit_gets_no_response_and_a_listen(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(silence(600), event_id="evt_s"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    events = await wire.until("response.listen")
    ack = next(e for e in events if e["type"] == "input_audio_buffer.committed")
    assert ack["no_response"] is True and ack["event"]["no_response"] is True
    assert events[-1].get("response_id") is None
    assert not any(e["type"] == "response.created" for e in events)
    # is_speech: false on the commit declares loud audio non-speech
    await wire.send(append(tone(600), event_id="evt_t"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c2", "is_speech": False})
    ack2 = (await wire.until("input_audio_buffer.committed"))[-1]
    assert ack2["no_response"] is True
    await wire.close()


async def test_non_final_commit(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(400), event_id="evt_a"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c", "final": False})
    ack = (await wire.until("input_audio_buffer.committed"))[-1]
    assert ack["final"] is False and ack["client_event_id"] == "evt_c"
    await wire.send({"type": "session.heartbeat"})
    events = await wire.until("session.heartbeat_ack")
    assert not any(e["type"].startswith("response.") for e in events)
    await wire.close()


async def test_manual_commit_drains_two_queued_frames(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open(extra_body={"auto_response": False})
    await wire.send(append(event_id="evt_v0", frames=[frame(0)], is_speech=False))
    await wire.send(append(event_id="evt_v1", frames=[frame(1)], is_speech=False))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    events = await wire.until("input_audio_buffer.committed")
    assert not any(e["type"].startswith("response.") for e in events)  # queued, not decided
    ack = events[-1]
    assert "no_response" not in ack
    item = next(e for e in events if e["type"] == "conversation.item.added")["item"]
    assert item["metadata"]["unit_indices"] == [0, 1]
    await wire.send({"type": "response.create", "event_id": "evt_r"})
    done = (await wire.until("response.done"))[-1]
    meta = done["response"]["metadata"]
    assert meta["turn_unit_indices"] == [0, 1]
    assert (meta["unit_index"], meta["unit_kind"]) == (1, "VISION")
    assert "saw 2 images" in done["response"]["output"][0]["content"][0]["transcript"]
    await wire.close()


async def test_manual_commit_drains_frames_then_residual_speech(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open(extra_body={"auto_response": False})
    await wire.send(append(event_id="evt_v0", frames=[frame(0)], is_speech=False))
    await wire.send(append(event_id="evt_v1", frames=[frame(1)], is_speech=False))
    await wire.send(append(tone(400), event_id="evt_a0"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    events = await wire.until("input_audio_buffer.committed")
    item = next(e for e in events if e["type"] == "conversation.item.added")["item"]
    assert item["metadata"]["unit_indices"] == [0, 1, 2]
    assert item["content"][0]["is_speech"] is True
    assert events[-1]["audio_end_ms"] == 400
    await wire.send(
        {"type": "response.create", "event_id": "evt_r", "response": {"metadata": {"tag": "x"}}}
    )
    events = await wire.until("response.done")
    created = next(e for e in events if e["type"] == "response.created")
    meta = created["response"]["metadata"]
    assert meta["turn_unit_indices"] == [0, 1, 2]
    assert (meta["unit_index"], meta["unit_kind"], meta["audio_unit_index"]) == (2, "AUDIO", 0)
    assert meta["request"] == {"tag": "x"}
    transcript = events[-1]["response"]["output"][0]["content"][0]["transcript"]
    assert "400 ms of audio with speech" in transcript and "2 images" in transcript
    await wire.close()


async def test_response_create_false_retains_then_camera_commit_merges(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(1000), event_id="evt_a"))
    await wire.send(
        {"type": "input_audio_buffer.commit", "event_id": "evt_c1", "response_create": False}
    )
    ack1 = (await wire.until("input_audio_buffer.committed"))[-1]
    await wire.send(append(event_id="evt_v", frames=[frame(3)], is_speech=False))
    await wire.send(
        {"type": "input_audio_buffer.commit", "event_id": "evt_c2", "response_create": True}
    )
    events = await wire.until("response.done")
    ack2 = next(e for e in events if e["type"] == "input_audio_buffer.committed")
    assert ack2["item_id"] == ack1["item_id"]  # the speech item is kept
    created = next(e for e in events if e["type"] == "response.created")
    assert created["response"]["metadata"]["turn_unit_indices"] == [0, 1]
    await wire.close()


async def test_idempotent_resend_is_ignored(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    for _ in range(2):
        await wire.send(append(tone(600), event_id="evt_same"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    ack = (await wire.until("input_audio_buffer.committed"))[-1]
    assert ack["audio_end_ms"] == 600
    assert len(server.appends()) == 1
    await wire.send({"type": "session.heartbeat"})
    events = await wire.until("session.heartbeat_ack")
    assert not any(e["type"] == "error" for e in events)
    assert sum(e["type"] == "input_audio_buffer.committed" for e in wire.received) == 1
    await wire.close()


async def test_clear_drops_buffered_input(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(tone(400), event_id="evt_a", frames=[frame(0)]))
    await wire.send({"type": "input_audio_buffer.clear", "event_id": "evt_clr"})
    cleared = (await wire.until("input_audio_buffer.cleared"))[-1]
    assert cleared["client_event_id"] == "evt_clr"
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.error(ErrorCode.INPUT_AUDIO_BUFFER_EMPTY)
    assert server.session().inputs.held_bytes == 0
    await wire.close()


async def test_scripted_unit_speech_and_force_listen(make_server: MakeServer) -> None:
    script = Script.from_dict(
        {
            "rules": [
                {"on": "unit", "index": 1, "do": "speak", "text": "hello there"},
                {"on": "unit", "index": 0, "do": "speak", "text": "never"},
            ]
        }
    )
    server = await make_server(script=script)
    wire = await Wire.connect(server.url)
    await wire.open(extra_body={"force_listen_count": 1})
    await wire.send(append(tone(2000), event_id="evt_a"))
    events = await wire.until("response.done")
    assert _listens(events)[0]["reason"] == "force_listen"
    created = next(e for e in events if e["type"] == "response.created")
    assert created["response"]["metadata"]["unit_index"] == 1
    assert created["response"]["metadata"]["trigger"] == "unit"
    transcript = "".join(
        e["delta"] for e in events if e["type"] == "response.output_audio_transcript.delta"
    )
    assert transcript == "hello there"
    await wire.close()


async def test_b64_frames_with_data_url_prefix_are_accepted(server) -> None:
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(append(event_id="evt_v", frames=["data:image/jpeg;base64," + b64(JPEG)]))
    await wire.until("response.listen")
    await wire.close()
