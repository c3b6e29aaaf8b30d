"""GPT-Live (`/v1/live/sessions`) to and from duplex events, both sides (docs/dialects.md).

Evidence: OpenAI's GPT-Live guides (developers.openai.com/api/docs/guides/voice-websockets:
connect to `/v1/live/sessions` with no query parameters and a bearer key, send `session.start`
first and wait for `session.started`; …/guides/live-conversations) and the event models of the
public OpenAPI document as generated in openai-client-base 0.16.0 (docs.rs) and
@azure/ai-projects (learn.microsoft.com): `session.input_audio.append {audio}` (no
acknowledgment), `session.input_audio.mute` / `.unmute` answered by `session.input_audio.muted`
/ `.unmuted`, `session.output_audio.delta {delta}` (no response id, no times on the primary
socket), `session.output_transcript.delta {delta, start_ms, end_ms}` on the session timeline,
`error {error: {client_event_id, code, message}}`. The model starts and ends its own turns:
no client event creates, cancels or truncates a response, so there is no truncate to send.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from duplex_client.protocol.dialects.base import Event, obj, synthesised_caps

#: The PCM the SDK sends and reads in this dialect (the guides' example: PCM16 at 24 kHz).
GPT_LIVE_RATE_HZ = 24000
#: Where a GPT-Live endpoint lives.
LIVE_PATH = "/v1/live/sessions"
#: The one response the whole stream is (a continuous stream, protocol.md §9.2).
STREAM_RESPONSE_ID = "resp_gpt_live_stream"
_BYTES_PER_MS = GPT_LIVE_RATE_HZ * 2 // 1000
#: Duplex client events GPT-Live has no counterpart for (never written).
_UNSENT = frozenset(
    {
        "session.heartbeat",
        "session.event_ack",
        "turn.signal",
        "input.text.append",
        "input_audio_buffer.commit",
        "input_audio_buffer.clear",
        "response.create",
        "response.cancel",
        "barge_in",
        "output_audio_buffer.clear",
        "playback.ack",
        "session.close",
        "session.update",
    }
)


def _session_start(session: dict[str, Any]) -> dict[str, Any]:
    """The `session.start` session object for a duplex session (model, instructions, voice)."""
    out: dict[str, Any] = {}
    for key in ("model", "instructions"):
        if isinstance(session.get(key), str):
            out[key] = session[key]
    if isinstance(session.get("voice"), str):
        out["audio"] = {"output": {"voice": session["voice"]}}
    return out


class GptLiveClientMapping:
    """The SDK's side of a GPT-Live endpoint: one continuous stream, one response."""

    name = "gpt-live"

    def __init__(self, *, grid_ms: int) -> None:
        self.grid_ms = grid_ms
        self._requested: dict[str, Any] = {}
        self._started = False
        self._speaking = False
        self._closed = False
        #: Duplex events that had no GPT-Live counterpart and were not sent, by type.
        self.unsent: dict[str, int] = {}

    def outgoing(self, event: Event) -> list[Event]:
        """One duplex client event on the GPT-Live wire."""
        etype = event.get("type")
        ref = {"event_id": event["event_id"]} if isinstance(event.get("event_id"), str) else {}
        if etype == "session.update" and not self._started and not self._requested:
            given = event.get("session")
            self._requested = dict(given) if isinstance(given, dict) else {}
            return [{"type": "session.start", **ref, "session": _session_start(self._requested)}]
        if etype == "input_audio_buffer.append":
            audio = event.get("audio")
            if isinstance(audio, str) and audio:
                return [{"type": "session.input_audio.append", **ref, "audio": audio}]
            etype = "input_audio_buffer.append (no audio)"
        elif etype not in _UNSENT:
            etype = f"{etype} (unknown)"
        self.unsent[str(etype)] = self.unsent.get(str(etype), 0) + 1
        return []

    def incoming(self, event: Event) -> list[Event]:
        """One GPT-Live server event as duplex events."""
        etype = event.get("type")
        if etype == "session.started" and not self._started:
            self._started = True
            return [self._created(event)]
        if etype == "session.output_audio.delta":
            out = self._open_response()
            delta = {
                "type": "response.output_audio.delta",
                "response_id": STREAM_RESPONSE_ID,
                "item_id": f"item_{STREAM_RESPONSE_ID}",
                "delta": event.get("delta"),
                "format": "pcm16",
                "sample_rate_hz": GPT_LIVE_RATE_HZ,
            }
            return [*out, delta]
        if etype == "session.output_transcript.delta":
            text = {
                "type": "response.output_audio_transcript.delta",
                "response_id": STREAM_RESPONSE_ID,
                "delta": event.get("delta"),
                "start_ms": event.get("start_ms"),
                "end_ms": event.get("end_ms"),
            }
            return [*self._open_response(), text]
        if etype == "session.closed":
            reason = event.get("reason")
            return self.closing(reason if isinstance(reason, str) else "session_closed")
        return [event]

    def _open_response(self) -> list[Event]:
        """The stream's response opens with its first output: a response started is a speak."""
        if self._speaking:
            return []
        self._speaking = True
        response = {"id": STREAM_RESPONSE_ID, "status": "in_progress"}
        return [
            {"type": "response.created", "response": response, "synthesised": True},
            {"type": "response.speak", "response_id": STREAM_RESPONSE_ID, "synthesised": True},
        ]

    def _created(self, started: Event) -> Event:
        """The duplex `session.created` for `session.started`."""
        session = obj(started.get("session"))
        sid = session.get("id") or started.get("session_id")
        caps = synthesised_caps(self.name, grid_ms=self.grid_ms, client_commit=False)
        # one continuous stream, drained at the close; no acks, no truncate
        caps.update(
            response_lifecycle="continuous_stream",
            supports_playback_ack=False,
            supports_audio_truncate=False,
            signal_sources=["model_native"],
        )
        duplex = {
            "id": sid,
            "object": "realtime.session",
            "model": session.get("model") or self._requested.get("model"),
            "modalities": self._requested.get("modalities", ["audio", "text"]),
            "input_audio_format": "pcm16",
            "output_audio_format": "pcm16",
            "sample_rate_hz": GPT_LIVE_RATE_HZ,
            "audio": {
                "input": {"sample_rate_hz": GPT_LIVE_RATE_HZ},
                "output": {"sample_rate_hz": GPT_LIVE_RATE_HZ},
            },
            "turn_detection": None,
            "capabilities": caps,
            "dialect": self.name,
            "dialect_session": session,
        }
        return {"type": "session.created", "event_id": started.get("event_id"), "session": duplex}

    def closing(self, reason: str) -> list[Event]:
        """The end of the session: the stream's response drained, then `session.closed`."""
        if self._closed:
            return []
        self._closed = True
        out: list[Event] = []
        if self._speaking:
            response = {
                "id": STREAM_RESPONSE_ID,
                "status": "completed",
                "status_details": {"type": "completed", "reason": "stream_drained"},
            }
            out.append({"type": "response.done", "response": response, "synthesised": True})
        out.append({"type": "session.closed", "reason": reason, "synthesised": True})
        return out


