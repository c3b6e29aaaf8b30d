"""What `duplex-cli eval` shows: a progress bar on a terminal, then the aggregate table."""

from __future__ import annotations

import threading
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn
from rich.table import Table

from duplex_client.bundle.eval_layout import SUMMARY_MD
from duplex_client.eval.api import EvalResult
from duplex_client.eval.runner import EvalProgress


def _clock(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    s = round(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


def status_line(p: EvalProgress) -> str:
    """Running, failed, ETA and the current p50 latency, as the bar's trailing text."""
    latency = p.latency_p50_ms
    shown = "–" if latency is None else f"{latency:.0f} ms"
    extra = f" · resumed {p.resumed}" if p.resumed else ""
    invalid = f" · timing-invalid {p.timing_invalid}" if p.timing_invalid else ""
    invalid += f" · timing lost {p.timing_lost}" if p.timing_lost else ""
    capped = f" ({p.admission})" if p.admission else ""
    return (
        f"running {p.running}{capped} · failed {p.failed}{invalid}{extra} · "
        f"ETA {_clock(p.eta_s())} · latency p50 {shown}"
    )


class EvalDisplay:
    """A rich progress bar polled from the eval's progress (nothing when disabled)."""

    def __init__(self, progress: EvalProgress, *, enabled: bool) -> None:
        self.progress = progress
        self.enabled = enabled
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> EvalDisplay:
        if not self.enabled:
            return self
        self._bar = Progress(
            TextColumn("eval"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            console=Console(stderr=True),
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task("eval", total=None, status="starting")
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()
        return self

    def _poll(self) -> None:
        while not self._stop.wait(0.25):
            self._refresh()

    def _refresh(self) -> None:
        if self._bar is None or self._task is None:
            return
        p = self.progress
        self._bar.update(self._task, total=p.total or None, completed=p.done, status=status_line(p))

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._bar is not None:
            self._bar.stop()


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def print_eval_summary(console: Console, result: EvalResult) -> None:
    """The aggregate: counts, then latency / server / overlap / gap percentiles."""
    agg = result.summary
    total = result.total or agg["items"] + result.unfinished
    console.print(
        f"[bold]eval[/] {total} item(s): {agg['ok']} ok, {agg['failed']} failed, "
        f"{agg['timing_invalid']} timing-invalid (> {agg['max_lateness_ms']:g} ms)"
        + (f", {result.unfinished} not run" if result.unfinished else "")
    )
    table = Table("ms", "count", "p50", "p95", "p99", box=None, pad_edge=False)
    for name in ("latency_ms", "server_ms", "overlap_ms", "gap_ms"):
        d = agg.get(name) or {}
        table.add_row(
            name.removesuffix("_ms"),
            str(d.get("count", 0)),
            _ms(d.get("p50")),
            _ms(d.get("p95")),
            _ms(d.get("p99")),
        )
    console.print(table)
    admission = agg.get("admission")
    if admission and admission.get("message"):
        console.print(f"at most {admission['max_running']} at once: {admission['message']}")
    console.print(f"summary: {result.output_dir / SUMMARY_MD}")
