"""Who ends a turn: the model (`model`), server VAD's commits (`vad`) or a talk key (`ptt`)."""

from __future__ import annotations

from typing import Literal, get_args

from duplex_client.usage import UsageError

#: The turn styles of `families.TURN_STYLES`, as a type (a test keeps the two equal).
TurnMode = Literal["model", "vad", "ptt"]
TURN_MODES: tuple[TurnMode, ...] = get_args(TurnMode)
#: Turn modes whose turns end with commits (the client's on release, or server VAD's).
COMMIT_TURNS: frozenset[str] = frozenset({"vad", "ptt"})

#: The old name of `UsageError` for live mode (one error type for every way in now).
LiveUsageError = UsageError


def no_commits_error(turn: str, what: str) -> UsageError:
    """The one-line refusal of a commit-needing turn mode where no commits are taken."""
    ends = "server VAD's commits" if turn == "vad" else "a commit on release"
    return UsageError(
        f"turn {turn} ends turns with {ends}, but {what} takes no commits: use turn model",
        param="turn",
        keywords=("turn", "turn"),
    )
