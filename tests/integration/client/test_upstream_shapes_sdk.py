"""Issue #29 point 10, the client side: a response exactly as vLLM-Omni 0.30.0 renders it.

A scripted peer sends the event sequence of `engine/duplex/realtime_events.py` for one model
turn, in both event-name generations: an audio part and a text part at `content_index: 1`,
audio deltas whose metadata carries `vllm_omni` and `audio_text_marks` (one with `audio_ms`,
the synonym upstream reads), a generic `duplex.<type>` passthrough event, and a `response.done`
with `status_details {type: "completed", reason: "stop"}` and the item's `output_audio` part.
The SDK reads all of it without failing and the bundle records it.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from duplex_client import DuplexClient
from duplex_client.bundle.writer import RunBundle
from duplex_client.protocol import (
    GA_TO_BETA,
    DuplexPassthrough,
    ResponseAudioDelta,
    ServerEvent,
    b64encode,
)
from duplex_client.protocol.objects import ContentPart
from tests.support.scripted_server import Peer, ScriptedServer

RID = "resp_q1"
IID = f"item_{RID}"
PCM = np.full(4800, 7, dtype=np.int16).tobytes()  # 200 ms at 24 kHz
RUNTIME = {"runtime_impl": "qwen3_commit", "model_turn_id": 0}


def _turn() -> list[dict[str, Any]]:
    """One model turn as 0.30.0's projection renders it (GA names)."""
    ids = {"response_id": RID, "item_id": IID}
    marks = [{"text_chars": 6, "audio_end_ms": 200}, {"text_chars": 11, "audio_ms": 400}]
    audio_part = {
        "type": "output_audio",
        "transcript": "hello there",
        "audio_duration_ms": 400,
        "audio_text_marks": [{"text_chars": 6, "audio_end_ms": 200}, marks[1]],
    }
    item = {
        "id": IID,
        "object": "realtime.item",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [audio_part, {"type": "output_text", "text": "2 words"}],
    }
    events: list[dict[str, Any]] = [
        {
            "type": "response.created",
            "response": {"id": RID, "status": "in_progress", "status_details": None, "output": []},
        },
        {"type": "response.output_item.added", "response_id": RID, "item": {**item, "content": []}},
        {"type": "response.content_part.added", **ids, "part": {"type": "audio", "transcript": ""}},
    ]
    for n, (word, mark) in enumerate(zip(("hello ", "there"), marks, strict=True)):
        meta = {
            "session_id": "duplex-test",
            "epoch": 0,
            "model_speak": True,
            "end_of_turn": n == 1,
            "vllm_omni": RUNTIME,
            "audio_duration_ms": 200 * (n + 1),
            "audio_text_marks": [mark],
        }
        events.append(
            {
                "type": "response.output_audio.delta",
                **ids,
                "delta": b64encode(PCM),
                "format": "pcm16",
                "sample_rate_hz": 24000,
                "metadata": meta,
            }
        )
        events.append({"type": "response.output_audio_transcript.delta", **ids, "delta": word})
        if n == 0:
            text_part = {"type": "text", "text": ""}
            events.append(
                {
                    "type": "response.content_part.added",
                    **ids,
                    "content_index": 1,
                    "part": text_part,
                }
            )
            events.append(
                {
                    "type": "response.output_text.delta",
                    **ids,
                    "content_index": 1,
                    "delta": "2 words",
                }
            )
            events.append({"type": "duplex.turn.signal", "event": {"type": "turn.signal"}})
    done = {"id": RID, "status": "completed", "output": [item], "metadata": {"committed": True}}
    done["status_details"] = {"type": "completed", "reason": "stop"}
    events += [
        {"type": "response.output_audio.done", **ids},
        {"type": "response.output_audio_transcript.done", **ids, "transcript": "hello there"},
        {"type": "response.content_part.done", **ids, "part": audio_part},
        {"type": "response.output_text.done", **ids, "content_index": 1, "text": "2 words"},
        {
            "type": "response.content_part.done",
            **ids,
            "content_index": 1,
            "part": {"type": "text", "text": "2 words"},
        },
        {"type": "response.output_item.done", "response_id": RID, "item": item},
        {"type": "conversation.item.done", "item": item},
        {"type": "response.done", "response_id": RID, "response": done},
        {"type": "rate_limits.updated", "rate_limits": []},
    ]
    return events


async def _send_turn(peer: Peer, beta: bool) -> None:
    for event in _turn():
        name = event["type"]
        await peer.send({**event, "type": GA_TO_BETA.get(name, name) if beta else name})


@pytest.mark.parametrize("names", ["ga", "beta"])
async def test_the_sdk_reads_a_turn_as_upstream_renders_it(tmp_path: Path, names: str) -> None:
    seen: list[ServerEvent] = []
    async with ScriptedServer() as server:
        client = DuplexClient(server.url, model="m")
        client.add_listener(lambda event, *_: seen.append(event))
        bundle = RunBundle(tmp_path / "run")
        bundle.attach(client)
        async with client:
            await _send_turn(server.peer, beta=names == "beta")
            async with asyncio.timeout(10):
                while not client.tracker.finished:
                    await asyncio.sleep(0.01)
        bundle.finish({"ok": True})
    (handle,) = client.tracker.finished
    assert handle.status == "completed" and handle.reason == "stop"
    assert handle.transcript == "hello there" and handle.text == "2 words"
    assert handle.audio_bytes() == PCM * 2
    deltas = [e for e in seen if isinstance(e, ResponseAudioDelta)]
    assert [d.vllm_omni for d in deltas] == [RUNTIME, RUNTIME]
    assert [m.audio_end_ms for d in deltas for m in d.audio_text_marks] == [200, 400]
    (passthrough,) = [e for e in seen if isinstance(e, DuplexPassthrough)]
    assert passthrough.internal_type == "turn.signal"
    item = handle.marks["done"]["response"]["output"][0]
    audio = ContentPart.from_raw(item["content"][0])
    assert audio.audio_duration_ms == 400
    assert [m.audio_end_ms for m in audio.audio_text_marks or []] == [200, 400]
    lines = [json.loads(x) for x in (tmp_path / "run" / "events.jsonl").open()]
    recorded = [x for x in lines if x["type"] == "duplex.turn.signal"]
    assert recorded and recorded[0]["event"]["event"] == {"type": "turn.signal"}
