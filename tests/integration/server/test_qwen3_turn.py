"""The qwen3-turn profile and preset (issue #29, point 12): raw JSON, then the SDK.

As vLLM-Omni 0.30.0 serves Qwen3-Omni (`model_executor/models/qwen3_omni/duplex/plugin.py`,
`input.py`, `engine/duplex/session/control.py`): `turn_based_duplex` with
`supports_image_input`; camera frames as `conversation.item.create` user items with an
`input_image` data URL (never `video_frames` on an append), at most 8 images or 4 MiB in the
history; `auto_response` and a reference voice refused; commit + `response.create` turns.
"""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from duplex_client.protocol.errors import ErrorCode
from duplex_client.run.stream import stream_clip
from duplex_client.server import ReferenceServer, Script
from tests.integration.server.conftest import MakeServer
from tests.integration.server.wire import Wire, append, tone
from tests.support.media_files import write_clip

JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(64)).decode()
ANSWER = Script.from_dict({"defaults": {"response.create": {"do": "speak", "text": "I see it"}}})


def image(url: str = f"data:image/jpeg;base64,{JPEG}", role: str = "user") -> dict[str, Any]:
    item = {"type": "message", "role": role, "content": [{"type": "input_image", "image_url": url}]}
    return {"type": "conversation.item.create", "event_id": "evt_img", "item": item}


async def _open(make_server: MakeServer, **session: Any) -> tuple[ReferenceServer, Wire]:
    server = await make_server(profile="qwen3-turn", script=ANSWER)
    wire = await Wire.connect(server.url)
    created, _ = await wire.open(extra_body={"auto_response": False}, **session)
    caps = created["session"]["capabilities"]
    assert caps["implementation_level"] == "turn_based_duplex"
    assert caps["supports_image_input"] is True and caps["supports_turn_commit_only"] is True
    assert caps["signal_sources"] == ["client_event", "server_policy"]
    return server, wire


async def test_an_image_item_then_a_turn(make_server: MakeServer) -> None:
    server, wire = await _open(
        make_server, sample_rate_hz=24000, audio={"input": {"sample_rate_hz": 24000}}
    )
    await wire.send(image())
    added = (await wire.until("conversation.item.added"))[-1]
    assert added["item"]["content"][0]["type"] == "input_image"
    await wire.send(append(tone(400, rate=24000), event_id="evt_a"))  # 24 kHz PCM16 is taken
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.send({"type": "response.create", "event_id": "evt_r"})
    done = (await wire.until("response.done"))[-1]
    assert done["response"]["status"] == "completed"
    (row,) = server.appends()
    assert row["duration_ms"] == 400 and row["audio_end_ms"] == 400  # read at its own rate
    await wire.close()


async def test_float_input_only_at_16k(make_server: MakeServer) -> None:
    """Upstream resamples PCM16 to 16 kHz float; float input at another rate reaches the
    Qwen buffer as it is, which refuses it (`bad_event`, the append is not kept)."""
    server, wire = await _open(
        make_server, input_audio_format="pcm_f32le", sample_rate_hz=24000,
        audio={"input": {"sample_rate_hz": 24000}},
    )  # fmt: skip
    await wire.send(append(bytes(4 * 2400), event_id="evt_f"))
    err = await wire.error(ErrorCode.BAD_EVENT)
    assert "16000 Hz" in err["error"]["message"]
    assert server.appends() == []
    await wire.close()
    server, wire = await _open(make_server, input_audio_format="pcm_f32le")
    await wire.send(append(bytes(4 * 1600), event_id="evt_g"))
    await wire.send({"type": "input_audio_buffer.commit", "event_id": "evt_c"})
    await wire.until("input_audio_buffer.committed")
    assert [r["duration_ms"] for r in server.appends()] == [100]
    await wire.close()


