"""OpenAI Realtime (GA) to and from duplex events, both sides (docs/dialects.md).

Evidence: OpenAI's Realtime API reference, client and server events
(developers.openai.com/api/reference/resources/realtime/client-events, …/server-events):
the server speaks first (`session.created`), the GA session nests audio under
`session.audio.input` / `.output` with `format: {type: "audio/pcm", rate: 24000}` (24 kHz
only), `turn_detection` is `server_vad` / `semantic_vad` (with `create_response`,
`interrupt_response`) or null, `input_audio_buffer.append` carries only `audio`,
`conversation.item.truncate {item_id, content_index, audio_end_ms}` is answered by
`conversation.item.truncated`, and errors are `{type: "error", error: {type, code, message,
param, event_id}}` with codes such as `invalid_event`. vLLM-Omni PR #7285 (open) serves the
same subset on `/v1/realtime` for Qwen3-Omni.
"""

from __future__ import annotations

from typing import Any

from duplex_client.protocol.dialects.base import Event, obj, synthesised_caps

#: The one PCM rate GA sessions take and give (`PCMAudioFormat.rate`).
OPENAI_RATE_HZ = 24000
_PCM = {"type": "audio/pcm", "rate": OPENAI_RATE_HZ}
#: The default turn detection when the duplex session lets the model answer by itself.
DEFAULT_TURN_DETECTION: dict[str, Any] = {"type": "server_vad", "create_response": True}
#: Duplex client events with no OpenAI counterpart: never written (the dialect has none).
_CLIENT_ONLY = frozenset(
    {"session.heartbeat", "session.event_ack", "turn.signal", "input.text.append"}
)
#: `response.create` options GA takes (`RealtimeResponseCreateParams`).
_RESPONSE_KEYS = ("instructions", "output_modalities", "max_output_tokens", "metadata", "tools")
#: Duplex server events an OpenAI client never sees (the duplex extensions).
_DUPLEX_ONLY = frozenset(
    {
        "response.speak",
        "response.listen",
        "playback.acknowledged",
        "session.heartbeat_ack",
        "session.closed",
        "session.expired",
        "session.resumed",
        "session.replaced",
        "session.resync_required",
        "turn.event",
        "input_audio_buffer.append.ack",
        "stream.drained",
    }
)
#: Duplex client events a GA client cannot send (unknown types in GA).
_DUPLEX_CLIENT_ONLY = _CLIENT_ONLY | {
    "session.resume",
    "session.close",
    "playback.ack",
    "barge_in",
    "close",
    "close_session",
    "audio.playback_ack",
}
#: Duplex error codes and the OpenAI code that says the same (others pass unchanged).
_ERROR_CODES = {"bad_event": "invalid_event", "unknown_event": "invalid_event"}


def _turn_detection(session: dict[str, Any]) -> dict[str, Any] | None:
    """The GA turn detection for a duplex session: server VAD unless the client commits."""
    given = session.get("turn_detection")
    if isinstance(given, dict) and given.get("type") in ("server_vad", "semantic_vad"):
        return dict(given)
    extra = session.get("extra_body")
    if isinstance(extra, dict) and extra.get("auto_response") is False:
        return None  # the manual lane: commit, then response.create
    return dict(DEFAULT_TURN_DETECTION)


def ga_session(session: dict[str, Any]) -> dict[str, Any]:
    """The GA `session` object for a duplex `session.update`'s session."""
    out: dict[str, Any] = {
        "type": "realtime",
        "output_modalities": ["audio"],
        "audio": {
            "input": {"format": dict(_PCM), "turn_detection": _turn_detection(session)},
            "output": {"format": dict(_PCM)},
        },
    }
    if isinstance(session.get("model"), str):
        out["model"] = session["model"]
    if isinstance(session.get("instructions"), str):
        out["instructions"] = session["instructions"]
    if isinstance(session.get("voice"), str):
        out["audio"]["output"]["voice"] = session["voice"]
    if isinstance(session.get("tools"), list):
        out["tools"] = session["tools"]
    return out


