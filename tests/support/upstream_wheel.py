"""Where the unzipped `vllm-omni` wheel is: upstream's own code, read by the fidelity tests.

`make install` downloads the wheel from the package index (no dependencies) and unzips it
into `.venv/upstream/vllm-omni`; `VLLM_OMNI_SRC` points elsewhere (the folder holding
`vllm_omni/`). None when neither is there: the tests that need it skip, saying so.
"""

from __future__ import annotations

import os
from pathlib import Path

#: Where `make install` unzips the wheel.
INSTALLED = Path(__file__).resolve().parents[2] / ".venv" / "upstream" / "vllm-omni"


def vllm_omni_src() -> Path | None:
    """The folder holding upstream's `vllm_omni/` package, or None."""
    raw = os.environ.get("VLLM_OMNI_SRC")
    for candidate in (Path(raw) if raw else None, INSTALLED):
        if candidate is not None and (candidate / "vllm_omni").is_dir():
            return candidate
    return None


#: The skip reason when there is none.
MISSING = "no unzipped vllm-omni wheel (make install puts it in .venv/upstream; or VLLM_OMNI_SRC)"
