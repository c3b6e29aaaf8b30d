"""Rich rendering for `live`: meters, switches, decision, transcript, latency and key help."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from duplex_cli.display import heard_latency
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult

_METER_WIDTH = 24
_FLOOR_DBFS = -60.0
KEY_HELP = {
    "ptt": "[space] talk  [m] mute  [c] camera  [x] interrupt  [q] quit",
    "other": "[m] mute  [c] camera  [x] interrupt  [q] quit",
}


def meter(dbfs: float, width: int = _METER_WIDTH) -> Text:
    """A level bar from -60 dBFS (empty) to 0 dBFS (full), green/yellow/red."""
    fill = round(max(0.0, min(1.0, (dbfs - _FLOOR_DBFS) / -_FLOOR_DBFS)) * width)
    style = "green" if dbfs < -12 else ("yellow" if dbfs < -3 else "red")
    bar = Text("█" * fill, style=style)
    bar.append("░" * (width - fill), style="dim")
    bar.append(f" {dbfs:5.0f} dBFS")
    return bar


def _turn(p: RunProgress) -> Text:
    if p.turn == "ptt":
        state = Text(" ● TALKING ", style="bold white on red") if p.talking else Text("○ idle")
        return Text.assemble(f"push-to-talk ({p.ptt_mode})  ", state)
    label = {"model": "model decides (continuous)", "vad": "server VAD"}.get(p.turn, p.turn)
    return Text(label)


def render_live(p: RunProgress) -> RenderableType:
    """The live panel."""
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="bold", no_wrap=True)
    grid.add_column()
    grid.add_row("turn", _turn(p))
    mic = Text(f"{p.mic}  ")
    if p.mic == "none":
        mic.append("off", style="dim")
    elif p.muted:
        mic.append(" MUTED ", style="bold white on red")
    else:
        mic.append_text(meter(p.mic_level_dbfs))
    if p.gated:
        mic.append("  echo gate: closed", style="yellow")
    grid.add_row("mic", mic)
    if p.camera is None:
        cam = Text("none", style="dim")
    else:
        cam = Text(f"{p.camera}  ")
        cam.append("on" if p.camera_on else "off", style="green" if p.camera_on else "red")
        cam.append(f"  frames sent {p.frames_sent}")
    grid.add_row("camera", cam)
    latency = "-" if p.last_latency_ms is None else f"{p.last_latency_ms:.0f} ms"
    if p.latency_p50_ms is not None and p.latency_max_ms is not None:
        latency += f" (p50 {p.latency_p50_ms:.0f}, max {p.latency_max_ms:.0f})"
    assistant = Text(p.decision, style="bold cyan")
    assistant.append(f"   response latency {latency}")
    if p.audible:
        assistant.append("   ♪ playing", style="green")
    grid.add_row("assistant", assistant)
    units = "  ".join(f"{k} {v}" for k, v in p.units.items())
    grid.add_row(
        "sent",
        f"media {p.media_ms / 1000:6.1f} s  appends {p.appends}  {units}  commits {p.commits}",
    )
    transcript = Text("\n".join(p.transcript_lines[-4:]) or "-", overflow="fold")
    body: list[RenderableType] = [grid, Text("transcript", style="bold"), transcript]
    body += [Text(f"⚠ {w}", style="yellow") for w in p.warnings]
    body.append(Text(KEY_HELP["ptt" if p.turn == "ptt" else "other"], style="dim"))
    return Panel(Group(*body), title=f"duplex-cli live · {p.phase}", border_style="magenta")


def response_latency(result: RunResult) -> str:
    """The panel's figure: input complete → first sample played (received, nothing played)."""
    figures = result.latencies_ms
    last, median = figures.get("last_response_heard"), figures.get("median_response_heard")
    if last is None or median is None:
        return "-"
    to = "played" if result.counts.get("played_ms") else "received"
    return (
        f"last {last:.0f} ms, median {median:.0f} ms "
        f"(from the input being complete to the first audio {to})"
    )


def print_live_summary(console: Console, result: RunResult) -> None:
    """The after-run table of a live session."""
    table = Table(title="live summary", show_header=False, box=None, padding=(0, 2))
    style = "green" if result.ok else "red"
    outcome = result.status + ("" if result.ok else f": {result.error}")
    table.add_row("result", Text(outcome, style=style))
    table.add_row("session", str(result.session_id))
    c = result.counts
    if c:
        units = ", ".join(f"{k} {v}" for k, v in c.get("units", {}).items())
        table.add_row(
            "sent",
            f"{c.get('appends', 0)} appends, {c.get('audio_ms', 0)} ms audio, units {units}, "
            f"{c.get('commits', 0)} commits",
        )
        table.add_row(
            "answers",
            f"{c.get('speak', 0)} speak, {c.get('listen', 0)} listen; "
            f"{c.get('output_audio_ms', 0)} ms received, {c.get('played_ms', 0)} ms played, "
            f"{c.get('interruptions', 0)} interrupted",
        )
    table.add_row("heard latency", heard_latency(result))
    table.add_row("response latency", response_latency(result))
    if result.transcript:
        table.add_row("transcript", result.transcript)
    table.add_row("bundle", str(result.bundle_dir))
    console.print(table)