class GptLiveServerMapping:
    """The reference server's GPT-Live wire in front of a duplex session."""

    name = "gpt-live"
    #: GPT-Live's client speaks first (`session.start`).
    speaks_first = False

    def __init__(self) -> None:
        self._replies: list[Event] = []
        self._muted = False
        #: Input audio received so far: the session timeline transcripts are placed on.
        self._input_ms = 0

    def opening(self, model: str) -> Event:
        """Not used: the session opens with the client's `session.start`."""
        return {"type": "session.update", "session": {"model": model} if model else {}}

    def incoming(self, event: Event) -> list[Event]:
        """One GPT-Live client event as duplex events (others: GPT-Live's `invalid_event`)."""
        etype = event.get("type")
        ref = {"event_id": event["event_id"]} if isinstance(event.get("event_id"), str) else {}
        if etype == "session.start":
            given = event.get("session")
            return [{"type": "session.update", **ref, "session": self._duplex(given)}]
        if etype == "session.input_audio.append":
            audio = event.get("audio")
            if isinstance(audio, str):
                try:
                    size = len(base64.b64decode(audio, validate=True))
                except (binascii.Error, ValueError):
                    size = 0
                self._input_ms += size // _BYTES_PER_MS
                if self._muted:  # muted: the model hears silence of the same length
                    audio = base64.b64encode(bytes(size)).decode()
            return [{"type": "input_audio_buffer.append", **ref, "audio": audio}]
        if etype in ("session.input_audio.mute", "session.input_audio.unmute"):
            self._muted = etype.endswith(".mute")
            answer = "session.input_audio.muted" if self._muted else "session.input_audio.unmuted"
            self._replies.append({"type": answer, "client_event_id": ref.get("event_id")})
            return []
        self._replies.append(
            {
                "type": "error",
                "error": {
                    "client_event_id": ref.get("event_id"),
                    "code": "invalid_event",
                    "message": f"unknown event type {etype!r}",
                },
            }
        )
        return []

    def _duplex(self, given: Any) -> dict[str, Any]:
        session = given if isinstance(given, dict) else {}
        out: dict[str, Any] = {
            "input_audio_format": "pcm16",
            "sample_rate_hz": GPT_LIVE_RATE_HZ,
            "audio": {
                "input": {"sample_rate_hz": GPT_LIVE_RATE_HZ},
                "output": {"sample_rate_hz": GPT_LIVE_RATE_HZ},
            },
        }
        for key in ("model", "instructions"):
            if isinstance(session.get(key), str):
                out[key] = session[key]
        audio = obj(session.get("audio"))
        voice = (
            audio.get("output", {}).get("voice") if isinstance(audio.get("output"), dict) else None
        )
        if isinstance(voice, str):
            out["voice"] = voice
        return out

    def replies(self) -> list[Event]:
        """GPT-Live events answering client events no duplex event stands for (taken once)."""
        out, self._replies = self._replies, []
        return out

    def outgoing(self, event: Event) -> list[Event]:
        """One duplex server event on the GPT-Live wire (the rest is not sent)."""
        etype = event.get("type")
        if etype == "session.created":
            session = obj(event.get("session"))
            started = {"id": session.get("id"), "model": session.get("model")}
            return [
                {"type": "session.started", "event_id": event.get("event_id"), "session": started}
            ]
        if etype == "response.output_audio.delta":
            return [{"type": "session.output_audio.delta", "delta": event.get("delta")}]
        if etype == "response.output_audio_transcript.delta":
            at = self._input_ms
            text = {"delta": event.get("delta"), "start_ms": at, "end_ms": at}
            return [{"type": "session.output_transcript.delta", **text}]
        if etype == "conversation.item.input_audio_transcription.completed":
            at = self._input_ms
            said = {"delta": event.get("transcript"), "start_ms": at, "end_ms": at}
            return [{"type": "session.input_transcript.delta", **said}]
        if etype in ("session.closed", "session.expired"):
            return [{"type": "session.closed", "reason": event.get("reason")}]
        if etype == "error":
            error = obj(event.get("error"))
            info = {
                "client_event_id": error.get("event_id"),
                "code": "invalid_event"
                if error.get("code") in ("bad_event", "unknown_event")
                else error.get("code"),
                "message": error.get("message"),
            }
            return [{"type": "error", "error": info}]
        return []
