"""A response's content parts as vLLM-Omni 0.30.0 renders them (`engine/duplex/realtime_events.py`).

The assistant item holds an `output_audio` part (with the response's `audio_duration_ms` and
its `audio_text_marks`) or an `output_text` part; text the model writes next to its speech is
a second part, `content_index` 1, opened with its first text and closed after the audio part.
"""

from __future__ import annotations

from typing import Any, Final

from duplex_client.protocol import response_events as r
from duplex_client.protocol.objects import AudioTextMark, ContentPart, Item
from duplex_client.server.emitter import Emitter
from duplex_client.server.response_state import ResponseState

#: A text part as it opens (`response.content_part.added`).
TEXT_PART: Final = ContentPart(type="text", text="")
#: Where text next to an audio part goes.
_SHOWN_INDEX: Final = 1


def assistant_item(state: ResponseState, status: str) -> dict[str, Any]:
    """The assistant item of a response: its audio part (and text part) or its text part."""
    if "audio" not in state.modalities:
        content = [ContentPart(type="output_text", text=state.transcript)]
    else:
        audio = ContentPart(type="output_audio", transcript=state.transcript)
        if state.marks:
            audio.audio_duration_ms = state.audio_ms
            audio.audio_text_marks = [
                AudioTextMark(text_chars=chars, audio_end_ms=ms) for chars, ms in state.marks
            ]
        content = [audio]
        if state.shown and state.next_chunk > 0:
            content.append(ContentPart(type="output_text", text=state.shown))
    return Item(id=state.item_id, role="assistant", status=status, content=content).to_dict()


def shown_added(state: ResponseState, emitter: Emitter, now: float) -> None:
    """Open the text part next to the audio and send its text (with the first audio delta)."""
    rid, iid = state.response_id, state.item_id
    added = r.ResponseContentPartAdded(
        response_id=rid, item_id=iid, content_index=_SHOWN_INDEX, part=TEXT_PART.to_dict()
    )
    emitter.emit(added, now)
    delta = r.ResponseTextDelta(
        response_id=rid, item_id=iid, content_index=_SHOWN_INDEX, delta=state.shown
    )
    emitter.emit(delta, now)


def shown_done(state: ResponseState, emitter: Emitter, now: float) -> None:
    """Close the text part (after the audio part's `response.content_part.done`)."""
    rid, iid, text = state.response_id, state.item_id, state.shown
    done = r.ResponseTextDone(response_id=rid, item_id=iid, content_index=_SHOWN_INDEX, text=text)
    emitter.emit(done, now)
    part = ContentPart(type="text", text=text).to_dict()
    emitter.emit(
        r.ResponseContentPartDone(
            response_id=rid, item_id=iid, content_index=_SHOWN_INDEX, part=part
        ),
        now,
    )
