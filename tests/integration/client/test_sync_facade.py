"""The blocking facade drives the same async client from plain synchronous code."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from duplex_client.protocol import b64encode
from duplex_client.sync import SyncDuplexClient
from tests.support.scripted_server import Peer, ScriptedServer


async def test_sync_client_appends_commits_and_reads_responses() -> None:
    async with ScriptedServer() as server:

        async def on_commit(peer: Peer, event: dict[str, Any]) -> None:
            await peer.send(
                {
                    "type": "input_audio_buffer.committed",
                    "client_event_id": event["event_id"],
                    "audio_end_ms": 100,
                }
            )
            await peer.send({"type": "response.created", "response": {"id": "resp_s"}})
            await peer.send(
                {
                    "type": "response.output_audio.delta",
                    "response_id": "resp_s",
                    "delta": b64encode(b"\x05\x00" * 2400),
                }
            )
            await peer.send(
                {"type": "response.done", "response": {"id": "resp_s", "status": "completed"}}
            )

        server.on("input_audio_buffer.commit", on_commit)

        def script() -> tuple[str | None, int, str | None, int]:
            with SyncDuplexClient(server.url, model="m") as client:
                client.append_input(b"\x00\x00" * 1600, is_speech=True)
                committed = client.wait_committed(client.commit(), timeout=5)
                handle = next(client.responses(idle_s=5))
                handle.wait(timeout=5)
                return (
                    client.session_id,
                    committed.audio_end_ms or 0,
                    handle.decision,
                    handle.audio_ms,
                )

        session_id, end_ms, decision, audio_ms = await asyncio.to_thread(script)
        assert session_id is not None and session_id.startswith("duplex-")
        assert (end_ms, decision, audio_ms) == (100, "speak", 100)
        received = [m for m in server.peer.received if m["type"] != "session.event_ack"]
        assert [m["type"] for m in received] == [
            "session.update",
            "input_audio_buffer.append",
            "input_audio_buffer.commit",
            "playback.ack",  # at response.done: the received audio counts as played
            "session.close",
        ]
        assert (received[3]["response_id"], received[3]["played_ms"]) == ("resp_s", 100)


async def test_a_timed_out_wait_for_a_response_does_not_take_the_next_one() -> None:
    """An iteration that ended idle leaves the next response for the next one (an abandoned
    wait used to keep running on the loop and swallow it)."""
    async with ScriptedServer() as server:

        async def on_commit(peer: Peer, event: dict[str, Any]) -> None:
            await peer.send({"type": "response.created", "response": {"id": "resp_late"}})
            await peer.send(
                {"type": "response.done", "response": {"id": "resp_late", "status": "completed"}}
            )

        server.on("input_audio_buffer.commit", on_commit)

        def script() -> str | None:
            with SyncDuplexClient(server.url, model="m") as client:
                assert next(client.responses(idle_s=0.05), None) is None  # nothing yet
                client.append_input(b"\x00\x00" * 1600)
                client.commit()
                return next(client.responses(idle_s=5)).response_id

        assert await asyncio.to_thread(script) == "resp_late"


async def test_the_blocking_client_has_the_async_clients_shape() -> None:
    """`responses(until=, idle_s=)` ends as the async one does, `handle.wait()` and a
    blocking `handle.audio()`; the old `timeout=` still works, with a warning."""
    async with ScriptedServer() as server:

        async def on_commit(peer: Peer, event: dict[str, Any]) -> None:
            await peer.send({"type": "response.created", "response": {"id": "resp_a"}})
            for _ in range(3):
                await peer.send(
                    {
                        "type": "response.output_audio.delta",
                        "response_id": "resp_a",
                        "delta": b64encode(b"\x05\x00" * 2400),
                    }
                )
                await asyncio.sleep(0.05)
            await peer.send(
                {"type": "response.done", "response": {"id": "resp_a", "status": "completed"}}
            )

        server.on("input_audio_buffer.commit", on_commit)

        def script() -> tuple[list[int], str | None, bool, list[str | None]]:
            with SyncDuplexClient(server.url, model="m") as client:
                stop = threading.Event()
                stop.set()
                assert list(client.responses(until=stop)) == []  # `until` already done
                client.append_input(b"\x00\x00" * 1600)
                client.commit()
                handle = next(client.responses(idle_s=5))
                chunks = [len(pcm) for pcm in handle.audio(timeout=5)]
                done = handle.wait(timeout=5)
                with pytest.warns(DeprecationWarning, match="idle_s"):
                    left = [h.response_id for h in client.responses(timeout=0.1)]
                return chunks, done.status, done is handle, left

        chunks, status, same, left = await asyncio.to_thread(script)
    assert chunks == [4800, 4800, 4800] and status == "completed" and same
    assert left == []  # idle: the iteration ended, no TimeoutError
