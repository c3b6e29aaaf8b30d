"""`ResponseState`: one response's audio, transcript and playback record (protocol.md §5)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from duplex_client.server.engine.base import AudioChunk

#: What the request metrics measure from (vLLM-Omni's `measurement_origin`, our words).
REQUEST_MEASUREMENT_ORIGIN = {
    "ttft": "latest input append accepted before the response began, to its first text",
    "ttfp": "latest input append accepted before the response began, to its first audio",
}


@dataclass
class ResponseState:
    """One response from `response.created` to `response.done`, then its playback record.

    The record's invariants are kept here: played audio never moves back, committed audio
    never exceeds what was played (nor what was generated), and a truncation is final.
    """

    response_id: str
    metadata: dict[str, Any]
    modalities: tuple[str, ...]
    chunks: list[AudioChunk] = field(default_factory=list)
    next_chunk: int = 0
    next_due: float = 0.0
    audio_ms: int = 0
    transcript: str = ""
    #: `(text_chars, audio_end_ms)` after each audio delta: the item's `audio_text_marks`.
    marks: list[tuple[int, int]] = field(default_factory=list)
    #: Text written next to the speech: an `output_text` part at `content_index` 1.
    shown: str = ""
    done: bool = False
    sealed: bool = False
    played_ms: int = 0
    committed_ms: int = 0
    truncated: bool = False
    #: The client event that asked for this response (its commit or `response.create`).
    request_id: str | None = None
    #: When the latest input append accepted before the response began was accepted (the
    #: request start of vLLM-Omni's `response_request_metrics`), and when the first text and
    #: the first audio of the response went out; server clock, seconds.
    request_started_at: float | None = None
    first_text_at: float | None = None
    first_audio_at: float | None = None

    @property
    def item_id(self) -> str:
        """`item_<response_id>`."""
        return f"item_{self.response_id}"

    def mark_output(self, now: float, *, text: bool, audio: bool) -> None:
        """Note the first text and the first audio sent (what the request metrics time)."""
        if text and self.first_text_at is None:
            self.first_text_at = now
        if audio and self.first_audio_at is None:
            self.first_audio_at = now

    def request_metrics(self) -> dict[str, Any] | None:
        """`response_request_metrics`: request start to first text / audio, in ms (None: no
        request start, or no output yet)."""
        start = self.request_started_at
        if start is None or (self.first_text_at is None and self.first_audio_at is None):
            return None
        out: dict[str, Any] = {
            "source": "server_monotonic_request_start",
            "measurement_origin": dict(REQUEST_MEASUREMENT_ORIGIN),
        }
        if self.first_text_at is not None:
            out["ttft_ms"] = round(max(0.0, self.first_text_at - start) * 1000.0, 3)
        if self.first_audio_at is not None:
            out["ttfp_ms"] = round(max(0.0, self.first_audio_at - start) * 1000.0, 3)
        return out

    def acknowledge(
        self, played_ms: int, committed_ms: int | None, *, truncate: bool, ack_only: bool
    ) -> None:
        """Apply a `playback.ack`: under `ack_only` (or a truncation) it also commits."""
        if self.truncated:
            return
        committed = played_ms if committed_ms is None else committed_ms
        self.played_ms = max(self.played_ms, min(played_ms, self.audio_ms))
        new_committed = min(committed, played_ms, self.audio_ms)
        if truncate:
            self.committed_ms = new_committed
        elif ack_only:
            self.committed_ms = max(self.committed_ms, new_committed)
        self.truncated = truncate

    def truncate_at(self, audio_end_ms: int) -> None:
        """Cut the committed audio at `audio_end_ms` (`conversation.item.truncate`)."""
        self.committed_ms = min(audio_end_ms, self.audio_ms)
        self.truncated = True

    def commit_all(self) -> None:
        """Commit every generated ms (`commit_all_on_done`)."""
        self.committed_ms = self.audio_ms

    def in_history(self, *, ack_only: bool) -> bool:
        """Whether any of the answer is in the model's history."""
        return self.committed_ms > 0 and (ack_only or self.done)

    def remembered_transcript(self) -> str:
        """The transcript cut in proportion to the committed audio (what the model keeps)."""
        words = self.transcript.split()
        if self.audio_ms == 0:
            return " ".join(words)
        return " ".join(words[: round(len(words) * self.committed_ms / self.audio_ms)])