class OpenAIClientMapping:
    """The SDK's side of an OpenAI Realtime endpoint."""

    name = "openai"

    def __init__(self, *, grid_ms: int) -> None:
        self.grid_ms = grid_ms
        self._requested: dict[str, Any] = {}
        self._server_session: dict[str, Any] | None = None
        self._opened = False
        #: The assistant item of each response (a truncate names the item, an ack the response).
        self._items: dict[str, str] = {}
        #: Duplex events that had no OpenAI counterpart and were not sent, by type.
        self.unsent: dict[str, int] = {}

    def outgoing(self, event: Event) -> list[Event]:
        """One duplex client event on the OpenAI wire."""
        etype = event.get("type")
        ref = {"event_id": event["event_id"]} if isinstance(event.get("event_id"), str) else {}
        if etype == "session.update":
            session = obj(event.get("session"))
            self._requested = dict(session)
            return [{"type": "session.update", **ref, "session": ga_session(session)}]
        if etype == "input_audio_buffer.append":
            audio = event.get("audio")
            if not isinstance(audio, str) or not audio:
                return self._unsent("input_audio_buffer.append (no audio)")
            return [{"type": etype, **ref, "audio": audio}]
        if etype == "input_audio_buffer.commit" or etype == "input_audio_buffer.clear":
            return [{"type": etype, **ref}]
        if etype == "response.create":
            given = obj(event.get("response"))
            response = {k: given[k] for k in _RESPONSE_KEYS if k in given}
            return [{"type": etype, **ref, **({"response": response} if response else {})}]
        if etype in ("response.cancel", "barge_in", "output_audio_buffer.clear"):
            # GA over WebSocket: `response.cancel` (output_audio_buffer.clear is WebRTC's)
            rid = event.get("response_id")
            return [{"type": "response.cancel", **ref, **({"response_id": rid} if rid else {})}]
        if etype == "playback.ack":
            return self._truncate(event, ref)
        if etype in _CLIENT_ONLY or etype == "session.close":
            return self._unsent(str(etype))
        return [event]  # conversation.item.* and the rest: the same names in GA

    def _truncate(self, ack: Event, ref: dict[str, Any]) -> list[Event]:
        """A truncating ack is `conversation.item.truncate` at what was heard; others go nowhere."""
        # the GA item the response's events named (the ack's own is the duplex `item_<id>`)
        item_id = self._items.get(str(ack.get("response_id"))) or ack.get("item_id")
        if ack.get("truncate") is not True or not isinstance(item_id, str):
            return self._unsent("playback.ack")
        heard = ack.get("committed_ms")
        if not isinstance(heard, int):
            heard = ack.get("played_ms")
        end_ms = heard if isinstance(heard, int) and heard >= 0 else 0
        item = {"item_id": item_id, "content_index": 0, "audio_end_ms": end_ms}
        return [{"type": "conversation.item.truncate", **ref, **item}]

    def _unsent(self, what: str) -> list[Event]:
        self.unsent[what] = self.unsent.get(what, 0) + 1
        return []

    def incoming(self, event: Event) -> list[Event]:
        """One OpenAI server event as duplex events."""
        etype = event.get("type")
        rid, item = event.get("response_id"), event.get("item_id")
        if isinstance(event.get("item"), dict):  # response.output_item.added: {item: {id}}
            item = event["item"].get("id")
        if isinstance(rid, str) and isinstance(item, str):
            self._items.setdefault(rid, item)
        if etype == "session.created" and not self._opened:
            session = event.get("session")
            self._server_session = dict(session) if isinstance(session, dict) else {}
            return []  # the duplex handshake ends at the answer to our session.update
        if etype == "session.updated" and not self._opened:
            self._opened = True
            return [self._created(event)]
        if etype == "conversation.created":
            return []
        if etype == "response.created":
            response = event.get("response")
            rid = response.get("id") if isinstance(response, dict) else None
            # a response started is a speak (the dialect has no decisions)
            speak = {"type": "response.speak", "response_id": rid, "synthesised": True}
            return [event, speak] if isinstance(rid, str) else [event]
        if etype == "response.output_audio.delta":
            return [{**event, "format": "pcm16", "sample_rate_hz": OPENAI_RATE_HZ}]
        return [event]

    def _created(self, updated: Event) -> Event:
        """The duplex `session.created` for the GA session our update got."""
        ga = obj(updated.get("session"))
        base = self._server_session or {}
        requested = self._requested
        turn = obj(obj(ga.get("audio")).get("input")).get("turn_detection")
        session = {
            "id": ga.get("id") or base.get("id"),
            "object": "realtime.session",
            "model": ga.get("model") or base.get("model") or requested.get("model"),
            "modalities": requested.get("modalities", ["audio", "text"]),
            "input_audio_format": "pcm16",
            "output_audio_format": "pcm16",
            "sample_rate_hz": OPENAI_RATE_HZ,
            "audio": {
                "input": {"sample_rate_hz": OPENAI_RATE_HZ},
                "output": {"sample_rate_hz": OPENAI_RATE_HZ},
            },
            "turn_detection": turn,
            "capabilities": synthesised_caps(
                self.name, grid_ms=self.grid_ms, client_commit=turn is None
            ),
            "dialect": self.name,
            "dialect_session": ga,
        }
        return {"type": "session.created", "event_id": updated.get("event_id"), "session": session}

    def closing(self, reason: str) -> list[Event]:
        """GA has no close event: the client's close ends the session as closed."""
        return [{"type": "session.closed", "reason": reason, "synthesised": True}]


