"""The README's `SyncDuplexClient` example, run as written against a reference server."""

from __future__ import annotations

import asyncio
import contextlib
import io
import re
from pathlib import Path

from duplex_client.server import ReferenceServer

README = Path(__file__).resolve().parents[3] / "README.md"
MARK = "<!-- tested: tests/integration/client/test_readme_sync.py runs this block -->"


def readme_block() -> str:
    """The Python block right after the mark."""
    text = README.read_text(encoding="utf-8")
    after = text[text.index(MARK) + len(MARK) :]
    found = re.match(r"\s*```python\n(.*?)```", after, re.S)
    assert found is not None, "the marked block is not a Python block"
    return found.group(1)


async def test_the_readme_sync_example_runs() -> None:
    code = readme_block()
    assert 'URL = "http://127.0.0.1:8099"' in code
    async with ReferenceServer(profile="minicpmo", engine="scripted") as server:
        code = code.replace("http://127.0.0.1:8099", server.url)
        out = io.StringIO()

        def run() -> None:
            with contextlib.redirect_stdout(out):
                exec(compile(code, str(README), "exec"), {"__name__": "readme"})

        await asyncio.to_thread(run)
    lines = out.getvalue().splitlines()
    assert lines, "the example printed nothing"
    assert any(line.startswith("speak resp_") for line in lines), lines
