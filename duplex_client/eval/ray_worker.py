"""The worker side of a Ray eval, and the files that travel between driver and worker.

The task (`run_item_task`) gets the item's input files as bytes, writes them into a fresh
temporary directory, runs the item there and returns every bundle file, with the paths in its
JSON files renamed to the driver's. The driver writes them with `write_bundle`, `result.json`
last and atomically.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import json
import os
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Final

from duplex_client.bundle.layout import RESULT_FILE
from duplex_client.eval.item_run import ItemJob, clear_bundle, run_item

#: How long a warm-up task keeps its worker, so that the others start workers of their own.
WARM_HOLD_S: Final = 1.0
#: What an item run imports (`run_item` imports them lazily): a warm worker has them.
_WARM_MODULES: Final = (
    "duplex_client.run.stream",
    "duplex_client.media",
    "duplex_client.media.vad",
    "duplex_client.run.listening",
    "onnxruntime",
)

#: Item and option fields naming input files: (on what, field name).
_ITEM_FILES: Final = ("input_video", "input_audio", "input_image", "annotations")
_OPTION_FILES: Final = ("annotations", "ref_audio")


def run_item_task(job: ItemJob, inputs: dict[str, bytes], target: str) -> dict[str, bytes]:
    """The Ray task: the item run into a temporary bundle; returns every file of it.

    `inputs` are the item's input files by `<item|options>.<field>`, written under the
    temporary directory; paths in the bundle's JSON files name the driver's (`target` for
    the bundle, the original input paths) instead of the worker's.
    """
    with tempfile.TemporaryDirectory(prefix="duplex-eval-") as tmp:
        root = Path(tmp)
        staged, renames = _stage_inputs(job, inputs, root / "inputs")
        bundle = root / "bundle"
        asyncio.run(run_item(staged, bundle))
        renames[str(bundle)] = target
        return collect_bundle(bundle, renames)


def warm_worker(hold_s: float = WARM_HOLD_S) -> int:
    """The warm-up task: import the item run's modules, hold the worker a moment; the pid."""
    for name in _WARM_MODULES:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    time.sleep(hold_s)  # so the next warm-up task gets a worker of its own
    return os.getpid()


def read_inputs(job: ItemJob) -> dict[str, bytes]:
    """The input files of `job` that exist here, by `<item|options>.<field>`.

    A file missing or unreadable here is not sent: the worker fails the item with the usual
    message naming the path (unless that path exists on the worker).
    """
    found: dict[str, bytes] = {}
    for where, field, path in _input_paths(job):
        with contextlib.suppress(OSError):
            found[f"{where}.{field}"] = Path(path).read_bytes()
    return found


def collect_bundle(bundle: Path, renames: Mapping[str, str]) -> dict[str, bytes]:
    """Every file under `bundle` by relative POSIX path; in `.json` files each path in
    `renames` (worker → driver) is replaced."""
    files: dict[str, bytes] = {}
    if not bundle.is_dir():
        return files
    for path in sorted(bundle.rglob("*")):
        if not path.is_file():
            continue
        data = path.read_bytes()
        if path.suffix == ".json":
            data = _rename_paths(data, renames)
        files[path.relative_to(bundle).as_posix()] = data
    return files


def write_bundle(bundle_dir: Path, files: Mapping[str, bytes]) -> dict[str, Any]:
    """Write a worker's bundle files into `bundle_dir` (cleared first), `result.json` last and
    atomically; returns the `result.json` document. Raises `ValueError` for a file name
    outside the bundle or a `result.json` that is not a JSON object."""
    doc = json.loads(files[RESULT_FILE])
    if not isinstance(doc, dict):
        raise ValueError("the worker's result.json is not a JSON object")
    names = [_safe_name(name) for name in files]
    clear_bundle(bundle_dir)
    bundle_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        if name == RESULT_FILE:
            continue
        path = bundle_dir.joinpath(*PurePosixPath(name).parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(files[name])
    tmp = bundle_dir / (RESULT_FILE + ".tmp")
    tmp.write_bytes(files[RESULT_FILE])
    os.replace(tmp, bundle_dir / RESULT_FILE)
    return doc


def _safe_name(name: str) -> str:
    parts = PurePosixPath(name).parts
    if not parts or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"the worker sent a file outside the bundle: {name!r}")
    return name


def _input_paths(job: ItemJob) -> Iterator[tuple[str, str, str]]:
    """(on what, field, path) of every input file `job` names."""
    for field in _ITEM_FILES:
        value = getattr(job.item, field)
        if isinstance(value, str):
            yield "item", field, value
    for field in _OPTION_FILES:
        value = getattr(job.options, field)
        if field == "annotations" and job.item.annotations is not None:
            continue  # the item's own annotations replace the command line's
        if isinstance(value, os.PathLike) or (
            isinstance(value, str) and not value.startswith("data:")
        ):
            yield "options", field, os.fspath(value)


def _stage_inputs(
    job: ItemJob, inputs: Mapping[str, bytes], root: Path
) -> tuple[ItemJob, dict[str, str]]:
    """`job` with each sent input file written under `root`; the staged → original paths."""
    item_changes: dict[str, Any] = {}
    option_changes: dict[str, Any] = {}
    renames: dict[str, str] = {}
    for where, field, path in _input_paths(job):
        data = inputs.get(f"{where}.{field}")
        if data is None:
            continue
        staged = root / where / field / (Path(path).name or "input")
        staged.parent.mkdir(parents=True, exist_ok=True)
        staged.write_bytes(data)
        (item_changes if where == "item" else option_changes)[field] = str(staged)
        renames[str(staged)] = path
    item = dataclasses.replace(job.item, **item_changes)
    options = dataclasses.replace(job.options, **option_changes)
    return dataclasses.replace(job, item=item, options=options), renames


def _rename_paths(data: bytes, renames: Mapping[str, str]) -> bytes:
    """Replace each path as it appears inside a JSON string (escaped the way the file is)."""
    text = data.decode("utf-8")
    for old in sorted(renames, key=len, reverse=True):
        for ascii_only in (False, True):
            text = text.replace(_json_inner(old, ascii_only), _json_inner(renames[old], ascii_only))
    return text.encode("utf-8")


def _json_inner(text: str, ascii_only: bool) -> str:
    return json.dumps(text, ensure_ascii=ascii_only)[1:-1]