class OpenAIServerMapping:
    """The reference server's OpenAI wire in front of a duplex session."""

    name = "openai"
    #: GA's server speaks first (`session.created`).
    speaks_first = True

    def __init__(self) -> None:
        self._replies: list[Event] = []
        self._announced = False
        self._session: dict[str, Any] = {}
        self._turn_detection: dict[str, Any] | None = dict(DEFAULT_TURN_DETECTION)
        self._instructions: str | None = None

    def opening(self, model: str) -> Event:
        """The duplex session a GA socket opens: 24 kHz PCM both ways, the profile's own lane.

        The profile decides when to answer (MiniCPM-o's model-native lane, the scripted
        engine's plan), so one script gives the same answers in every dialect; the GA
        `turn_detection` asked for is echoed.
        """
        session: dict[str, Any] = {
            "input_audio_format": "pcm16",
            "sample_rate_hz": OPENAI_RATE_HZ,
            "audio": {
                "input": {"sample_rate_hz": OPENAI_RATE_HZ},
                "output": {"sample_rate_hz": OPENAI_RATE_HZ},
            },
        }
        if model:
            session["model"] = model
        return {"type": "session.update", "session": session}

    def incoming(self, event: Event) -> list[Event]:
        """One GA client event as duplex events (a duplex-only one is GA's `invalid_event`)."""
        etype = event.get("type")
        ref = {"event_id": event["event_id"]} if isinstance(event.get("event_id"), str) else {}
        if etype in _DUPLEX_CLIENT_ONLY:
            error = {
                "type": "invalid_request_error",
                "code": "invalid_event",
                "message": f"unknown event type {etype!r}",
                "param": "type",
                "event_id": ref.get("event_id"),
            }
            self._replies.append({"type": "error", "error": error})
            return []
        if etype == "session.update":
            return [{"type": etype, **ref, "session": self._duplex_session(event.get("session"))}]
        if etype == "input_audio_buffer.append":
            return [{"type": etype, **ref, "audio": event.get("audio")}]
        if etype == "conversation.item.truncate":
            # the heard position: a truncating playback ack cuts history to it (§5)
            item = event.get("item_id")
            end_ms = event.get("audio_end_ms")
            rid = (
                item[len("item_") :] if isinstance(item, str) and item.startswith("item_") else item
            )
            ack = {"response_id": rid, "item_id": item, "played_ms": end_ms}
            return [
                {"type": "playback.ack", **ref, **ack, "committed_ms": end_ms, "truncate": True}
            ]
        return [event]

    def replies(self) -> list[Event]:
        """GA events answering client events no duplex event stands for (taken once)."""
        out, self._replies = self._replies, []
        return out

    def _duplex_session(self, given: Any) -> dict[str, Any]:
        """A GA session object as a duplex one (the audio format is GA's fixed one)."""
        session = given if isinstance(given, dict) else {}
        out: dict[str, Any] = {}
        audio = obj(session.get("audio"))
        audio_in = obj(audio.get("input"))
        audio_out = obj(audio.get("output"))
        if "turn_detection" in audio_in:
            td = audio_in["turn_detection"]
            self._turn_detection = dict(td) if isinstance(td, dict) else None
        if isinstance(session.get("instructions"), str):
            self._instructions = out["instructions"] = session["instructions"]
        if isinstance(audio_out.get("voice"), str):
            out["voice"] = audio_out["voice"]
        if isinstance(session.get("tools"), list):
            out["tools"] = session["tools"]
        return out

    def outgoing(self, event: Event) -> list[Event]:
        """One duplex server event on the GA wire (duplex-only events are not sent)."""
        etype = event.get("type")
        if etype in ("session.created", "session.updated"):
            return self._session_event(event)
        if etype in _DUPLEX_ONLY or not isinstance(etype, str):
            if etype == "playback.acknowledged" and event.get("truncate") is True:
                return [self._truncated(event)]
            return []
        out = {k: v for k, v in event.items() if k not in ("server_event_seq", "metadata")}
        if etype == "response.output_audio.delta":
            out.pop("format", None)
            out.pop("sample_rate_hz", None)
        elif etype == "error":
            out["error"] = self._error(event.get("error"))
        elif etype in ("response.created", "response.done") and isinstance(
            out.get("response"), dict
        ):
            out["response"] = {k: v for k, v in out["response"].items() if k != "metadata"}
        return [out]

    def _session_event(self, event: Event) -> list[Event]:
        session = obj(event.get("session"))
        ga = self._ga(session)
        if not self._announced:  # the socket's first words: session and conversation
            self._announced = True
            conversation = {"id": f"conv_{ga['id']}", "object": "realtime.conversation"}
            return [
                {"type": "session.created", "event_id": event.get("event_id"), "session": ga},
                {"type": "conversation.created", "conversation": conversation},
            ]
        if event.get("server_event_seq") == 1 and event.get("type") == "session.updated":
            return []  # the duplex session's opening echo: GA has said it with session.created
        return [{"type": "session.updated", "event_id": event.get("event_id"), "session": ga}]

    def _ga(self, session: dict[str, Any]) -> dict[str, Any]:
        """The duplex session object as a GA one."""
        audio_in: dict[str, Any] = {"format": dict(_PCM), "turn_detection": self._turn_detection}
        audio_out: dict[str, Any] = {"format": dict(_PCM)}
        if isinstance(session.get("voice"), str):
            audio_out["voice"] = session["voice"]
        ga: dict[str, Any] = {
            "id": session.get("id"),
            "object": "realtime.session",
            "type": "realtime",
            "model": session.get("model"),
            "output_modalities": ["audio"],
            "audio": {"input": audio_in, "output": audio_out},
        }
        if self._instructions is not None:
            ga["instructions"] = self._instructions
        return ga

    def _truncated(self, ack: Event) -> Event:
        """`conversation.item.truncated` for the truncating ack a truncate became."""
        return {
            "type": "conversation.item.truncated",
            "event_id": ack.get("event_id"),
            "item_id": ack.get("item_id"),
            "content_index": 0,
            "audio_end_ms": ack.get("committed_ms"),
        }

    def _error(self, error: Any) -> dict[str, Any]:
        info = dict(error) if isinstance(error, dict) else {}
        code = info.get("code")
        if isinstance(code, str):
            info["code"] = _ERROR_CODES.get(code, code)
        return info
