"""The CLI's rendering and message helpers (in process: no session needed)."""

from __future__ import annotations

import os
import pty
import termios

from duplex_cli.display import LivePanel, decisions_row, no_control_echo, render_progress
from duplex_cli.running import flag_for, usage_message
from rich.console import Console

from duplex_client.run.progress import RunProgress


def test_a_unit_decided_twice_is_listed_once() -> None:
    """The post-commit decision carries the last unit's index: `6:listen/listen`, once."""
    row = decisions_row([(5, "listen"), (6, "listen"), (6, "listen")]).plain
    assert row == "5:listen 6:listen/listen"
    progress = RunProgress(decisions=[(3, "speak"), (6, "listen"), (6, "listen")])
    console = Console(width=120, record=True, color_system=None)
    console.print(render_progress(progress))
    text = console.export_text()
    assert "6:listen 6:listen" not in text and "3:speak 6:listen/listen" in text


def test_the_panel_stops_the_terminal_echoing_ctrl_c() -> None:
    """An echoed `^C` wraps a full-width last line and leaves the top border drawn twice."""
    leader, follower = pty.openpty()
    try:
        with os.fdopen(os.dup(follower), "r") as stream:
            assert termios.tcgetattr(follower)[3] & termios.ECHOCTL
            with no_control_echo(stream):
                assert not termios.tcgetattr(follower)[3] & termios.ECHOCTL
            assert termios.tcgetattr(follower)[3] & termios.ECHOCTL
    finally:
        os.close(leader)
        os.close(follower)
    with LivePanel(lambda: "x", console=Console(file=open(os.devnull, "w"))):
        pass  # stdin not a terminal here: no-op


class _Refused(ValueError):
    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


def test_usage_messages_name_flags_not_keywords() -> None:
    assert flag_for("chunk_ms") == "--chunk-ms" and flag_for("start_muted") == "--muted"
    assert usage_message(_Refused("chunk_ms must be positive, got 0", "chunk_ms")) == (
        "--chunk-ms must be positive, got 0"
    )
    assert usage_message(_Refused("must be positive", "tail_silence_s")) == (
        "--tail-silence-s: must be positive"
    )
    assert usage_message(ValueError("plain")) == "plain"
