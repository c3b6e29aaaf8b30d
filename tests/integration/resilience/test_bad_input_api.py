"""The bad-input matrix through the notebook API: exceptions for exit 2, results for exit 1."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from duplex_client.protocol.errors import DuplexClientError
from duplex_client.run.stream import stream_clip
from tests.integration.resilience.bad_inputs import (
    CASES,
    Case,
    endpoints,
    fill,
    make_inputs,
    write_sample_clip,
)


@pytest.fixture
async def urls() -> AsyncIterator[dict[str, str]]:
    async with endpoints() as found:
        yield found


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
async def test_bad_input(case: Case, tmp_path: Path, urls: dict[str, str]) -> None:
    names = make_inputs(tmp_path, write_sample_clip(tmp_path / "clip.mp4"))
    options = {k: fill(v, names) for k, v in case.api.items()}
    options.setdefault("output_dir", tmp_path / "run")
    options["output_dir"] = Path(options["output_dir"])
    url = urls[case.url] if case.url is not None else None
    if case.exit_code == 2:
        with pytest.raises(DuplexClientError) as caught:  # UsageError or MediaError
            await stream_clip(url, **options)
        assert case.api_text in str(caught.value) and "\n" not in str(caught.value)
        assert not options["output_dir"].exists()  # a usage error writes nothing
        return
    result = await stream_clip(url, **options)
    assert result.ok is False and result.exit_code == case.exit_code
    assert result.error is not None and case.api_text in result.error
