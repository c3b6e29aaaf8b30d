"""Planning appends off the event loop: a framer's plan advanced in a worker thread, ahead.

Advancing a framer's plan is where media is decoded, resampled and JPEG-encoded, tens of
milliseconds for a video frame. `PlanPrefetcher` runs each `next(plan)` on a small shared
thread pool and keeps at most `depth` planned appends waiting, so planning stays a bounded
amount ahead of the media clock and memory stays flat. It refills once half of them are taken,
planning several appends per trip to the pool: while each is cheap (sliced PCM, a pre-encoded
image), and, while the pool has no other stream's trip, for a share of the media
already waiting for the sender (decoding several frames in one trip). A trip costs a thread
hand-over and a wake-up of the loop, and a thread woken from idle runs on cold caches: one
trip per frame cost about 1 ms per stream-second more than a few (benchmarks/README). The
framer is only ever touched by one thread at a time: while a worker advances it, the
`ServerCommitFollower` holds back server commits and applies them on the loop's thread when
the worker returns, before the next append is taken (so every append still goes out labelled
for the grid as it then is); a commit heard during a trip ends it after its step.

`inline=True` plans on the loop's thread, one append at a time, as `stream` did before; it is
used with injected fake clocks (deterministic tests), for sources in memory (where planning is
a slice of memory) and by the benchmarks as the baseline.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor

from duplex_client.client.server_commits import ServerCommitFollower
from duplex_client.framing.plan import PlannedAppend

#: Planned appends kept waiting per stream (24 × 200 ms: 4.8 s of media ahead, at most).
DEFAULT_DEPTH = 24
#: One trip to the pool plans further appends while it has taken less than this...
BATCH_BUDGET_S = 0.002
#: ... or, when more media than that waits for the sender, this share of what waits...
SLACK_SHARE = 0.05
#: ... up to this: the longest a trip keeps a pool thread.
MAX_BATCH_S = 0.05

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def planning_pool() -> ThreadPoolExecutor:
    """The process-wide pool that plans appends (one thread per core, at least two)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            workers = max(2, os.cpu_count() or 1)
            _pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="duplex-plan")
        return _pool


