"""Replay sweeps: one recorded input replayed once per value of one condition, as a table.

`await sweep_bundle("runs/a", url, "pause_ms", [0, 200, 400])` replays the bundle once per
value into `output_dir/pause_ms=<value>/` (normal run bundles, each with a `condition.json`
saying what the condition did), then writes `sweep.json` and `sweep.md`: the turn metrics by
value. Conditions: `pause_ms` and `noise_db` change the input (duplex_client.replay.conditions);
`jitter_ms` and `drop_at_ms` (here) wrap the client the recorded input is sent through.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from duplex_client.bundle.layout import BundleLayout
from duplex_client.bundle.reader import read_optional
from duplex_client.bundle.writer import write_json_atomic
from duplex_client.client.resume import ReconnectListener
from duplex_client.client.session import EventListener
from duplex_client.client.streaming import StreamTarget
from duplex_client.client.transport import check_url
from duplex_client.client.websocket import DuplexClient
from duplex_client.framing.clock import MediaClock
from duplex_client.framing.recorded import RecordedInput
from duplex_client.protocol.capabilities import Capabilities
from duplex_client.replay.bundle_replay import RecordedRun, check_outside, replay_bundle
from duplex_client.replay.conditions import (
    NoiseCondition,
    PauseCondition,
    Recording,
    check_values,
    value_label,
)
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import RunResult
from duplex_client.usage import UsageError

#: The row fields, in table order (`value` first).
COLUMNS = (
    "value", "ok", "sent_sha256", "turns", "user_turns", "speak_decisions", "unanswered_turns",
    "turn_over", "cut_turns", "latency_p50_ms", "first_answer_latency_p50_ms",
)  # fmt: skip


class _Through:
    """A `StreamTarget` around a client: everything passes through, `before()` each append."""

    def __init__(self, client: DuplexClient, clock: MediaClock) -> None:
        self.client, self.clock = client, clock

    @property
    def capabilities(self) -> Capabilities:
        """The client's."""
        return self.client.capabilities

    @property
    def audio_end_ms(self) -> int:
        """The client's."""
        return self.client.audio_end_ms

    async def before(self, media_end_ms: int | None) -> None:
        """What happens before each append is handed to the client (nothing here)."""

    async def append_input(self, pcm: bytes | None = None, **kw: Any) -> str:
        """`before()`, then the client's `append_input`."""
        await self.before(kw.get("media_end_ms"))
        return await self.client.append_input(pcm, **kw)

    async def commit(self, *, final: bool = True, create_response: bool | None = None) -> str:
        """The client's `commit`."""
        return await self.client.commit(final=final, create_response=create_response)

    # Explicit, not only `__getattr__`: the sender finds these with runtime Protocol checks.
    def add_listener(self, listener: EventListener) -> None:
        """The client's (the timeline hears the server through the wrapper)."""
        self.client.add_listener(listener)

    def remove_listener(self, listener: EventListener) -> None:
        """The client's."""
        self.client.remove_listener(listener)

    def add_reconnect_listener(self, listener: ReconnectListener) -> None:
        """The client's (so the timeline records a resume)."""
        self.client.add_reconnect_listener(listener)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


def jitter_delays(max_ms: float, seed: int, n: int) -> list[float]:
    """The first `n` delays (ms, in [0, max_ms]) a `jitter_ms` condition draws with `seed`."""
    rng = random.Random(seed)
    return [rng.uniform(0.0, max_ms) for _ in range(n)]


class _Jittered(_Through):
    def __init__(self, client: DuplexClient, clock: MediaClock, cond: JitterCondition) -> None:
        super().__init__(client, clock)
        self.cond = cond
        self.rng = random.Random(cond.seed)

    async def before(self, media_end_ms: int | None) -> None:
        delay = self.rng.uniform(0.0, self.cond.value)
        await asyncio.sleep(delay / 1000)
        sent = self.clock.offset_ms()
        row = {"media_end_ms": media_end_ms, "delay_ms": round(delay, 3), "sent_offset_ms": sent}
        self.cond.sends.append(row)


