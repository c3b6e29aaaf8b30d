"""The jobs of an eval: one per item and repeat, or per item, repeat and endpoint in a
comparison, each with the bundle folder it writes; how the eval runs them (its settings and
their `eval.json` record) and the live progress a display polls."""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from duplex_client.bundle.eval_layout import ITEMS_DIR, endpoint_dir, item_key
from duplex_client.eval.item import EvalItem, ItemSetError
from duplex_client.run.checks import FILE_FRAME_MAX_SIDE, FILE_JPEG_QUALITY
from duplex_client.run.options import DEVICE_FIELDS, RunOptions

__all__ = ["EvalJob", "EvalProgress", "EvalSettings", "Pending", "plan_jobs", "settings_record"]


@dataclass(frozen=True, slots=True)
class EvalJob:
    """An item and its repeat, with where its bundle goes."""

    item: EvalItem
    repeat: int | None
    key: str
    #: The endpoint (index) the job runs on in a comparison; None: whichever takes it.
    endpoint: int | None = None


def plan_jobs(items: Sequence[EvalItem], repeat: int, endpoints: int = 0) -> list[EvalJob]:
    """One job per item and repeat (per endpoint when `endpoints`, each in its endpoint's
    folder); bundle keys that would nest inside another are refused."""
    jobs = []
    pinned: Sequence[int | None] = range(endpoints) if endpoints else [None]
    for endpoint in pinned:
        folder = "" if endpoint is None else endpoint_dir(endpoint) + "/"
        for item in items:
            for r in range(1, repeat + 1) if repeat > 1 else [None]:
                jobs.append(EvalJob(item, r, folder + item_key(item.id, r), endpoint))
    keys = {j.key for j in jobs}
    if len(keys) < len(jobs):
        counts = collections.Counter(i.id for i in items)  # given as a list, not loaded
        twice = sorted(k for k, n in counts.items() if n > 1)
        raise ItemSetError(f"duplicate item ids: {', '.join(twice[:5])}")
    nested = sorted(
        (parent, key)
        for key in keys
        for parent in (key.rsplit("/", n)[0] for n in range(1, key.count("/")))
        if parent in keys
    )
    if nested:
        shown = ", ".join(f"{_id(a)!r} holds {_id(b)!r}" for a, b in nested[:5])
        raise ItemSetError(f"item ids nest inside each other's bundle folders: {shown}")
    return jobs


def _id(key: str) -> str:
    """The item id (and repeat) part of a bundle key."""
    return key.split(ITEMS_DIR + "/", 1)[-1]


@dataclass(slots=True)
class EvalProgress:
    """Live state of an eval for a display to poll."""

    total: int = 0
    done: int = 0
    failed: int = 0
    running: int = 0
    #: Items finished by an earlier run of the same eval (not run again).
    resumed: int = 0
    timing_invalid: int = 0
    #: Items that warned, while running, that their sends fell behind the media clock.
    timing_lost: int = 0
    #: Called as an item warns so (the CPU budget lowers its ceiling to the load of then).
    on_timing_lost: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    started: float = field(default_factory=time.monotonic)
    latencies_ms: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stop_reason: str | None = None
    #: The most items that ran at once.
    max_running: int = 0
    #: Why fewer ran at once than `concurrency` allows (the CPU budget), else None.
    admission: str | None = None

    @property
    def latency_p50_ms(self) -> float | None:
        """The median of the finished items' median turn latency."""
        ordered = sorted(self.latencies_ms)
        return ordered[len(ordered) // 2] if ordered else None

    def eta_s(self, now: float | None = None) -> float | None:
        """Seconds left at the pace of this run's items so far (None before the first)."""
        ran = self.done - self.resumed
        if ran <= 0:
            return None
        elapsed = (time.monotonic() if now is None else now) - self.started
        return elapsed / ran * (self.total - self.done)


@dataclass(frozen=True, slots=True)
class Pending:
    """A queued job: its attempt number, earlier attempts' errors, endpoints that faulted."""

    job: EvalJob
    attempt: int = 1
    errors: tuple[str, ...] = ()
    avoid: frozenset[int] = frozenset()


@dataclass(frozen=True, slots=True)
class EvalSettings:
    """How an eval runs (the run options of every item are apart, in `RunOptions`)."""

    concurrency: int = 1
    repeat: int = 1
    retries: int = 2
    rerun_failed: bool = False
    max_lateness_ms: float = 20.0
    backoff_s: float = 1.0
    #: Seconds between two item starts: a wave of sessions opening in one instant would
    #: contend for the CPU (decoders opening, handshakes) and start late.
    start_interval_s: float = 0.05
    #: Seconds between summary rewrites while items finish (it is always written at the end).
    summary_every_s: float = 2.0
    #: The share of this process's cores the running items' predicted CPU may take (None:
    #: `budget.DEFAULT_CPU_BUDGET`); items start only while it holds (`eval.budget`).
    cpu_budget: float | None = None


def settings_record(settings: EvalSettings, options: RunOptions) -> dict[str, Any]:
    """`eval.json`: how the eval was run (no secrets: the API key and reference voice left out)."""
    shown = {
        f.name: getattr(options, f.name)
        for f in dataclasses.fields(options)
        # max_lateness_ms: the eval's own setting, handed to every item
        if f.name not in ("api_key", "ref_audio", "config", "output_dir", "max_lateness_ms")
        and f.name not in ("plan_cache", "plan_cache_dir")  # how, not what: results alike
        and f.name not in DEVICE_FIELDS  # an eval streams files: live's options do not apply
        and not f.name.startswith("input_")
    }
    shown["ref_audio"] = "<set>" if options.ref_audio else None
    # What the items run with, not how it was said: `auto` and "the input's default" resolved.
    shown["preset"] = options.preset_name()
    if options.frame_max_side is None:
        shown["frame_max_side"] = FILE_FRAME_MAX_SIDE
    if options.jpeg_quality is None:
        shown["jpeg_quality"] = FILE_JPEG_QUALITY
    return {"settings": dataclasses.asdict(settings), "options": _jsonable(shown)}


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
