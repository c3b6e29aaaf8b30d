"""Two real scripted run bundles of one clip, made once for all the report tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.report_runs import make_runs


@pytest.fixture(scope="session")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Bundles A and B (see tests/support/report_runs.py for how they differ)."""
    return make_runs(tmp_path_factory.mktemp("report_runs"))
