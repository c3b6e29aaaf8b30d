"""UnitGrid: boundaries, lookups and closes, exact in samples (protocol.md §4.2)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from duplex_client.framing import UnitGrid, ms_to_samples, samples_to_ms
from duplex_client.protocol import Capabilities

grids = st.builds(
    UnitGrid,
    first_unit_ms=st.integers(1, 3000),
    chunk_period_ms=st.integers(1, 3000),
    sample_rate_hz=st.sampled_from([8000, 16000, 22050, 24000, 44100, 48000]),
)


def test_defaults_close_every_second() -> None:
    grid = UnitGrid()
    assert [grid.boundary_ms(k) for k in range(4)] == [1000, 2000, 3000, 4000]
    assert [grid.boundary_samples(k) for k in range(3)] == [16000, 32000, 48000]
    assert grid.start_ms(0) == 0 and grid.start_ms(2) == 2000
    assert grid.unit_length_ms(0) == grid.unit_length_ms(5) == 1000


def test_first_unit_may_differ() -> None:
    grid = UnitGrid(first_unit_ms=1030, chunk_period_ms=1000)
    assert [grid.boundary_ms(k) for k in range(3)] == [1030, 2030, 3030]
    assert grid.unit_length_ms(0) == 1030 and grid.unit_length_ms(1) == 1000
    assert grid.unit_length_samples(0) == 16480 and grid.unit_length_samples(1) == 16000
    assert grid.period_samples == 16000


def test_negative_unit_clamps_to_first() -> None:
    grid = UnitGrid(first_unit_ms=500, chunk_period_ms=700)
    assert grid.boundary_ms(-3) == 500
    assert grid.start_ms(-1) == 0 and grid.start_samples(-1) == 0


def test_from_capabilities_uses_advertised_grid_and_defaults() -> None:
    caps = Capabilities.from_dict({"first_unit_ms": 1030, "chunk_period_ms": 960})
    assert UnitGrid.from_capabilities(caps) == UnitGrid(1030, 960)
    assert UnitGrid.from_capabilities(Capabilities.from_dict({})) == UnitGrid(1000, 1000)
    assert (
        UnitGrid.from_capabilities(Capabilities.from_dict({"first_unit_ms": True})).first_unit_ms
        == 1000
    )


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_rejects_non_positive_integers(bad: object) -> None:
    with pytest.raises(ValueError):
        UnitGrid(first_unit_ms=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        UnitGrid(chunk_period_ms=bad)  # type: ignore[arg-type]


def test_unit_at_ms_boundary_belongs_to_next_unit() -> None:
    grid = UnitGrid()
    assert grid.unit_at_ms(0) == 0
    assert grid.unit_at_ms(999.9) == 0
    assert grid.unit_at_ms(1000) == 1
    assert grid.unit_at_ms(2500) == 2


def test_closes_includes_the_boundary() -> None:
    grid = UnitGrid()
    assert grid.closes(12800, 16000) == 0
    assert grid.closes(16000, 19200) is None
    assert grid.closes(0, 15999) is None
    assert grid.closes(15999, 16000) == 0
    assert grid.closes(16000, 16000) is None
    assert grid.closes(10000, 40000) == 1  # crosses two: the last one
    assert list(grid.closes_all(10000, 40000)) == [0, 1]
    assert list(grid.closes_all(16000, 31999)) == []
    assert list(grid.closes_all(5, 5)) == []


@settings(max_examples=150, deadline=None)
@given(grid=grids, sample=st.integers(0, 10_000_000))
def test_unit_at_sample_agrees_with_boundaries(grid: UnitGrid, sample: int) -> None:
    k = grid.unit_at_sample(sample)
    assert grid.start_samples(k) <= sample < grid.boundary_samples(k)
    assert grid.unit_length_samples(k) == grid.boundary_samples(k) - grid.start_samples(k)


@settings(max_examples=150, deadline=None)
@given(grid=grids, start=st.integers(0, 2_000_000), length=st.integers(0, 200_000))
def test_closes_matches_a_boundary_scan(grid: UnitGrid, start: int, length: int) -> None:
    end = start + length
    k = max(
        0, (start * 1000 // grid.sample_rate_hz - grid.first_unit_ms) // grid.chunk_period_ms - 2
    )
    inside = []
    while grid.boundary_samples(k) <= end:
        if grid.boundary_samples(k) > start:
            inside.append(k)
        k += 1
    assert list(grid.closes_all(start, end)) == inside
    assert grid.closes(start, end) == (inside[-1] if inside else None)


@settings(max_examples=100, deadline=None)
@given(grid=grids, k=st.integers(0, 500))
def test_units_tile_without_gaps(grid: UnitGrid, k: int) -> None:
    assert grid.start_samples(k + 1) == grid.boundary_samples(k)
    assert grid.boundary_ms(k + 1) - grid.boundary_ms(k) == grid.chunk_period_ms


def test_describe() -> None:
    assert UnitGrid(1030, 1000).describe() == {"first_unit_ms": 1030, "chunk_period_ms": 1000}


@settings(max_examples=200, deadline=None)
@given(samples=st.integers(0, 10**9), rate=st.sampled_from([8000, 16000, 24000, 44100]))
def test_samples_to_ms_is_exact_round(samples: int, rate: int) -> None:
    from fractions import Fraction

    assert samples_to_ms(samples, rate) == round(Fraction(samples * 1000, rate))


def test_ms_to_samples() -> None:
    assert ms_to_samples(200) == 3200
    assert ms_to_samples(0.5) == 8
    assert ms_to_samples(1000, 44100) == 44100
