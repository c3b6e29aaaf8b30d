"""The admission arithmetic: items start only while their predicted CPU fits the budget."""

from __future__ import annotations

import pytest

from duplex_client.eval.budget import REFINE_AFTER_CPU_S, CpuBudget


class Clocks:
    """A wall clock and a CPU clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 100.0
        self.cpu = 5.0

    def budget(self, cores: int = 2, share: float = 0.8, bound: int = 32) -> CpuBudget:
        return CpuBudget(
            cores, share, bound=bound, clock=lambda: self.now, cpu_clock=lambda: self.cpu
        )


def fill(budget: CpuBudget, cost: float, media_s: float = 20.0, bound: int = 32) -> int:
    """Start items of `cost` until the budget holds one back (or `bound` run)."""
    n = 0
    while n < bound and budget.fits(cost):
        budget.start(f"i{n}", cost, media_s)
        n += 1
    if n < bound:
        budget.held(cost)
    return n


def test_video_items_are_capped_by_their_cost_and_the_cap_says_why() -> None:
    budget = Clocks().budget(cores=2, share=0.8)
    assert budget.limit_ms_per_s == 1600.0
    assert fill(budget, 96.0) == 16  # 16 x 96 = 1536 <= 1600 < 17 x 96
    assert budget.max_running == 16 and budget.load_ms_per_s() == pytest.approx(1536.0)
    assert budget.message() == (
        "capped at 16 by planning cost: 96 ms per stream-second (budget 80% of 2 cores)"
    )
    record = budget.record()
    assert (record["capped_at"], record["cost_ms_per_s"], record["max_running"]) == (16, 96.0, 16)
    budget.finish("i0")
    assert budget.fits(96.0) and not budget.fits(200.0)


def test_audio_items_are_not_capped_below_the_bound() -> None:
    budget = Clocks().budget(cores=2, share=0.8, bound=32)
    assert fill(budget, 12.0, bound=32) == 32
    assert budget.cap is None and budget.message() is None and budget.record()["capped_at"] is None


def test_an_item_dearer_than_the_budget_runs_alone_never_never() -> None:
    budget = Clocks().budget(cores=1, share=0.5)  # 500 ms per second
    assert budget.fits(900.0)  # nothing runs: it starts
    budget.start("big", 900.0, 10.0)
    assert budget.alone == 1 and not budget.fits(1.0)
    budget.finish("big")
    assert budget.running == 0 and budget.fits(900.0)


def test_measured_cpu_refines_the_predictions() -> None:
    clocks = Clocks()
    budget = clocks.budget(cores=2, share=0.8)
    for n in range(4):
        budget.start(f"i{n}", 100.0, 10.0)
    clocks.now += 4.0  # 4 items x 100 ms/s x 4 s = 1.6 CPU-s predicted: too little to refine
    clocks.cpu += 3.2
    budget.finish("i0")
    assert budget.factor == 1.0 and budget.predicted_cpu_s() < REFINE_AFTER_CPU_S
    clocks.now += 6.0  # the stream time covered stops at each item's length (10 s)
    clocks.cpu += 4.8
    budget.finish("i1")
    assert budget.predicted_cpu_s() == pytest.approx(0.4 + 3 * 1.0)
    assert budget.factor == pytest.approx(8.0 / 3.4)  # measured twice and more the prediction
    assert budget.load_ms_per_s() == pytest.approx(200.0 * 8.0 / 3.4)
    budget.exclude(10.0)  # CPU spent measuring costs is not the items'
    budget.finish("i2")
    assert budget.factor == 0.8  # clamped: a starved client spends less, and is no cheaper


def test_the_cap_keeps_the_most_that_ran_when_one_was_held() -> None:
    budget = Clocks().budget(cores=1, share=1.0)
    assert fill(budget, 300.0) == 3
    budget.finish("i0")
    budget.finish("i1")
    budget.held(300.0)  # held at 1 running: the cap stays the larger one seen
    assert budget.cap is not None and budget.cap.running == 3


def test_cores_other_processes_keep_busy_are_not_the_budgets() -> None:
    budget = Clocks().budget(cores=2, share=0.8)
    budget.observe_others(1.0)  # an exponential average: half of the new reading first
    assert budget.others_cores == 0.5 and budget.limit_ms_per_s == pytest.approx(1200.0)
    budget.observe_others(1.0)
    assert budget.limit_ms_per_s == pytest.approx(0.8 * 1.25 * 1000)
    assert fill(budget, 100.0) == 10
    assert budget.message() == (
        "capped at 10 by planning cost: 100 ms per stream-second "
        "(budget 80% of 2 cores, 0.8 busy elsewhere)"
    )


def test_an_item_that_lost_its_timing_lowers_the_ceiling() -> None:
    budget = Clocks().budget(cores=2, share=0.8)
    assert fill(budget, 100.0) == 16
    for n in range(6):
        budget.finish(f"i{n}")
    budget.lost()  # at 10 running, 1000 ms per second: no more than 900 from now on
    assert budget.limit_ms_per_s == pytest.approx(900.0)
    assert not budget.fits(100.0)
    budget.finish("i6")
    assert not budget.fits(100.0)  # 9 running: 900 + 100 > 900
    budget.finish("i7")
    assert budget.fits(100.0)
    budget.start("again", 100.0, 20.0)
    budget.held(100.0)
    assert budget.record()["lost_at_ms_per_s"] == 1000.0
    assert budget.message() is not None
    assert budget.message().endswith("; timing was lost at 1000 ms per second)")
    budget.kept(100.0)  # an item ended on time: one more of its cost may run
    assert budget.limit_ms_per_s == pytest.approx(1000.0)
    for _ in range(10):
        budget.kept(100.0)
    assert budget.limit_ms_per_s == 1600.0  # never above the budget itself
