"""`run_eval`: an eval from a notebook or the CLI — items in, bundles and a summary out.

Exit codes: 0 every item ok; 1 an item failed, or every endpoint went down; 2 bad options
or input (nothing ran); 130 interrupted (the summary of what finished is written and the
eval resumes from the same output directory).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from duplex_client.bundle.eval_layout import COMPARE_MD, EVAL_FILE
from duplex_client.bundle.layout import BundleLayout
from duplex_client.bundle.writer import write_json_atomic
from duplex_client.eval.budget import check_share
from duplex_client.eval.compare import EndpointSide, endpoint_summaries, write_comparison
from duplex_client.eval.cost import admission_for
from duplex_client.eval.dialects import compares, one_dialect, set_dialects
from duplex_client.eval.endpoints import EndpointPool
from duplex_client.eval.exports import EXPORTS, check_export, write_export
from duplex_client.eval.item import EvalItem, is_layout_column
from duplex_client.eval.item_run import ItemOutcome
from duplex_client.eval.items import load_items, select_items
from duplex_client.eval.jobs import plan_jobs
from duplex_client.eval.runner import (
    EvalProgress,
    EvalRun,
    EvalSettings,
    ItemExecutor,
    LocalExecutor,
    settings_record,
)
from duplex_client.eval.summary import EvalSummary, ItemRecord
from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.run.checks import check_images, check_url_options, check_video
from duplex_client.run.options import DUPLEX, RunOptions
from duplex_client.run.result import EXIT_FAILED, EXIT_OK
from duplex_client.usage import UsageError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from duplex_client.eval.cost import CostModel

#: Bounds of the eval's own numeric options (both included).
_LIMITS = {"concurrency": (1, 256), "repeat": (1, 1000), "retries": (0, 100)}
__all__ = ["EXPORTS", "EvalResult", "changed_options", "run_eval", "run_eval_async"]


@dataclass(slots=True)
class EvalResult:
    """What an eval left: per-item records, the summary and how it ended."""

    output_dir: Path
    summary: dict[str, Any]
    items: list[ItemRecord]
    rows: list[dict[str, Any]]
    exit_code: int
    #: Why the eval stopped early (every endpoint down, interrupted), else None.
    error: str | None = None
    #: Items not run to a final status (they run when the eval is started again).
    unfinished: int = 0
    notes: list[str] = field(default_factory=list)
    #: Item runs the eval had to do (items × repeats), finished or not.
    total: int = 0

    @classmethod
    def load(cls, output_dir: str | os.PathLike[str]) -> EvalResult:
        """Reopen a finished eval from its directory (read by `bundle.reader`): the summary
        rows, each item's record from its bundle, the aggregate recomputed from them.

        Not an eval directory (no `summary.jsonl`): `BundleError` (a `UsageError`), one line.
        An item whose bundle cannot be read keeps its summary row and gets a note.
        """
        from duplex_client.bundle.eval_layout import SUMMARY_COLUMNS
        from duplex_client.bundle.reader import read_optional, read_summary_rows

        out = Path(output_dir)
        rows = read_summary_rows(out)
        settings = (read_optional(out / EVAL_FILE) or {}).get("settings") or {}
        records, notes = [], []
        for row in rows:
            bundle = str(row.get("bundle") or "")
            side = read_optional(BundleLayout(out / bundle).eval_item) or {}
            try:
                records.append(
                    ItemRecord.from_bundle(
                        out / bundle,
                        id=str(row.get("id")),
                        repeat=row.get("repeat"),
                        endpoint=row.get("endpoint"),
                        attempts=int(row.get("attempts") or 1),
                        expected=row.get("expected"),
                        extra={k: v for k, v in row.items() if k not in SUMMARY_COLUMNS},
                        bundle=bundle,
                        previous_errors=tuple(side.get("previous_errors", ())),
                    )
                )
            except (ValueError, OSError) as exc:
                notes.append(f"{bundle or row.get('id')}: not reopened ({exc})")
        lateness = settings.get("max_lateness_ms")
        summary = EvalSummary(records, **({"max_lateness_ms": lateness} if lateness else {}))
        agg = summary.aggregate()
        code = EXIT_FAILED if any(r.get("ok") is not True for r in rows) else EXIT_OK
        return cls(out, agg, list(summary.records), rows, code, notes=notes, total=len(rows))

    def frame(self) -> pd.DataFrame:
        """The summary rows as a pandas DataFrame (needs the `notebook` extra, for pandas)."""
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                "frame() needs pandas: pip install 'duplex-client[notebook]'"
            ) from None
        return pd.DataFrame(self.rows)

    def plot(self) -> Figure:
        """Per-turn latency, server time and overlap histograms and status counts (`report`)."""
        from duplex_client.report.figure import require_matplotlib
        from duplex_client.report.figure_eval import eval_figure, eval_turns

        require_matplotlib()
        return eval_figure(self.rows, eval_turns(self.output_dir, self.rows))

    def to_dict(self) -> dict[str, Any]:
        """The aggregate, how the eval ended and where it is (`--json`)."""
        return {
            "output_dir": str(self.output_dir),
            "exit_code": self.exit_code,
            "error": self.error,
            "total": self.total,
            "unfinished": self.unfinished,
            "aggregate": self.summary,
            "notes": self.notes,
        }


def run_eval(items: str | os.PathLike[str] | Sequence[EvalItem], **kw: Any) -> EvalResult:
    """Blocking `run_eval_async` for scripts and notebooks (inside a running event loop, a
    Jupyter cell, it runs on a worker thread with its own loop)."""
    from duplex_client.client.sync import run_blocking

    return run_blocking(run_eval_async(items, **kw))


async def run_eval_async(
    items: str | os.PathLike[str] | Sequence[EvalItem],
    *,
    output_dir: str | os.PathLike[str],
    urls: Sequence[str] = (),
    concurrency: int = 1,
    repeat: int = 1,
    retries: int = 2,
    rerun_failed: bool = False,
    max_lateness_ms: float = 20.0,
    layout: str | None = None,
    limit: int | None = None,
    pattern: str | None = None,
    export: str | None = None,
    export_dir: str | os.PathLike[str] | None = None,
    ray: str | bool | None = None,
    server_engine: str | None = None,
    options: RunOptions | None = None,
    progress: EvalProgress | None = None,
    backoff_s: float = 1.0,
    dialects: Sequence[str] = (),
    each_endpoint: bool | None = None,
    cpu_budget: float | None = None,
    cost_model: CostModel | None = None,
    **run_options: Any,
) -> EvalResult:
    """Run `items` (a directory, a manifest, or `EvalItem`s) and write bundles and a summary.

    `run_options` are `stream_clip`'s keywords (`tail_silence_s`, `preset`, ...), or pass
    `options=RunOptions(...)`. Without `urls` an embedded reference server is started with
    as many sessions as `concurrency`. `ray`: True for a local Ray, or a cluster address.
    Bad options raise `UsageError` before anything runs; item failures are in the result.
    `dialects`: one per URL, the wire each endpoint speaks (docs/dialects.md), or one for all.
    `each_endpoint`: every item runs on every URL (a comparison, `endpoint-<n>/` per URL and
    `compare.json`); None: so when `dialects` names different wires, else the URLs share
    the items out.
    `cpu_budget`: the share of this process's cores the running items' predicted CPU may
    take (default 0.8): items start only while it holds, `concurrency` is the upper bound
    (docs/eval.md); `cost_model` predicts what an item costs (default: measured here).
    """
    compare = compares(each_endpoint, urls, dialects)
    if dialects:
        run_options = {**run_options, "dialect": one_dialect(dialects, urls)}
        if options is not None:
            options = dataclasses.replace(options, dialect=run_options.pop("dialect"))
    base = _options(options, run_options)
    settings = EvalSettings(
        concurrency=concurrency,
        repeat=repeat,
        retries=retries,
        rerun_failed=rerun_failed,
        max_lateness_ms=max_lateness_ms,
        backoff_s=backoff_s,
        cpu_budget=cpu_budget,
    )
    _check(settings, urls, export, ray)
    # each item's run judges its own timing at the eval's limit (and warns when it is lost)
    base = dataclasses.replace(base, max_lateness_ms=float(max_lateness_ms))
    if urls:
        check_url_options(base)
    chosen = load_items(items, layout=layout) if isinstance(items, str | os.PathLike) else items
    chosen = select_items(list(chosen), limit=limit, pattern=pattern)
    check_export(export, chosen)
    if not any(i.input_video or i.replay for i in chosen):  # they would do nothing
        check_video(base, video="a video item")
        if not any(i.input_image for i in chosen):
            check_images(base, images="a video or image item")
    jobs = plan_jobs(chosen, repeat, len(urls) if compare else 0)
    out = Path(output_dir)
    inside = [
        i.id for i in chosen if i.replay and Path(i.replay).resolve().is_relative_to(out.resolve())
    ]
    if inside:
        raise UsageError(
            f"output_dir {out} holds the bundles being replayed ({inside[0]}, ...): "
            "give the replay its own output directory",
            keywords=("output_dir",),
        )
    progress = progress or EvalProgress()
    extras = sorted({key for item in chosen for key in item.extra if not is_layout_column(key)})
    if extras:  # once, not per row: columns that set nothing (a typo of a known one refuses)
        progress.notes.append(
            f"manifest column(s) {', '.join(extras)}: not run options, kept as extra summary "
            "columns"
        )
    record = {
        **settings_record(settings, base),
        "server": _server_record(urls, base, server_engine),
        "each_endpoint": compare,
    }
    if len(dialects) > 1:  # one per url, in order: the options' own is only the first
        record["options"]["dialect"] = list(dialects)
    changed = changed_options(out / EVAL_FILE, record)
    if changed:
        progress.notes.append(
            f"run options differ from this eval's earlier run ({changed}): finished items keep "
            "their results; use a new output directory to run everything with the new ones"
        )
    try:
        out.mkdir(parents=True, exist_ok=True)
        write_json_atomic(out / EVAL_FILE, record)
    except OSError as exc:
        message = f"{out}: cannot write the output directory ({exc})"
        raise UsageError(message, param="output_dir") from None
    endpoints = _endpoints(urls, base, settings, ray, server_engine, progress, dialects)
    async with endpoints as (pool, executor):
        admission = admission_for(settings, len(pool.endpoints), base, cost_model, ray, progress)
        if admission is not None:
            await admission.settle()
        run = EvalRun(jobs, base, out, pool, settings, executor, progress, admission)
        run.resume()
        error, code = None, EXIT_OK
        try:
            await run.run()
        except asyncio.CancelledError:
            run.collect_finished()
            await asyncio.shield(run.write_summary())
            raise
        progress.notes.extend(pool.log)
        if pool.all_down and run.unfinished:
            error = (
                f"every endpoint is down ({pool.down_reason()}); {run.unfinished} item(s) not "
                "run: run the same command again to resume"
            )
        elif run.unfinished:  # a comparison's endpoint went down: its items are missing
            error = (
                f"{run.unfinished} item run(s) not run on an endpoint that is down "
                f"({pool.down_reason()}): run the same command again to resume"
            )
        summary = await run.write_summary()
        sides = [EndpointSide(e.index, e.shown, e.options(base).dialect) for e in pool.endpoints]
        again = sum(1 for r in summary.records if ItemOutcome.from_result(r.result).rerun)
        if again:
            progress.notes.append(
                f"{again} item(s) failed for their endpoint's reasons (refused, dropped, a "
                "server that died): the same command run again runs them again"
            )
    # (eval folder, its summary, its export folder): one per endpoint in a comparison
    parts: list[tuple[Path, EvalSummary, str | os.PathLike[str] | None]] = [
        (out, summary, export_dir)
    ]
    if compare:
        per_endpoint = endpoint_summaries(summary, sides)
        await asyncio.to_thread(write_comparison, out, per_endpoint, record)
        progress.notes.append(f"endpoints compared: {out / COMPARE_MD}")
        parts = [
            (out / s.folder, sub, None if export_dir is None else Path(export_dir) / s.folder)
            for s, sub in per_endpoint
        ]
    for folder, part, where in parts if export is not None else []:
        notes = await asyncio.to_thread(
            write_export, str(export), part, chosen, folder, where, repeat, base
        )
        progress.notes.extend(notes)
    agg = summary.aggregate()
    if error is not None or agg["failed"]:
        code = EXIT_FAILED
    return EvalResult(
        out, agg, list(summary.records), summary.rows, code, error, run.unfinished,
        list(progress.notes), total=len(jobs),
    )  # fmt: skip


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


def _options(options: RunOptions | None, run_options: dict[str, Any]) -> RunOptions:
    if options is not None and run_options:
        raise UsageError("give options= or run option keywords, not both", keywords=())
    if options is None:
        known = {f.name for f in dataclasses.fields(RunOptions)}
        unknown = sorted(set(run_options) - known)
        if unknown:
            raise UsageError(f"{unknown[0]} is not an option of run_eval", keywords=())
        options = RunOptions(**run_options)
    options.validate(inputs="given")  # each item brings its media
    return options


def _check(settings: EvalSettings, urls: Sequence[str], export: str | None, ray: Any) -> None:
    from duplex_client.client.transport import check_url

    for name, (low, high) in _LIMITS.items():
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise UsageError(
                f"{name} must be an integer in {low}..{high}, got {value!r}", param=name
            )
    check_share(settings.cpu_budget)
    m = settings.max_lateness_ms
    if isinstance(m, bool) or not isinstance(m, int | float) or not math.isfinite(m) or m <= 0:
        raise UsageError(f"max_lateness_ms must be positive, got {m!r}", param="max_lateness_ms")
    for url in urls:
        check_url(url)
    if len(set(urls)) != len(urls):
        raise UsageError("urls lists the same endpoint twice", param="urls")
    check_export(export, ())
    if isinstance(ray, str) and ray and not urls:
        raise UsageError(
            "ray with a cluster address needs url: the embedded server listens on this "
            "machine's loopback only",
            keywords=("ray", "url"),
        )


def _server_record(urls: Sequence[str], options: RunOptions, engine: str | None) -> dict[str, Any]:
    """`eval.json`'s `server`: the embedded server's engine and profile (None: a remote one's)."""
    if urls:
        return {"embedded": False, "engine": None, "profile": None}
    from duplex_client.run.session_run import embedded_profile
    from duplex_client.server.config import default_engine

    chosen = engine or ("scripted" if options.server_script else default_engine())
    return {"embedded": True, "engine": chosen, "profile": embedded_profile(options)}


@contextlib.asynccontextmanager
async def _endpoints(
    urls: Sequence[str],
    options: RunOptions,
    settings: EvalSettings,
    ray: str | bool | None,
    engine: str | None,
    progress: EvalProgress,
    dialects: Sequence[str] = (),
) -> AsyncIterator[tuple[EndpointPool, ItemExecutor]]:
    """The endpoint pool (an embedded server when no URL) and the executor items run on."""
    from duplex_client.client.transport import redact_url
    from duplex_client.run.embedded import embedded_server
    from duplex_client.run.session_run import embedded_profile, with_listed_model

    async with contextlib.AsyncExitStack() as stack:
        if urls:
            pairs = [(u, redact_url(u)) for u in urls]
        else:
            url = await stack.enter_async_context(
                embedded_server(
                    profile=embedded_profile(options),
                    require_audio=options.require_audio,
                    engine=engine,
                    max_sessions=settings.concurrency,
                    script=options.server_script,
                    dialect=DUPLEX if options.dialect == AUTO else options.dialect,
                )
            )
            pairs = [(url, "embedded")]
        notes = progress.notes
        executor: ItemExecutor = LocalExecutor(progress)
        if ray is not None and ray is not False:
            from duplex_client.eval.ray_executor import RayExecutor

            address = ray if isinstance(ray, str) and ray else None
            executor = await asyncio.to_thread(
                RayExecutor.start, address, endpoints=len(pairs), concurrency=settings.concurrency
            )
        stack.callback(executor.close)
        pool = EndpointPool.of(pairs, retries=settings.retries, backoff_s=settings.backoff_s)
        await set_dialects(pool, options, dialects, notes, embedded=not urls)
        if options.model is None:  # asked once per endpoint, not once per item
            for endpoint in pool.endpoints:
                endpoint.model = (
                    await with_listed_model(endpoint.url, endpoint.options(options), notes.append)
                ).model
        if urls and settings.concurrency > 1:
            await _ask_session_limits(pool, options, settings.concurrency, notes)
        yield pool, executor


async def _ask_session_limits(
    pool: EndpointPool, options: RunOptions, concurrency: int, notes: list[str]
) -> None:
    """Each endpoint's session limit, asked before any item runs (`admission`)."""
    from duplex_client.eval.admission import session_limit

    for endpoint in pool.endpoints:
        asked = endpoint.options(options)
        endpoint.limit = await session_limit(endpoint.url, asked, endpoint.model or options.model)
        if endpoint.limit is not None and endpoint.limit < concurrency:
            notes.append(
                f"endpoint {endpoint.label} holds {endpoint.limit} session at a time "
                f"(supports_multi_session: false): its items run one by one, not {concurrency}"
            )
