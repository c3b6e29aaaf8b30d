"""`ResponseState`: one response's audio, transcript and playback record (protocol.md §5)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from duplex_client.server.engine.base import AudioChunk


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
    done: bool = False
    sealed: bool = False
    played_ms: int = 0
    committed_ms: int = 0
    truncated: bool = False
    #: The client event that asked for this response (its commit or `response.create`).
    request_id: str | None = None

    @property
    def item_id(self) -> str:
        """`item_<response_id>`."""
        return f"item_{self.response_id}"

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
