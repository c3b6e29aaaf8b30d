"""One eval item run into its bundle directory: the item's options, the run, its outcome.

An item whose row cannot run, or whose media the run refuses, still gets a `result.json`
(status `failed`, exit code 2, the one-line error), so the summary names it and a resumed
eval does not run it again unless asked (`--rerun-failed`).
"""

from __future__ import annotations

import dataclasses
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplex_client.bundle.layout import EVAL_ITEM_FILE, BundleLayout
from duplex_client.bundle.reader import read_optional
from duplex_client.bundle.writer import write_json_atomic
from duplex_client.eval.admission import is_capacity_refusal
from duplex_client.eval.item import EvalItem
from duplex_client.protocol.errors import DuplexClientError
from duplex_client.run.checks import IMAGE_OPTIONS, VIDEO_OPTIONS
from duplex_client.run.options import RunOptions
from duplex_client.run.progress import RunProgress
from duplex_client.run.result import EXIT_FAILED, EXIT_USAGE, RunResult

#: `result.json` statuses that end an item: anything else (interrupted, none) runs again.
FINAL_STATUSES = frozenset({"ok", "failed"})
#: The eval's own record of an item beside `result.json`: endpoint, attempts, earlier errors.
ITEM_FILE = EVAL_ITEM_FILE


@dataclass(frozen=True, slots=True)
class ItemJob:
    """One run of one item: where its bundle goes (relative to the eval dir) and where to."""

    item: EvalItem
    repeat: int | None
    #: The bundle's path relative to the eval's output directory (`items/<id>[/<repeat>]`).
    key: str
    url: str
    options: RunOptions
    attempt: int = 1


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """How one attempt ended; `endpoint_fault`: the endpoint, not the item, is to blame."""

    status: str
    ok: bool
    exit_code: int
    error: str | None
    endpoint_fault: bool
    final: bool
    latency_p50_ms: float | None = None
    #: The server refused the session at its session limit (`resource_exhausted`): the
    #: item waits for a free session; neither the item's nor the endpoint's fault.
    capacity: bool = False

    @property
    def rerun(self) -> bool:
        """Whether a resumed eval runs it again: not final, or failed for the endpoint's
        reasons (its server refused, dropped or died), not the item's own."""
        return not self.final or (not self.ok and (self.endpoint_fault or self.capacity))

    @classmethod
    def from_result(cls, doc: dict[str, Any]) -> ItemOutcome:
        """The outcome a `result.json` document records."""
        status = str(doc.get("status"))
        failed = status == "failed"
        # Never connected (refused, handshake refused, at capacity) or dropped unresumed.
        closed = str(doc.get("closed_reason") or "")
        fault = failed and doc.get("exit_code") != EXIT_USAGE
        fault = fault and (doc.get("session_id") is None or closed.startswith("disconnect"))
        latency = ((doc.get("metrics") or {}).get("latency_ms") or {}).get("p50")
        error = doc.get("error")
        capacity = fault and doc.get("session_id") is None and is_capacity_refusal(error)
        return cls(
            status=status,
            ok=bool(doc.get("ok")),
            exit_code=int(doc.get("exit_code", EXIT_FAILED)),
            error=error,
            endpoint_fault=fault and not capacity,
            final=status in FINAL_STATUSES,
            latency_p50_ms=latency,
            capacity=capacity,
        )


def item_options(item: EvalItem, base: RunOptions, bundle_dir: Path) -> RunOptions:
    """The run options of one item: the item's media and its columns over the command line."""
    changes: dict[str, Any] = {
        "input_video": item.input_video,
        "input_audio": item.input_audio,
        "input_image": item.input_image,
        "output_dir": bundle_dir,
        # the eval's embedded server took these; an item runs against its URL
        "require_audio": False,
        "server_script": None,
    }
    if item.input_video is None:  # the video options are for the set's video items
        changes.update(VIDEO_OPTIONS)
        if item.input_image is None:  # and the image options for those that send images
            changes.update({name: None for name in IMAGE_OPTIONS})
    if item.tail_silence_s is not None:
        changes["tail_silence_s"] = item.tail_silence_s
    if item.annotations is not None:
        changes["annotations"] = item.annotations
    if item.instructions is not None:
        changes["instructions"] = item.instructions
    return dataclasses.replace(base, **changes)


def failed_result(
    error: str, *, exit_code: int = EXIT_USAGE, dialect: str = "duplex"
) -> dict[str, Any]:
    """The `result.json` of an item that could not run at all (a run that never started)."""
    # the wire it was to run on: a comparison's records name it
    run = RunResult(ok=False, status="failed", exit_code=exit_code, error=error, dialect=dialect)
    return run.to_dict()


def clear_bundle(bundle_dir: Path) -> None:
    """Remove what an unfinished earlier attempt left, so nothing of it mixes with this one."""
    if bundle_dir.exists():
        shutil.rmtree(bundle_dir)


async def run_item(
    job: ItemJob, bundle_dir: Path, *, progress: RunProgress | None = None
) -> ItemOutcome:
    """Run the item into `bundle_dir` (cleared first) and return how it ended.

    Never raises for the item's own failure: a refused row or file is a failed result. A
    cancellation propagates after the run wrote its (unfinished) result.
    """
    from duplex_client.run.stream import run_stream

    clear_bundle(bundle_dir)
    if job.item.error is not None:
        return _write_failure(bundle_dir, job.item.error, job.options.dialect)
    try:
        if job.item.replay is not None:
            result = await _replay(job, bundle_dir, progress)
        else:
            options = item_options(job.item, job.options, bundle_dir)
            result = await run_stream(job.url, options, progress=progress)
    except DuplexClientError as exc:  # usage or media: this item's input, nothing was sent
        return _write_failure(bundle_dir, str(exc), job.options.dialect)
    return ItemOutcome.from_result(result.to_dict())


async def _replay(job: ItemJob, bundle_dir: Path, progress: RunProgress | None) -> RunResult:
    """The item's recorded input sent again, byte for byte (the options' server settings)."""
    from duplex_client.replay.bundle_replay import replay_bundle

    opts = job.options
    assert job.item.replay is not None
    return await replay_bundle(
        job.item.replay,
        job.url,
        output_dir=bundle_dir,
        model=opts.model,
        api_key=opts.api_key,
        ref_audio=opts.ref_audio,
        timeout_s=opts.timeout_s,
        progress=progress,
        thumbnails=opts.thumbnails,
    )


def _write_failure(bundle_dir: Path, error: str, dialect: str) -> ItemOutcome:
    bundle_dir.mkdir(parents=True, exist_ok=True)
    doc = failed_result(error, dialect=dialect)
    write_json_atomic(BundleLayout(bundle_dir).result, doc)
    return ItemOutcome.from_result(doc)


def read_outcome(bundle_dir: Path) -> ItemOutcome | None:
    """The outcome a bundle holds, or None when it has no readable `result.json`."""
    doc = read_optional(BundleLayout(bundle_dir).result)
    return None if doc is None else ItemOutcome.from_result(doc)
