"""Many items against one or more endpoints: scheduling, retries, resume and the summary.

Each endpoint runs up to `concurrency` items at once; items are taken from one queue, so a
slow or dead endpoint never holds work another could do. In a comparison (`each_endpoint`)
the unit of work is an item on one endpoint: each job is pinned to its endpoint, and retried
there only; a pinned job whose endpoint is down stays unfinished. An item whose attempt failed for
the endpoint's reasons is tried again (on whichever endpoint is up) up to `retries` times.
A resumed eval runs what is unfinished or failed for its endpoint's reasons; a refusal at
capacity (`resource_exhausted`) holds the item back until one of the endpoint's sessions ends.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from duplex_client.analysis.timing import TIMING_LOST
from duplex_client.bundle.layout import BundleLayout
from duplex_client.bundle.reader import read_optional
from duplex_client.bundle.writer import write_json_atomic
from duplex_client.eval.cost import Admission
from duplex_client.eval.endpoints import Endpoint, EndpointPool
from duplex_client.eval.heap import FrozenHeap, frozen_heap
from duplex_client.eval.item_run import ItemJob, ItemOutcome, read_outcome, run_item
from duplex_client.eval.jobs import (
    EvalJob,
    EvalProgress,
    EvalSettings,
    Pending,
    plan_jobs,
    settings_record,
)
from duplex_client.eval.summary import EvalSummary, ItemRecord, summary_row
from duplex_client.run.options import RunOptions
from duplex_client.run.progress import RunProgress

__all__ = [
    "Admission",
    "EvalJob",
    "EvalProgress",
    "EvalRun",
    "EvalSettings",
    "ItemExecutor",
    "LocalExecutor",
    "Pending",
    "plan_jobs",
    "settings_record",
]


class ItemExecutor(Protocol):
    """Where an item runs: in this process, or as a Ray task that sends its files back."""

    async def run(self, job: ItemJob, bundle_dir: Path, slot: int) -> ItemOutcome:
        """Run `job` into `bundle_dir` and return how it ended."""
        ...

    def close(self) -> None:
        """Release what the executor holds."""
        ...


class LocalExecutor:
    """Items run in this process's event loop; an item whose timing is lost says so at once
    (one log line, counted in `progress`)."""

    def __init__(self, progress: EvalProgress | None = None) -> None:
        self.progress = progress

    async def run(self, job: ItemJob, bundle_dir: Path, slot: int) -> ItemOutcome:
        """Run `job` here."""
        told = RunProgress(figures=False, listener=lambda m: self._warned(job.key, m))
        return await run_item(job, bundle_dir, progress=told)

    def _warned(self, key: str, message: str) -> None:
        if message.startswith(TIMING_LOST):
            if self.progress is not None:
                self.progress.timing_lost += 1
                if self.progress.on_timing_lost is not None:  # while the item still runs
                    self.progress.on_timing_lost()
            log.warning("%s: %s", key, message)

    def close(self) -> None:
        """Nothing to release."""


log = logging.getLogger(__name__)


class EvalRun:
    """One eval over `jobs`: the queue, the endpoint workers and the records they leave."""

    def __init__(
        self,
        jobs: Sequence[EvalJob],
        options: RunOptions,
        output_dir: Path,
        pool: EndpointPool,
        settings: EvalSettings,
        executor: ItemExecutor,
        progress: EvalProgress,
        admission: Admission | None = None,
    ) -> None:
        self.jobs = list(jobs)
        self.options = options
        self.output_dir = output_dir
        self.pool = pool
        self.settings = settings
        self.executor = executor
        self.progress = progress
        self.records: dict[str, ItemRecord] = {}
        self.pending: collections.deque[Pending] = collections.deque()
        self._next_start = 0.0
        self.outstanding = 0
        #: Pinned jobs left queued when their endpoint went down (run by a resumed eval).
        self.stranded = 0
        self.changed = asyncio.Condition()
        self._summary_at = 0.0
        self.admission = admission
        self._heap: FrozenHeap | None = None  # while concurrent items run
        if admission is not None:  # the load it was lost at is the most taken on from then
            progress.on_timing_lost = admission.budget.lost

    def resume(self) -> None:
        """Load the records of finished items; queue the rest."""
        self.progress.total = len(self.jobs)
        # Round by round: an item's repeat starts once its first round has finished and left
        # its decoded media in the plan cache (the summary keeps the jobs' own order).
        for job in sorted(self.jobs, key=lambda j: j.repeat or 0):
            outcome = read_outcome(self.output_dir / job.key)
            # failed for its endpoint's reasons (refused, dropped, a dead server): run again
            done = outcome is not None and not outcome.rerun
            if done and self.settings.rerun_failed and outcome is not None and not outcome.ok:
                done = False
            if done:
                self._load(job)
                self.progress.resumed += 1
                continue
            self.pending.append(Pending(job))
        self.outstanding = len(self.pending)

    async def run(self) -> None:
        """Run every queued job (or until every endpoint is down)."""
        if isinstance(self.executor, LocalExecutor) and self._at_once() > 1:
            # items end in bursts: their reports are built where they hold up no session
            from duplex_client.run.report_process import report_process

            async with report_process(self._report_workers(), warm=False) as reports:
                if self.admission is not None and self.admission.load is not None:
                    self.admission.load.helpers = reports.cpu_s  # the items' own, not others'
                # warm before the first item starts, while the machine's load is read
                await asyncio.gather(reports.ready(), self._settle())
                with frozen_heap() as self._heap:
                    await self._run_workers()
                self._heap = None
        else:
            await self._settle()
            await self._run_workers()

    async def _settle(self) -> None:
        """A first reading of the machine's other load before any item starts."""
        if self.admission is not None:
            await self.admission.settle()

    def _report_workers(self) -> int:
        """Report processes for the items' ends (never more than run at once)."""
        from duplex_client.run.report_process import default_workers

        return min(self._at_once(), default_workers())

    def _at_once(self) -> int:
        """How many items may run at once here."""
        return self.settings.concurrency * len(self.pool.endpoints)

    async def _run_workers(self) -> None:
        workers = [
            asyncio.create_task(self._worker(endpoint))
            for endpoint in self.pool.endpoints
            for _ in range(self.settings.concurrency)
        ]
        try:
            await asyncio.gather(*workers)
        finally:
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)

    @property
    def unfinished(self) -> int:
        """Jobs not run to a final status."""
        return self.outstanding + self.stranded

    def summary(self) -> EvalSummary:
        """The summary of every finished job, in job order."""
        records = [self.records[j.key] for j in self.jobs if j.key in self.records]
        admission = {"concurrency": self.settings.concurrency, "max_running": 0, "message": None}
        if self.admission is not None:
            admission |= self.admission.budget.record()
        admission["max_running"] = self.progress.max_running
        return EvalSummary(
            records, max_lateness_ms=self.settings.max_lateness_ms, admission=admission
        )

    def collect_finished(self) -> None:
        """Read in every finished bundle not yet recorded (an item that ended just as the eval
        was stopped has its result on disk before the runner has read it)."""
        for job in self.jobs:
            if job.key not in self.records:
                outcome = read_outcome(self.output_dir / job.key)
                if outcome is not None and outcome.final:
                    self._load(job)

    async def write_summary(self) -> EvalSummary:
        """Write summary.jsonl/.csv/.md off the loop and return the summary."""
        summary = self.summary()
        await asyncio.to_thread(summary.write, self.output_dir)
        return summary

    # --- workers ---

    async def _worker(self, endpoint: Endpoint) -> None:
        while True:
            unpriced = None
            async with self.changed:
                await self.changed.wait_for(
                    lambda: (
                        self._startable(endpoint)
                        or self.outstanding == 0
                        or self._stopped(endpoint)
                    )
                )
                if self._stopped(endpoint) or self.outstanding == 0:
                    self.changed.notify_all()
                    return
                wait = self.pool.wait_s(endpoint)
                entry = None
                if wait <= 0:
                    entry = self._takeable(endpoint)
                if entry is not None and self._unpriced(entry):
                    unpriced, entry = entry, None
                elif entry is not None:
                    self.pending.remove(entry)
                    if self.admission is not None:
                        self.admission.start(entry.job.key, entry.job.item)
                    delay = self._start_slot()
                    epoch = self.pool.started(endpoint)  # counted now: the limit holds
                    if self._heap is not None:  # the running items' objects: walked no more
                        self._heap.refreeze()
                else:  # suspended after a fault: another endpoint may take the job
                    self.changed.notify_all()
            if unpriced is not None:
                await self._price(unpriced)
                continue
            if entry is None:
                await asyncio.sleep(min(wait, 0.5))
                continue
            if delay > 0:
                try:
                    await asyncio.sleep(delay)
                except BaseException:
                    self.pool.abandoned(endpoint)
                    self._release(entry.job)
                    raise
            await self._attempt(endpoint, entry, epoch)

    # --- admission by measured cost (`eval.cost.Admission`) ---

    def _unpriced(self, entry: Pending) -> bool:
        return self.admission is not None and self.admission.costs.known(entry.job.item) is None

    def _startable(self, endpoint: Endpoint) -> bool:
        """A queued job this endpoint may take, unpriced or within the CPU budget (a job the
        budget holds back notes the cap on the progress line)."""
        entry = self._takeable(endpoint)
        if entry is None:
            return False
        if self.admission is None or self.admission.allows(entry.job.item) is not False:
            return True
        self.progress.admission = self.admission.budget.message()
        return False

    async def _price(self, entry: Pending) -> None:
        assert self.admission is not None
        await self.admission.price(entry.job.item)
        async with self.changed:
            self.changed.notify_all()

    def _release(self, job: EvalJob) -> None:
        if self.admission is not None:
            self.admission.budget.finish(job.key)

    def _takeable(self, endpoint: Endpoint) -> Pending | None:
        """The first queued job this endpoint may run: not one that faulted here, unless
        every endpoint still up has faulted for it. None while the endpoint is at its
        session limit (its items wait for one of its sessions to end)."""
        if not self.pool.has_room(endpoint):
            return None
        up = {e.index for e in self.pool.endpoints if not e.down}
        for entry in self.pending:
            if entry.job.endpoint is not None:  # a comparison's: its own endpoint only
                if entry.job.endpoint == endpoint.index:
                    return entry
            elif endpoint.index not in entry.avoid or up <= entry.avoid:
                return entry
        return None

    def _strand(self, endpoint: Endpoint) -> None:
        """Take the queued jobs pinned to `endpoint` (down) out of the queue: no other runs
        them, and the eval ends without them (unfinished, for a resumed eval to run)."""
        pinned = [e for e in self.pending if e.job.endpoint == endpoint.index]
        for entry in pinned:
            self.pending.remove(entry)
        self.outstanding -= len(pinned)
        self.stranded += len(pinned)

    def _start_slot(self) -> float:
        """Seconds to wait before starting: starts are spread, never all in one instant."""
        now = time.monotonic()
        at = max(now, self._next_start)
        self._next_start = at + self.settings.start_interval_s
        return at - now

    def _stopped(self, endpoint: Endpoint) -> bool:
        return endpoint.down or self.pool.all_down

    async def _attempt(self, endpoint: Endpoint, entry: Pending, epoch: int) -> None:
        job, attempt, errors = entry.job, entry.attempt, entry.errors
        bundle_dir = self.output_dir / job.key
        self.progress.running += 1
        self.progress.max_running = max(self.progress.max_running, self.progress.running)
        options = endpoint.options(self.options)
        if endpoint.model is not None and options.model is None:
            options = dataclasses.replace(options, model=endpoint.model)
        ij = ItemJob(job.item, job.repeat, job.key, endpoint.url, options, attempt)
        try:
            outcome = await self.executor.run(ij, bundle_dir, endpoint.index)
        except BaseException:
            self.pool.abandoned(endpoint)
            raise
        finally:
            self.progress.running -= 1
            self._release(job)  # its cost leaves the load before anyone is woken
        if outcome.capacity:  # held back, not failed: it runs when a session is free
            self.pool.refused(endpoint, outcome.error)
            async with self.changed:
                self.pending.appendleft(entry)
                if endpoint.down:
                    self._strand(endpoint)
                self.changed.notify_all()
            return
        if outcome.endpoint_fault:
            self.pool.faulted(endpoint, epoch, outcome.error)
            if endpoint.down:
                async with self.changed:
                    self._strand(endpoint)
                    self.changed.notify_all()
            up = not (self.pool.all_down or (job.endpoint is not None and endpoint.down))
            if attempt <= self.settings.retries and up:
                retry = Pending(
                    job,
                    attempt + 1,
                    (*errors, f"{endpoint.shown}: {outcome.error}"),
                    entry.avoid | {endpoint.index},
                )
                async with self.changed:
                    self.pending.appendleft(retry)
                    self.changed.notify_all()
                return
        elif outcome.ok:
            self.pool.succeeded(endpoint)
        else:
            self.pool.item_failed(endpoint)
        await self._finish(job, endpoint, attempt, errors)

    async def _finish(
        self, job: EvalJob, endpoint: Endpoint, attempts: int, errors: tuple[str, ...]
    ) -> None:
        """Record a finished job: its eval sidecar, its summary record, the live figures."""
        bundle_dir = self.output_dir / job.key
        side = {
            "endpoint": endpoint.shown,
            "dialect": endpoint.options(self.options).dialect,
            "attempts": attempts,
            "previous_errors": list(errors),
        }
        await asyncio.to_thread(write_json_atomic, BundleLayout(bundle_dir).eval_item, side)
        record = await asyncio.to_thread(self._load, job)
        if record is not None and not record.result.get("ok"):
            self.progress.failed += 1
        if record is not None and self.admission is not None:
            self.admission.ended(job.item, on_time=record.result.get("timing_valid") is True)
        async with self.changed:
            self.outstanding -= 1
            self.changed.notify_all()
        now = time.monotonic()
        if now - self._summary_at >= self.settings.summary_every_s:
            self._summary_at = now
            with contextlib.suppress(OSError):
                await self.write_summary()

    def _load(self, job: EvalJob) -> ItemRecord | None:
        """Read a finished job's bundle into its summary record (and the live figures)."""
        if job.key in self.records:  # read already (a stop raced the runner's own read)
            return self.records[job.key]
        bundle_dir = self.output_dir / job.key
        side: dict[str, Any] = read_optional(BundleLayout(bundle_dir).eval_item) or {}
        try:
            record = ItemRecord.from_bundle(
                bundle_dir,
                id=job.item.id,
                repeat=job.repeat,
                endpoint=side.get("endpoint"),
                attempts=int(side.get("attempts", 1)),
                expected=job.item.expected,
                extra=dict(job.item.extra),
                bundle=job.key,
                previous_errors=tuple(side.get("previous_errors", ())),
            )
        except ValueError as exc:
            self.progress.notes.append(f"{job.key}: not summarised ({exc})")
            return None
        self.records[job.key] = record
        self.progress.done += 1
        row = summary_row(record, max_lateness_ms=self.settings.max_lateness_ms)
        if row.get("timing_valid") is False:
            self.progress.timing_invalid += 1
        if row.get("latency_p50_ms") is not None:
            self.progress.latencies_ms.append(float(row["latency_p50_ms"]))
        return record
