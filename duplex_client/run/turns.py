"""Live usage errors: bad options, and turn modes a session cannot honour (exit code 2)."""

from __future__ import annotations

from duplex_client.protocol.errors import DuplexClientError

#: Turn modes whose turns end with commits (the client's on release, or server VAD's).
COMMIT_TURNS: frozenset[str] = frozenset({"vad", "ptt"})


class LiveUsageError(DuplexClientError):
    """Bad live options, or options the session cannot honour (exit code 2)."""


def no_commits_message(turn: str, what: str) -> str:
    """The one line refusing a commit-needing turn mode on a session that takes no commits."""
    ends = "server VAD's commits" if turn == "vad" else "a commit on release"
    return f"--turn {turn} ends turns with {ends}, but {what} takes no commits: use --turn model"