@pytest.mark.parametrize(
    ("event", "code"),
    [
        (append(tone(200), event_id="evt_v", frames=[JPEG]), ErrorCode.BAD_EVENT),
        (image("https://example.com/a.jpg"), ErrorCode.INVALID_IMAGE),
        (image(role="assistant"), ErrorCode.INVALID_IMAGE),
        (image("data:image/jpeg;base64," + base64.b64encode(b"GIF89a").decode()), "invalid_image"),
        (image("data:image/jpeg;base64," + JPEG + "A" * 4_000_000), "invalid_image"),
    ],
)
async def test_refused_as_upstream_refuses(
    make_server: MakeServer, event: dict[str, Any], code: str
) -> None:
    _, wire = await _open(make_server)
    await wire.send(event)
    err = await wire.error(code)
    assert err["error"]["type"] == "invalid_request_error"
    await wire.close()


async def test_the_ninth_image_is_backpressure_until_the_oldest_is_deleted(
    make_server: MakeServer,
) -> None:
    _, wire = await _open(make_server)
    for k in range(8):
        await wire.send(image() | {"event_id": f"evt_{k}"})
    added = [(await wire.until("conversation.item.added"))[-1]["item"]["id"] for _ in range(8)]
    await wire.send(image() | {"event_id": "evt_9"})
    err = await wire.error(ErrorCode.INPUT_BACKPRESSURE)
    assert "8 images or 4 MiB" in err["error"]["message"]
    await wire.send({"type": "conversation.item.delete", "item_id": added[0]})
    await wire.until("conversation.item.deleted")
    await wire.send(image() | {"event_id": "evt_10"})
    await wire.until("conversation.item.added")
    await wire.close()


@pytest.mark.parametrize(
    ("session", "param"),
    [
        ({"extra_body": {"auto_response": True}}, "extra_body.auto_response"),
        ({"ref_audio": "data:audio/wav;base64,UklGRg=="}, "ref_audio"),
    ],
)
async def test_the_plugins_refusals(
    make_server: MakeServer, session: dict[str, Any], param: str
) -> None:
    server = await make_server(profile="qwen3-turn")
    wire = await Wire.connect(server.url)
    await wire.send({"type": "session.update", "session": session})
    err = await wire.error(ErrorCode.INVALID_DUPLEX_RUNTIME_CONFIG)
    assert err["error"]["param"] == param


async def test_images_on_a_model_without_them_are_unsupported(make_server: MakeServer) -> None:
    server = await make_server(profile="minicpmo")
    wire = await Wire.connect(server.url)
    await wire.open()
    await wire.send(image())
    await wire.error(ErrorCode.UNSUPPORTED)
    await wire.close()


async def test_a_clip_goes_as_image_items_within_the_budget(tmp_path: Path) -> None:
    """`stream --preset qwen3-turn`: frames as items (the oldest deleted past 8), audio on
    appends, a commit and `response.create` at the end."""
    clip = write_clip(tmp_path / "c.mp4", video_seconds=10.0, audio_seconds=10.0, fps=2)
    async with ReferenceServer(profile="qwen3-turn", engine="scripted", script=ANSWER) as server:
        result = await stream_clip(
            server.url, preset="qwen3-turn", input_video=str(clip), realtime=False,
            output_dir=tmp_path / "run",
        )  # fmt: skip
        history = server.history()
        appends = server.appends()
    assert result.ok, result.error
    assert [d["decision"] for d in result.decisions] == ["speak"]
    held = [
        hashlib.sha256(base64.b64decode(p["image_url"].split(",", 1)[1])).hexdigest()
        for i in history
        for p in i.get("content") or []
        if p["type"] == "input_image"
    ]
    assert all(not a["frames"] for a in appends)
    timeline = result.timeline
    assert timeline is not None and timeline["video"]["frames_sent_as"] == "input_image_items"
    sent = [f["sha256"] for r in timeline["appends"] for f in r["frames"]]
    assert len(sent) == 10 and held == sent[-8:]  # ten frames sent, the two oldest deleted
    events = [json.loads(line) for line in (tmp_path / "run" / "events.jsonl").open()]
    deleted = [e["event"] for e in events if e["type"] == "conversation.item.deleted"]
    assert len(deleted) == 2
