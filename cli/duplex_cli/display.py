"""Rich rendering for `stream`: a live panel while streaming and a summary table after."""

from __future__ import annotations

import contextlib
import sys
import termios
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from types import TracebackType
from typing import TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def render_progress(p: RunProgress) -> RenderableType:
    """The live panel: media vs wall clock, units by kind, decisions, transcript, lateness."""
    media_s, wall_s = p.media_ms / 1000.0, p.wall_s
    total = max(p.media_total_ms, p.media_ms, 1)
    head = Table.grid(padding=(0, 2))
    head.add_row(
        Text(p.phase, style="bold cyan"),
        Text(f"media {media_s:6.1f} s / {total / 1000:.1f} s"),
        Text(f"wall {wall_s:6.1f} s"),
        Text(f"lateness p50 {_ms(p.lateness_p50_ms)}  max {_ms(p.lateness_max_ms)}"),
    )
    units = "  ".join(f"{k} {v}" for k, v in p.units.items())
    decisions = decisions_row(p.decisions[-12:])
    bar = Table.grid(padding=(0, 1))
    bar.add_row(
        ProgressBar(total=total, completed=min(p.media_ms, total), width=60),
        Text(f"{100 * min(p.media_ms, total) / total:3.0f}%"),
    )
    body = Group(
        head,
        bar,
        Text(f"appends {p.appends}   units {units}"),
        Text.assemble("decisions ", decisions if decisions.plain else "-"),
        Text(f"transcript: {p.transcript[-300:] or '-'}", overflow="fold"),
    )
    return Panel(body, title="duplex-cli stream", border_style="blue")


def decisions_row(decisions: list[tuple[int | None, str]]) -> Text:
    """`0:listen 1:speak 6:listen/listen`: one entry per unit, its decisions in order.

    A unit can be decided twice (its own decision, then the post-commit one, which carries
    the last unit's index); listing `6:listen 6:listen` read as a duplicate.
    """
    grouped: list[tuple[int | None, list[str]]] = []
    for unit, decision in decisions:
        if grouped and unit is not None and grouped[-1][0] == unit:
            grouped[-1][1].append(decision)
        else:
            grouped.append((unit, [decision]))
    row = Text()
    for unit, said in grouped:
        if row:
            row.append(" ")
        row.append(f"{'?' if unit is None else unit}:", style="dim")
        for i, decision in enumerate(said):
            row.append("/" if i else "", style="dim")
            row.append(decision, style="green" if decision == "speak" else "dim")
    return row


@contextlib.contextmanager
def no_control_echo(stream: TextIO | None = None) -> Iterator[None]:
    """Stop the terminal echoing `^C` while a Live region is drawn.

    The echo lands after the panel's last line; when that line fills the width, the terminal
    wraps, the region's height is off by one and its top border is left behind (drawn twice).
    """
    stream = sys.stdin if stream is None else stream
    try:
        fd = stream.fileno()
        saved = termios.tcgetattr(fd)
    except (OSError, ValueError, AttributeError, termios.error):
        yield
        return
    quiet = list(saved)
    quiet[3] = quiet[3] & ~termios.ECHOCTL
    try:
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except termios.error:
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


class LivePanel:
    """A rich Live region redrawn from `render()` while a run goes (stream and live)."""

    def __init__(
        self,
        render: Callable[[], RenderableType],
        console: Console | None = None,
        refresh_per_second: int = 8,
    ) -> None:
        self._live = Live(
            get_renderable=render,
            console=console,
            refresh_per_second=refresh_per_second,
            transient=False,
        )
        self._echo: AbstractContextManager[None] = contextlib.nullcontext()

    def __enter__(self) -> LivePanel:
        self._echo = no_control_echo()
        self._echo.__enter__()
        self._live.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._live.stop()
        finally:
            self._echo.__exit__(None, None, None)


def heard_latency(result: RunResult) -> str:
    """The headline: user turn end → first heard answer (p50, max), follow-up answers apart."""
    if result.timing != "realtime":
        return "- (not real-time paced: no listener clock)"
    metrics = result.metrics or {}
    source = metrics.get("user_end_source", "none")
    first = metrics.get("first_answer_latency_ms") or {}
    if not first.get("count"):
        turns = len(result.turns or [])
        why = "user speech unknown" if source == "none" else "no answer heard after user speech"
        return f"- ({turns} turns, {why})"
    to = "" if metrics.get("latency_to") != "first_audio" else ", to first audio received"
    parts = [
        f"first answer p50 {_ms(first['p50'])}, max {_ms(first['max'])} "
        f"({first['count']} user turn(s) answered, user end from {source}{to})"
    ]
    later = metrics.get("follow_up_latency_ms") or {}
    if later.get("count"):
        parts.append(
            f"{later['count']} follow-up answer(s) p50 {_ms(later['p50'])}, max {_ms(later['max'])}"
        )
    unanswered = metrics.get("unanswered_turns")
    if unanswered:
        parts.append(f"{unanswered} user turn(s) unanswered")
    return "; ".join(parts)


def print_summary(console: Console, result: RunResult) -> None:
    """The after-run table: outcome, counts, latencies and where the bundle is."""
    table = Table(title="run summary", show_header=False, box=None, padding=(0, 2))
    style = "green" if result.ok else "red"
    table.add_row(
        "result", Text(f"{result.status}" + ("" if result.ok else f": {result.error}"), style=style)
    )
    table.add_row("session", str(result.session_id))
    counts = result.counts
    if counts:
        units = counts.get("units", {})
        appends, written = counts.get("appends", 0), counts.get("appends_written")
        if written is None or written == appends:
            table.add_row(
                "sent",
                f"{appends} appends, {counts.get('audio_ms', 0)} ms audio, units "
                + ", ".join(f"{k} {v}" for k, v in units.items()),
            )
        else:  # the connection was lost: what was queued never left
            audio = counts.get("audio_ms_written", 0)
            table.add_row("sent", f"{written} appends, {audio} ms audio")
            table.add_row(
                "not sent",
                Text(
                    f"{appends - written} appends ({counts.get('audio_ms', 0) - audio} ms audio) "
                    "queued while the connection was down never left",
                    style="red",
                ),
            )
        table.add_row(
            "decisions",
            f"{counts.get('speak', 0)} speak, {counts.get('listen', 0)} listen "
            f"({counts.get('responses', 0)} responses)",
        )
        table.add_row("answer audio", f"{counts.get('output_audio_ms', 0)} ms")
    table.add_row("heard latency", heard_latency(result))
    if result.lateness_ms:
        late = result.lateness_ms
        table.add_row(
            "lateness", f"p50 {late['p50']} ms, p99 {late['p99']} ms, max {late['max']} ms"
        )
    if result.transcript:
        table.add_row("transcript", result.transcript)
    table.add_row("bundle", str(result.bundle_dir))
    console.print(table)
