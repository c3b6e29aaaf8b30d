"""What `eval.json` records of the eval: the server it ran on, options changed since."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from duplex_client.eval.runner import EvalSettings, settings_record
from duplex_client.run.options import RunOptions


def changed_options(path: Path, record: dict[str, Any]) -> str:
    """Options an earlier `eval.json` at `path` had otherwise: `name a → b`, ... ('' if none).

    An option the earlier record lacks (it predates the option) counts as its default.
    """
    import json

    try:
        before = json.loads(path.read_text(encoding="utf-8")).get("options", {})
    except (OSError, ValueError, AttributeError):
        return ""
    now = record["options"]
    defaults = settings_record(EvalSettings(), RunOptions())["options"]
    before = {**{k: v for k, v in defaults.items() if k in now}, **before}
    names = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    return ", ".join(f"{k} {before.get(k)!r} → {now.get(k)!r}" for k in names)


def server_record(urls: Sequence[str], options: RunOptions, engine: str | None) -> dict[str, Any]:
    """`eval.json`'s `server`: the embedded server's engine and profile (None: a remote one's)."""
    if urls:
        return {"embedded": False, "engine": None, "profile": None}
    from duplex_client.run.session_run import embedded_profile
    from duplex_client.server.config import default_engine

    chosen = engine or ("scripted" if options.server_script else default_engine())
    return {"embedded": True, "engine": chosen, "profile": embedded_profile(options)}
