"""The eval's scheduling, retries, endpoint health and resume, with an executor that fakes runs."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from duplex_client.bundle.writer import write_json_atomic
from duplex_client.eval.endpoints import EndpointPool
from duplex_client.eval.item_run import ITEM_FILE, ItemJob, ItemOutcome, failed_result
from duplex_client.eval.items import EvalItem, ItemSetError
from duplex_client.eval.jobs import plan_jobs
from duplex_client.eval.runner import EvalProgress, EvalRun, EvalSettings
from duplex_client.run.options import RunOptions

OK_DOC = {"ok": True, "status": "ok", "exit_code": 0, "error": None, "session_id": "s"}
REFUSED = {**failed_result("cannot connect: connection refused", exit_code=1)}


class FakeExecutor:
    """Writes a result.json per attempt as `decide(job, slot)` says; records every attempt."""

    def __init__(self, decide: Callable[[ItemJob, int], dict[str, object]]) -> None:
        self.decide = decide
        self.attempts: list[tuple[str, int, int]] = []
        self.running = 0
        self.most = 0

    async def run(self, job: ItemJob, bundle_dir: Path, slot: int) -> ItemOutcome:
        self.attempts.append((job.item.id, slot, job.attempt))
        self.running += 1
        self.most = max(self.most, self.running)
        await asyncio.sleep(0.01)
        self.running -= 1
        doc = self.decide(job, slot)
        bundle_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(bundle_dir / "result.json", doc)
        return ItemOutcome.from_result(doc)

    def close(self) -> None:
        pass


def make_run(
    tmp_path: Path,
    executor: FakeExecutor,
    *,
    n: int = 4,
    endpoints: int = 1,
    each_endpoint: bool = False,
    **settings: object,
) -> EvalRun:
    items = [EvalItem(f"i{k}", input_audio="x.wav") for k in range(n)]
    pool = EndpointPool.of(
        [(f"ws://e{k}", f"ws://e{k}") for k in range(endpoints)], retries=2, backoff_s=0.01
    )
    config = EvalSettings(start_interval_s=0.0, summary_every_s=0.0, **settings)  # type: ignore[arg-type]
    jobs = plan_jobs(items, config.repeat, endpoints if each_endpoint else 0)
    run = EvalRun(jobs, RunOptions(), tmp_path, pool, config, executor, EvalProgress())
    run.resume()
    return run


async def test_concurrency_is_per_endpoint_and_every_item_runs_once(tmp_path: Path) -> None:
    executor = FakeExecutor(lambda job, slot: OK_DOC)
    run = make_run(tmp_path, executor, n=8, endpoints=2, concurrency=2)
    await run.run()
    assert sorted(a[0] for a in executor.attempts) == [f"i{k}" for k in range(8)]
    assert executor.most == 4  # 2 endpoints x 2
    assert {a[1] for a in executor.attempts} == {0, 1}  # spread over both
    assert [r.id for r in run.summary().records] == [f"i{k}" for k in range(8)]
    assert run.unfinished == 0 and run.progress.done == 8


async def test_an_endpoint_fault_retries_the_item_elsewhere(tmp_path: Path) -> None:
    executor = FakeExecutor(lambda job, slot: REFUSED if slot == 0 else OK_DOC)
    run = make_run(tmp_path, executor, n=4, endpoints=2)
    await run.run()
    records = {r.id: r for r in run.summary().records}
    assert all(r.result["ok"] for r in records.values())
    retried = [r for r in records.values() if r.attempts > 1]
    assert retried and all(r.previous_errors[0].startswith("ws://e0: ") for r in retried)
    # a retried item never went back to the endpoint that faulted for it
    for item, slot, attempt in executor.attempts:
        if attempt > 1:
            assert slot == 1, (item, slot, attempt)
    assert run.pool.endpoints[0].faults >= 1
    side = json.loads((tmp_path / "items" / retried[0].id / ITEM_FILE).read_text())
    assert side["endpoint"] == "ws://e1" and side["attempts"] == 2


async def test_a_comparison_runs_each_item_on_each_endpoint_and_retries_it_there(
    tmp_path: Path,
) -> None:
    faults: list[str] = []

    def decide(job: ItemJob, slot: int) -> dict[str, object]:
        if slot == 1 and job.item.id == "i0" and not faults:  # one fault, retried on e1
            faults.append(job.key)
            return REFUSED
        return OK_DOC

    executor = FakeExecutor(decide)
    run = make_run(tmp_path, executor, n=3, endpoints=2, each_endpoint=True)
    await run.run()
    ran = sorted((item, slot) for item, slot, _ in executor.attempts)
    assert ran == [("i0", 0), ("i0", 1), ("i0", 1), ("i1", 0), ("i1", 1), ("i2", 0), ("i2", 1)]
    keys = sorted(r.bundle for r in run.summary().records)
    assert keys == [f"endpoint-{e}/items/i{k}" for e in (0, 1) for k in range(3)]
    assert all(r.result["ok"] for r in run.summary().records) and run.unfinished == 0


async def test_a_comparison_endpoint_down_leaves_its_items_unfinished(tmp_path: Path) -> None:
    executor = FakeExecutor(lambda job, slot: REFUSED if slot == 1 else OK_DOC)
    run = make_run(tmp_path, executor, n=5, endpoints=2, each_endpoint=True)
    await asyncio.wait_for(run.run(), 10)  # the other endpoint's work never waits on it
    assert run.pool.endpoints[1].down and not run.pool.endpoints[0].down
    assert sorted(i for i, slot, _ in executor.attempts if slot == 0) == [f"i{k}" for k in range(5)]
    assert all(slot == 1 for _, slot, a in executor.attempts if a > 1)  # never moved to e0
    assert run.unfinished == 4  # one item failed on e1 (rerun on resume), four never ran


async def test_every_endpoint_down_stops_without_burning_the_queue(tmp_path: Path) -> None:
    executor = FakeExecutor(lambda job, slot: REFUSED)
    run = make_run(tmp_path, executor, n=10)
    await run.run()
    assert run.pool.all_down
    assert len(executor.attempts) == 3  # faults 1, 2 (backoff each) and 3 (> retries): down
    assert run.unfinished == 9
    (record,) = run.summary().records
    assert record.result["status"] == "failed" and record.attempts == 3


async def test_an_item_failure_is_not_an_endpoint_fault(tmp_path: Path) -> None:
    bad = failed_result("clip.mp4: not a media file")  # exit 2: the item's own input
    executor = FakeExecutor(lambda job, slot: bad)
    run = make_run(tmp_path, executor, n=5)
    await run.run()
    assert len(executor.attempts) == 5 and not run.pool.endpoints[0].down
    assert run.progress.failed == 5


async def test_resume_runs_only_unfinished_items_and_rerun_failed_adds_failed_ones(
    tmp_path: Path,
) -> None:
    bad = failed_result("clip.mp4: not a media file")  # the item's own failure
    first = FakeExecutor(lambda job, slot: bad if job.item.id == "i1" else OK_DOC)
    await make_run(tmp_path, first, n=4, retries=0).run()
    (tmp_path / "items" / "i2" / "result.json").write_text(
        json.dumps({**OK_DOC, "status": "interrupted"})  # a run cut short: not final
    )
    # i3 failed because its server died mid-session: not the item's fault
    died = {**failed_result("session closed: disconnect", exit_code=1), "session_id": "s"}
    died["closed_reason"] = "disconnect: gave up after 5 attempt(s)"
    (tmp_path / "items" / "i3" / "result.json").write_text(json.dumps(died))
    second = FakeExecutor(lambda job, slot: OK_DOC)
    run = make_run(tmp_path, second, n=4)
    assert run.progress.resumed == 2
    await run.run()
    assert [a[0] for a in second.attempts] == ["i2", "i3"]
    third = FakeExecutor(lambda job, slot: OK_DOC)
    await make_run(tmp_path, third, n=4, rerun_failed=True).run()
    assert [a[0] for a in third.attempts] == ["i1"]


#: A refusal at the server's session limit, as a run records it (it never opened).
AT_CAPACITY = failed_result(
    "resource_exhausted: the server is at its session limit (1)", exit_code=1
)


async def test_a_refusal_at_capacity_holds_the_extra_items_back(tmp_path: Path) -> None:
    """Concurrency 3 on a server that takes 2: the third is refused, then waits for a free
    session; no fault counted, every item runs once to its end, never 3 at a time again."""
    executor = FakeExecutor(lambda job, slot: OK_DOC)
    held = [0]  # sessions the server holds: a refused one holds none

    async def run_one(job: ItemJob, bundle_dir: Path, slot: int) -> ItemOutcome:
        executor.attempts.append((job.item.id, slot, job.attempt))
        doc = AT_CAPACITY if held[0] >= 2 else OK_DOC
        if doc is OK_DOC:
            held[0] += 1
            executor.most = max(executor.most, held[0])
            await asyncio.sleep(0.05)
            held[0] -= 1
        bundle_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(bundle_dir / "result.json", doc)
        return ItemOutcome.from_result(doc)

    executor.run = run_one  # type: ignore[method-assign]
    run = make_run(tmp_path, executor, n=6, concurrency=3)
    await run.run()
    endpoint = run.pool.endpoints[0]
    assert run.unfinished == 0 and all(r.result["ok"] for r in run.summary().records)
    assert endpoint.faults == 0 and not endpoint.down and endpoint.limit == 2
    assert sorted({a[0] for a in executor.attempts}) == [f"i{k}" for k in range(6)]
    assert all(a[2] == 1 for a in executor.attempts)  # a held-back item is no retry
    assert any("at capacity with 2 session(s)" in line for line in run.pool.log)
    assert executor.most == 2


async def test_capacity_with_none_of_ours_running_waits_then_gives_up(tmp_path: Path) -> None:
    executor = FakeExecutor(lambda job, slot: AT_CAPACITY)
    run = make_run(tmp_path, executor, n=3)
    await run.run()
    assert run.pool.all_down and run.unfinished == 3  # held back: they resume, not failed
    assert run.summary().records == ()
    assert len(executor.attempts) == 3 and "none of this eval's sessions" in run.pool.log[-1]


def test_bundle_keys_that_would_nest_or_collide_are_refused() -> None:
    with pytest.raises(ItemSetError, match="'a' holds 'a/b'"):
        plan_jobs([EvalItem("a"), EvalItem("a-x"), EvalItem("a/b")], 1)
    with pytest.raises(ItemSetError, match="'a/1' holds 'a/1/1'"):
        plan_jobs([EvalItem("a"), EvalItem("a/1")], 2)
    with pytest.raises(ItemSetError, match="duplicate item ids: b"):
        plan_jobs([EvalItem("b"), EvalItem("b")], 1)
    keys = [j.key for j in plan_jobs([EvalItem("a"), EvalItem("b")], 2)]
    assert keys == ["items/a/1", "items/a/2", "items/b/1", "items/b/2"]


def test_an_outage_counts_once_however_many_items_were_running() -> None:
    now = [100.0]
    pool = EndpointPool.of([("u", "u")], retries=2, backoff_s=1.0, clock=lambda: now[0])
    (e,) = pool.endpoints
    epochs = [pool.started(e) for _ in range(8)]
    for epoch in epochs:
        pool.faulted(e, epoch, "refused")
    assert e.faults == 1 and not e.down and pool.wait_s(e) == 1.0
    now[0] += 1.0
    pool.faulted(e, pool.started(e), "refused")
    assert e.faults == 2 and pool.wait_s(e) == 2.0  # doubled
    pool.faulted(e, pool.started(e), "refused")
    assert e.down and pool.all_down and "u: refused" in pool.down_reason()


def test_a_success_resets_the_fault_count() -> None:
    pool = EndpointPool.of([("u", "u")], retries=1, backoff_s=0.0)
    (e,) = pool.endpoints
    pool.faulted(e, pool.started(e), "refused")
    pool.started(e)
    pool.succeeded(e)
    pool.faulted(e, pool.started(e), "refused")
    assert e.faults == 1 and not e.down


def test_a_stop_collects_items_finished_on_disk_but_not_yet_read(tmp_path: Path) -> None:
    run = make_run(tmp_path, FakeExecutor(lambda job, slot: OK_DOC), n=3)
    bundle = tmp_path / "items" / "i1"
    bundle.mkdir(parents=True)
    write_json_atomic(bundle / "result.json", OK_DOC)  # written; the runner not told yet
    run.collect_finished()
    run.collect_finished()  # twice: still one record, counted once
    assert [r.id for r in run.summary().records] == ["i1"] and run.progress.done == 1


def test_video_options_go_to_the_video_items() -> None:
    """A mixed set's audio items run without the video options (they would refuse them)."""
    from pathlib import Path

    from duplex_client.eval.item import EvalItem
    from duplex_client.eval.item_run import item_options
    from duplex_client.run.options import RunOptions

    base = RunOptions(
        video_fps=2.0, stack_frames=3, soundtrack="pad", require_audio=True, frame_max_side=320
    )
    video = item_options(EvalItem("v", input_video="v.mp4"), base, Path("out/v"))
    image = item_options(EvalItem("i", input_audio="a.wav", input_image="i.jpg"), base, Path("i"))
    audio = item_options(EvalItem("a", input_audio="a.wav"), base, Path("out/a"))
    assert (video.video_fps, video.stack_frames, video.soundtrack) == (2.0, 3, "pad")
    assert (audio.video_fps, audio.stack_frames, audio.soundtrack) == (1.0, 1, "trim")
    assert (video.frame_max_side, image.frame_max_side, audio.frame_max_side) == (320, 320, None)
    for options in (image, audio):
        options.validate(inputs="files")  # nothing left for an audio or image run to refuse
    assert not video.require_audio  # the eval's embedded server took it
