"""Eval items as Ray tasks (`duplex-cli eval --ray [ADDRESS]`): one task per item run.

Slot resources: the n-th endpoint (0-based, in `--url` order) is the custom Ray resource
`duplex_slot_<n>`, and every item's task takes one unit of its endpoint's. Ray starts a task
only where a unit is free, so the units summed over the cluster's nodes are the most sessions
that server gets at once, however many nodes join (a node without the resource adds none).
A local Ray (`--ray`) is started with `--concurrency` units of each; a cluster
(`--ray ADDRESS`) must declare them when its nodes start, split over the nodes that should
run the items: `ray start --head --resources '{"duplex_slot_0": 8}'`.

No shared filesystem is needed: the item's input files travel with the task, the worker runs
the item into a temporary directory and sends every bundle file back, and the driver writes
the bundle, `result.json` last and atomically, so a driver killed while writing leaves no
finished bundle with files missing. A worker that dies mid-item makes Ray run the item again
from the start (`MAX_RETRIES`); the driver writes only the attempt that finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import importlib
import json
import logging
import os
import secrets
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

from duplex_client.bundle.layout import RESULT_FILE
from duplex_client.eval.item_run import ItemJob, ItemOutcome, clear_bundle, failed_result
from duplex_client.eval.ray_worker import (
    read_inputs,
    run_item_task,
    warm_worker,
    write_bundle,
)
from duplex_client.protocol.errors import DuplexConnectionError
from duplex_client.run.result import EXIT_FAILED
from duplex_client.usage import UsageError

#: Ray task names are `duplex_eval:<bundle key>`; a worker's process title is `ray::<name>`.
TASK_NAME: Final = "duplex_eval"
#: How often Ray runs an item again after its worker (or node) died mid-item.
MAX_RETRIES: Final = 3
#: An item run is paced I/O: it holds no CPU reservation, only its endpoint's slot unit.
TASK_CPUS: Final = 0
#: The message of `--ray` without Ray installed (the CLI shows `ray` as `--ray`).
INSTALL_MESSAGE: Final = "ray needs Ray: install duplex-client[ray]"
#: Seconds to wait for a TCP connection to the cluster's address before calling it down.
CONNECT_TIMEOUT_S: Final = 5.0

_log = logging.getLogger(__name__)


def slot_resource(slot: int) -> str:
    """The custom Ray resource of the endpoint at index `slot` of `--url`."""
    return f"duplex_slot_{slot}"


def check_slot_resources(resources: Mapping[str, float], endpoints: int) -> None:
    """Raise `UsageError` naming the first `duplex_slot_<n>` the cluster does not offer."""
    missing = [slot_resource(n) for n in range(endpoints) if resources.get(slot_resource(n), 0) < 1]
    if missing:
        example = json.dumps({name: 8 for name in missing})
        raise UsageError(
            f"the Ray cluster has no {missing[0]} resource (one per endpoint, in order; "
            f"missing: {', '.join(missing)}): start its nodes with "
            f"`ray start --head --resources '{example}'` (or `ray start --address ... "
            f"--resources ...`)",
            param="ray",
            keywords=(),
        )


class RayExecutor:
    """Runs eval items as Ray tasks; owns the Ray connection it started (see module doc)."""

    def __init__(self, ray: Any, *, owned: bool, endpoints: int, local: bool = False) -> None:
        self._ray = ray
        self._owned = owned
        self._local = local
        self._endpoints = endpoints
        self._restore_output = _route_raylet_messages() if owned else None
        self._task = ray.remote(
            num_cpus=TASK_CPUS, max_retries=MAX_RETRIES, retry_exceptions=False
        )(run_item_task)
        self._closed = False

    @classmethod
    def start(
        cls,
        address: str | None,
        *,
        endpoints: int,
        concurrency: int,
        num_cpus: int | None = None,
        warm: bool = True,
    ) -> RayExecutor:
        """Start a local Ray (`address` None) or connect to the cluster at `address`.

        A Ray connection this process already holds (a notebook's `ray.init()`) is used as it
        is and left open by `close`. `warm`: start the workers first (`warm_up`). Raises
        `UsageError` without Ray or without the slot resources, `DuplexConnectionError` when
        the cluster cannot be reached.
        """
        executor = cls._connect(address, endpoints, concurrency, num_cpus)
        if warm:
            executor.warm_up(concurrency)
        return executor

    @classmethod
    def _connect(
        cls, address: str | None, endpoints: int, concurrency: int, num_cpus: int | None
    ) -> RayExecutor:
        if endpoints < 1:
            raise UsageError(f"endpoints must be positive, got {endpoints}", param="endpoints")
        if concurrency < 1:
            raise UsageError(
                f"concurrency must be positive, got {concurrency}", param="concurrency"
            )
        try:
            # Not a static import: type checks need no Ray (and its annotations are partial).
            ray: Any = importlib.import_module("ray")
        except ImportError:
            raise UsageError(INSTALL_MESSAGE, param="ray", keywords=("ray",)) from None
        if ray.is_initialized():
            check_slot_resources(ray.cluster_resources(), endpoints)
            return cls(ray, owned=False, endpoints=endpoints)
        if address is None:
            slots = {slot_resource(n): float(concurrency) for n in range(endpoints)}
            cpus = num_cpus or os.cpu_count() or 2
            # Idle workers past this many are killed after a second: keep one per slot unit.
            keep = {"num_workers_soft_limit": max(cpus, endpoints * concurrency)}
            try:
                with _local_auth(), _keep_sigterm_handler():
                    ray.init(
                        address="local",  # a new instance: never RAY_ADDRESS or a running one
                        num_cpus=cpus,
                        resources=slots,
                        _system_config=keep,
                        include_dashboard=False,
                        log_to_driver=False,
                        logging_level=logging.WARNING,
                    )
            except Exception as exc:
                raise DuplexConnectionError(
                    f"cannot start a local Ray: {_first_line(exc)}"
                ) from None
            return cls(ray, owned=True, endpoints=endpoints, local=True)
        _probe(address)
        try:
            with _keep_sigterm_handler():
                ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        except Exception as exc:
            raise DuplexConnectionError(
                f"cannot connect to Ray at {address}: {_first_line(exc)}"
            ) from None
        try:
            check_slot_resources(ray.cluster_resources(), endpoints)
        except UsageError:
            ray.shutdown()
            raise
        return cls(ray, owned=True, endpoints=endpoints)

    def warm_up(self, concurrency: int, *, timeout_s: float = 120.0) -> int:
        """Start as many workers as the slots run at once, each importing what an item run
        needs, before any item streams; returns how many distinct workers answered.

        A worker starting (a second of CPU) beside a streaming item takes CPU from that item's
        pacing and can cost it its timing validity. A failed warm-up only costs that.
        """
        warm = self._ray.remote(num_cpus=TASK_CPUS, max_retries=0)(warm_worker)
        refs = [
            warm.options(name=f"{TASK_NAME}:warm-up", resources={slot_resource(n): 1}).remote()
            for n in range(self._endpoints)
            for _ in range(concurrency)
        ]
        try:
            pids = self._ray.get(refs, timeout=timeout_s)
        except Exception as exc:  # a slow or failing cluster: items start cold
            _log.info("Ray warm-up failed: %s", _first_line(exc))
            for ref in refs:
                with contextlib.suppress(Exception):
                    self._ray.cancel(ref, force=True)
            return 0
        return len(set(pids))

    async def run(self, job: ItemJob, bundle_dir: Path, slot: int) -> ItemOutcome:
        """Run one item as a Ray task on endpoint `slot` and write its bundle to `bundle_dir`.

        Never raises for the item: a task that failed for good gets a failed `result.json`
        naming the Ray failure. A cancellation cancels the task (killing its worker).
        """
        if not 0 <= slot < self._endpoints:
            raise ValueError(f"slot must be in 0..{self._endpoints - 1}, got {slot}")
        clear_bundle(bundle_dir)
        target = str(bundle_dir.absolute())
        task = self._task.options(name=f"{TASK_NAME}:{job.key}", resources={slot_resource(slot): 1})
        try:
            ref = task.remote(job, read_inputs(job), target)
        except Exception as exc:  # the job did not serialise, Ray is gone
            return _write_failure(
                bundle_dir, job.options.dialect, f"Ray task not submitted: {_ray_error(exc)}"
            )
        try:
            files: dict[str, bytes] = await asyncio.wrap_future(ref.future())
        except asyncio.CancelledError:
            with contextlib.suppress(Exception):
                self._ray.cancel(ref, force=True)
            raise
        except Exception as exc:  # the worker died past the retries, the task raised
            return _write_failure(
                bundle_dir, job.options.dialect, f"Ray task failed: {_ray_error(exc)}"
            )
        if RESULT_FILE not in files:
            return _write_failure(
                bundle_dir, job.options.dialect, "Ray task failed: the worker sent no result.json"
            )
        try:
            doc = write_bundle(bundle_dir, files)
        except ValueError as exc:  # a result.json that is not a JSON object
            return _write_failure(bundle_dir, job.options.dialect, f"Ray task failed: {exc}")
        return ItemOutcome.from_result(doc)

    def close(self) -> None:
        """Shut Ray down if this executor started or connected it (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._owned:
            self._ray.shutdown()
        if self._restore_output is not None:
            self._restore_output()
        if self._local:
            _reload_auth()  # back to this process's own settings for a later ray.init


def _write_failure(bundle_dir: Path, dialect: str, error: str) -> ItemOutcome:
    clear_bundle(bundle_dir)
    bundle_dir.mkdir(parents=True, exist_ok=True)
    doc = failed_result(error, exit_code=EXIT_FAILED, dialect=dialect)
    tmp = bundle_dir / (RESULT_FILE + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, bundle_dir / RESULT_FILE)
    # Ray failed, not the endpoint: the runner must not back off from the server for it.
    return dataclasses.replace(ItemOutcome.from_result(doc), endpoint_fault=False)


def _ray_error(exc: BaseException) -> str:
    """One line: the exception the task raised, or the Ray failure (worker died, ...)."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException):
        return f"{type(cause).__name__}: {_first_line(cause)}"
    retried = (
        f" (after {MAX_RETRIES} retries)" if type(exc).__name__ == "WorkerCrashedError" else ""
    )
    return f"{type(exc).__name__}{retried}: {_first_line(exc)}"


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else type(exc).__name__


def _probe(address: str) -> None:
    """Fail fast on a `host:port` nobody listens on (Ray itself retries for minutes)."""
    if address == "auto":
        return
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), CONNECT_TIMEOUT_S).close()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise DuplexConnectionError(f"cannot connect to Ray at {address}: {reason}") from None


@contextlib.contextmanager
def _local_auth() -> Iterator[None]:
    """A fresh token for the local Ray, kept in its processes' environment, no file written.

    Ray reads the mode when it is imported, so it is told again; Ray versions without token
    authentication ignore the variables. Usage stats collection is off for the local Ray.
    """
    names = ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_USAGE_STATS_ENABLED")
    saved = {name: os.environ.get(name) for name in names}
    if saved["RAY_AUTH_MODE"] is None:  # an explicit choice of the user stands
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    _reload_auth()
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _reload_auth() -> None:
    with contextlib.suppress(ImportError, AttributeError):
        raylet = importlib.import_module("ray._raylet")
        raylet.Config.initialize("")
        raylet.AuthenticationTokenLoader.instance().reset_cache()


def _route_raylet_messages() -> Callable[[], None] | None:
    """Send Ray's messages to the driver ("a worker died", "retrying") to `logging`.

    Ray prints them on stdout from a thread, whatever `log_to_driver` says, which would
    break the eval's own output (`--json`); the item's error is in its `result.json`.
    Returns the undo, or None when this Ray has no such printer.
    """
    module = sys.modules.get("ray._private.worker")
    original = getattr(module, "print_to_stdstream", None)
    if module is None or not callable(original):
        return None

    def routed(data: Any, ignore_prefix: bool) -> None:
        if isinstance(data, dict) and data.get("pid") == "raylet":
            for line in data.get("lines") or ():
                _log.info("ray: %s", line)
            return
        original(data, ignore_prefix)

    module.print_to_stdstream = routed  # type: ignore[attr-defined]

    def restore() -> None:
        module.print_to_stdstream = original  # type: ignore[attr-defined]

    return restore


@contextlib.contextmanager
def _keep_sigterm_handler() -> Iterator[None]:
    """`ray.init` installs its own SIGTERM handler (exit); the caller's stays in force."""
    main = threading.current_thread() is threading.main_thread()
    saved = signal.getsignal(signal.SIGTERM) if main else None
    try:
        yield
    finally:
        if main and saved is not None:
            signal.signal(signal.SIGTERM, saved)