class _TripCounter:
    """Trips queued or running on a pool, from every stream of the process (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    def begin(self) -> int:
        """Count one more trip; how many others were queued or running then."""
        with self._lock:
            self._count += 1
            return self._count - 1

    def end(self) -> None:
        """One trip returned."""
        with self._lock:
            self._count -= 1


#: Trips on the planning pool: a long trip would keep another stream's waiting.
_pool_trips = _TripCounter()


class PlanPrefetcher:
    """Appends of `plan`, planned in a worker thread at most `depth` ahead of the sender."""

    def __init__(
        self,
        plan: Iterator[PlannedAppend],
        follower: ServerCommitFollower,
        *,
        depth: int = DEFAULT_DEPTH,
        inline: bool = False,
        executor: Executor | None = None,
    ) -> None:
        if depth < 1:
            raise ValueError("depth must be at least 1")
        self._plan = plan
        self._follower = follower
        self._depth = depth
        self._inline = inline
        self._executor = executor
        self._done = False
        #: The plan returned its end, seen by the planning thread; `_done` follows it on the
        #: loop's thread once the appends planned before the end were handed over, so the
        #: sender never sees the end before them.
        self._exhausted = False
        self._error: BaseException | None = None
        self._raised: Exception | None = None
        self._task: asyncio.Task[None] | None = None
        self._busy: asyncio.Future[list[PlannedAppend]] | None = None
        self._changed = asyncio.Event()
        self._space = asyncio.Event()

    async def next_start(self) -> int | None:
        """Media start of the next append once it is planned; None when the plan is done."""
        head = await self._head()
        return None if head is None else head.media_start_ms

    async def next_end(self) -> int | None:
        """Media end of the next append (when its audio is captured); None when done."""
        head = await self._head()
        return None if head is None else head.media_end_ms

    @property
    def inline(self) -> bool:
        """Whether appends are planned on the loop's thread (`head_now`/`take_now` apply)."""
        return self._inline

    def head_now(self) -> PlannedAppend | None:
        """`inline` only: the next append, planned now if need be; None when the plan is done."""
        follower = self._follower
        if not follower.expected and not self._done:
            follower.planned(self._step())
            self._done = self._exhausted
        head = follower.peek()
        if head is None and self._error is not None:
            error, self._error = self._error, None
            raise error
        return head

    def take_now(self) -> PlannedAppend:
        """`inline` only: `take` without awaiting (no worker ever holds a commit back)."""
        return self._follower.take()

    async def _head(self) -> PlannedAppend | None:
        if self._inline:
            return self.head_now()
        else:
            self._start()
            while self._follower.expected == 0 and not self._done:
                self._changed.clear()
                await self._changed.wait()
        head = self._follower.peek()
        if head is None and self._error is not None:  # appends planned before it go out first
            error, self._error = self._error, None
            raise error
        return head

    async def take(self) -> PlannedAppend:
        """The next append, labelled for the grid as it is now (after any held-back commit)."""
        while self._follower.deferred:  # the producer applies them when its worker returns
            self._changed.clear()
            await self._changed.wait()
        append = self._follower.take()
        if self._follower.expected <= self._depth // 2:  # the producer refills from here only
            self._space.set()
        return append

    async def aclose(self) -> None:
        """Stop planning; waits for a worker still inside the plan (it may hold the decoder)."""
        if self._task is not None:
            self._task.cancel()
        busy = self._busy
        if busy is not None:
            cancelled = False
            while not busy.done():
                try:
                    await asyncio.wait({busy})
                except asyncio.CancelledError:
                    cancelled = True
            if cancelled:
                raise asyncio.CancelledError
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    # --- internals ----------------------------------------------------------------------

    def _step(self) -> list[PlannedAppend]:
        """One append of the plan ([] when it is exhausted)."""
        planned = next(self._plan, None)
        if planned is None:
            self._exhausted = True
            return []
        return [planned]

    def _batch(self, room: int, budget_s: float) -> list[PlannedAppend]:
        """Up to `room` appends, more than one only while the trip has taken under `budget_s`.

        With little media waiting, a step that decodes or encodes ends the batch, so an
        append is never held back behind the planning of the ones after it. A server commit
        heard meanwhile ends it too (the sender waits for it to be applied). A step that
        raises after others were planned raises on the next trip, once those have gone out.
        """
        if self._raised is not None:
            error, self._raised = self._raised, None
            raise error
        deadline = time.perf_counter() + budget_s
        batch = self._step()
        while batch and len(batch) < room and not self._exhausted:
            if time.perf_counter() >= deadline or self._follower.deferred:
                break
            try:
                batch += self._step()
            except Exception as exc:  # raised on the next trip, after the appends before it
                self._raised = exc
                break
        return batch

    def _trip_budget_s(self) -> float:
        """How long the next trip may plan: a share of the media waiting (which so outlasts
        the trip), at least `BATCH_BUDGET_S` and at most `MAX_BATCH_S`."""
        share = SLACK_SHARE * self._follower.waiting_ms / 1000
        return min(MAX_BATCH_S, max(BATCH_BUDGET_S, share))

    def _start(self) -> None:
        if self._task is None and not self._done:
            self._task = asyncio.get_running_loop().create_task(self._produce())

    async def _produce(self) -> None:
        loop = asyncio.get_running_loop()
        executor = self._executor or planning_pool()
        try:
            low = self._depth // 2
            while not self._done:
                if self._follower.expected >= self._depth:  # full: refill once half are taken
                    while self._follower.expected > low:
                        self._space.clear()
                        await self._space.wait()
                room = self._depth - self._follower.expected
                # a long trip only on an otherwise idle pool: no other stream's trip waits
                # behind it, and the loop's thread keeps a core
                shared = self._executor is None
                others = _pool_trips.begin() if shared else 0
                budget = self._trip_budget_s() if others == 0 else BATCH_BUDGET_S
                self._follower.planning()
                # In the caller's context: a run's media-warning sink is a context variable.
                step = contextvars.copy_context().run
                try:
                    self._busy = loop.run_in_executor(executor, step, self._batch, room, budget)
                except BaseException:
                    if shared:
                        _pool_trips.end()
                    raise
                if shared:
                    self._busy.add_done_callback(lambda _: _pool_trips.end())
                try:
                    batch = await asyncio.shield(self._busy)
                except asyncio.CancelledError:
                    raise  # the worker may still run: commits stay held; `aclose` waits for it
                except BaseException:
                    self._busy = None
                    self._follower.planned([])
                    raise
                self._busy = None
                self._follower.planned(batch)
                self._done = self._exhausted
                self._changed.set()
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # the plan raised: the sender sees it next
            self._error, self._done = exc, True
            self._changed.set()