class JitterCondition:
    """`jitter_ms=V`: each append leaves a seeded random [0, V] ms after its deadline."""

    def __init__(self, value: float, *, seed: int = 0) -> None:
        self.value, self.seed = float(value), seed
        self.sends: list[dict[str, Any]] = []
        self.notes: list[str] = []

    @property
    def log(self) -> dict[str, Any]:
        """The seed and every append's delay and real send offset (ms from media 0)."""
        return {"seed": self.seed, "sends": self.sends}

    def input(self, recorded: RecordedInput) -> RecordedInput:
        """The recorded input, unchanged."""
        return recorded

    def target(self, client: DuplexClient, clock: MediaClock) -> StreamTarget:
        """The client behind the delaying wrapper (a new draw sequence from the seed)."""
        self.sends = []
        return _Jittered(client, clock, self)


def drop_socket(client: DuplexClient) -> None:
    """Abort the client's TCP connection (no close frame), as a network failure would."""
    conn = getattr(client._link.transport, "_conn", None)
    socket = getattr(conn, "transport", None)
    if socket is None:
        raise RuntimeError("drop_at_ms: the client's connection has no socket to drop")
    socket.abort()


class _Dropping(_Through):
    def __init__(self, client: DuplexClient, clock: MediaClock, cond: DropCondition) -> None:
        super().__init__(client, clock)
        self.cond = cond

    async def before(self, media_end_ms: int | None) -> None:
        if self.cond.dropped is not None or media_end_ms is None or media_end_ms < self.cond.value:
            return
        drop_socket(self.client)
        self.cond.dropped = {
            "before_media_end_ms": media_end_ms,
            "offset_ms": self.clock.offset_ms(),
        }
        # The reader notices the loss on its next read; until then a send could still
        # succeed on the dead socket. Wait (bounded) so this append is queued for the resume.
        for _ in range(200):
            if not self.client._link.connected:
                break
            await asyncio.sleep(0.005)


class DropCondition:
    """`drop_at_ms=V`: the socket drops before the first append ending at or after V ms."""

    def __init__(self, value: float, *, recording: Recording) -> None:
        self.value = int(value)
        end = recording.input.appends[-1].media_end_ms if recording.input.appends else 0
        if self.value > end:
            message = f"sweep: drop_at_ms: {self.value} is after the recording's end ({end} ms)"
            raise UsageError(message, param="sweep")
        self.dropped: dict[str, Any] | None = None
        self.notes: list[str] = []

    @property
    def log(self) -> dict[str, Any]:
        """When the socket was dropped."""
        return {"dropped": self.dropped, "how": "the client's socket aborted (no close frame)"}

    def input(self, recorded: RecordedInput) -> RecordedInput:
        """The recorded input, unchanged."""
        return recorded

    def target(self, client: DuplexClient, clock: MediaClock) -> StreamTarget:
        """The client behind the dropping wrapper."""
        self.dropped = None
        return _Dropping(client, clock, self)


#: Any of the four conditions.
SweepCondition = PauseCondition | NoiseCondition | JitterCondition | DropCondition


def build_condition(name: str, value: float, recording: Recording, seed: int = 0) -> SweepCondition:
    """The condition `name=value` for `recording`; a one-line `UsageError` if it cannot apply."""
    check_values(name, [value])
    if name == "pause_ms":
        return PauseCondition(value, recording=recording)
    if name == "noise_db":
        return NoiseCondition(value, recording=recording, seed=seed)
    if name == "jitter_ms":
        return JitterCondition(value, seed=seed)
    return DropCondition(value, recording=recording)


# --- the runner ---


@dataclass(slots=True)
class SweepResult:
    """A sweep's rows (one per value, in order), its replays' results and where it wrote."""

    name: str
    seed: int
    rows: list[dict[str, Any]] = field(default_factory=list)
    results: list[RunResult] = field(default_factory=list, repr=False)
    output_dir: Path | None = None

    @property
    def ok(self) -> bool:
        """Whether every replay ran to its end."""
        return all(r["ok"] for r in self.rows)

    @property
    def exit_code(self) -> int:
        """0 when every replay ran, else 1."""
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        """The `sweep.json` document."""
        out = str(self.output_dir) if self.output_dir else None
        return {"condition": self.name, "seed": self.seed, "ok": self.ok, "output_dir": out,
                "columns": list(COLUMNS), "rows": self.rows}  # fmt: skip

    def markdown(self) -> str:
        """The rows as a Markdown table (`sweep.md`)."""
        head = [self.name if c == "value" else c for c in COLUMNS]
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        lines += ["| " + " | ".join(cell(r, c) for c in COLUMNS) + " |" for r in self.rows]
        return f"# Sweep: {self.name} (seed {self.seed})\n\n" + "\n".join(lines) + "\n"


def cell(row: dict[str, Any], column: str) -> str:
    """One table cell: `–` for none, `yes`/`NO`, a short hash, numbers as they are."""
    value = row.get(column)
    if value is None:
        return "–"
    if column == "ok":
        return "yes" if value else "NO"
    if column == "sent_sha256":
        return str(value)[:12]
    if column == "value":
        return value_label(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def sweep_row(value: float, result: RunResult) -> dict[str, Any]:
    """One value's figures from its replay's result and bundle."""
    metrics = result.metrics or {}

    def p50(key: str) -> Any:
        return (metrics.get(key) or {}).get("p50")

    user_turns, unanswered = metrics.get("user_turns"), metrics.get("unanswered_turns")
    turn_over = None
    if user_turns and unanswered is not None:
        turn_over = round(1 - unanswered / user_turns, 3)
    return {
        "value": value,
        "ok": result.ok,
        "sent_sha256": _sent_sha256(result.bundle_dir),
        "turns": metrics.get("turns"),
        "user_turns": user_turns,
        "speak_decisions": sum(1 for d in result.decisions if d.get("decision") == "speak"),
        "unanswered_turns": unanswered,
        "turn_over": turn_over,
        "cut_turns": metrics.get("cut_turns"),
        "latency_p50_ms": p50("latency_ms"),
        "first_answer_latency_p50_ms": p50("first_answer_latency_ms"),
        "error": result.error,
        "bundle_dir": str(result.bundle_dir) if result.bundle_dir else None,
    }


def _sent_sha256(bundle: Path | None) -> str | None:
    if bundle is None:
        return None
    doc = read_optional(BundleLayout(bundle).timeline) or {}
    digest = (doc.get("totals") or {}).get("sent_sha256")
    return digest if isinstance(digest, str) else None


def _reset(progress: RunProgress) -> None:
    """A fresh display state for the next replay; a stop reason (and `figures`) stays."""
    fresh = RunProgress()
    for f in dataclasses.fields(progress):
        if f.name not in ("stop_reason", "figures"):
            setattr(progress, f.name, getattr(fresh, f.name))


async def sweep_bundle(
    path: str | Path,
    url: str | None,
    name: str,
    values: Sequence[float],
    *,
    output_dir: str | Path,
    seed: int = 0,
    progress: RunProgress | None = None,
    on_replay: Callable[[dict[str, Any]], None] | None = None,
    **replay_kw: Any,
) -> SweepResult:
    """Replay the bundle once per value of condition `name`, in order, then write the table.

    Every value is checked against the recording before anything is sent (a one-line
    `UsageError`). Each replay goes to `output_dir/NAME=VALUE/`; `on_replay` gets each row
    as it is done. A replay that fails is a row with `ok: false`; the sweep goes on.
    """
    values = check_values(name, list(values))
    if url is not None:
        check_url(url)
    check_outside(path, output_dir)
    run = await asyncio.to_thread(RecordedRun.load, path)
    recording = Recording.of(run)
    conditions = [build_condition(name, v, recording, seed) for v in values]
    out = Path(output_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{out}: cannot write the output directory ({exc})", keywords=()) from None
    progress = progress or RunProgress(figures=False)
    sweep = SweepResult(name, seed, output_dir=out)
    for value, condition in zip(values, conditions, strict=True):
        _reset(progress)
        for note in condition.notes:
            progress.warn(note)
        where = out / f"{name}={value_label(value)}"
        result = await replay_bundle(
            path, url, output_dir=where, condition=condition, progress=progress, **replay_kw
        )
        row = sweep_row(value, result)
        log = {"condition": name, "value": value, "seed": seed, **condition.log}
        write_json_atomic(BundleLayout(where).condition, log)
        sweep.rows.append(row)
        sweep.results.append(result)
        if on_replay is not None:
            on_replay(row)
    write_json_atomic(out / "sweep.json", sweep.to_dict())
    (out / "sweep.md").write_text(sweep.markdown(), encoding="utf-8")
    return sweep
