"""`PlanCache`: the plan cache's directory of entries, read and written whole, LRU-bounded.

A run uses it unless told not to (`plan_cache=False`, `--no-plan-cache`) or, when it says
nothing, unless `DUPLEX_PLAN_CACHE=off`. The directory is `DUPLEX_PLAN_CACHE_DIR`, else
`plans/` in the platform's user cache directory (`~/.cache/duplex-client/plans` on Linux,
honouring `XDG_CACHE_HOME`). Its total size is bounded by `DUPLEX_PLAN_CACHE_MAX_MB`
(default 2048): after each write the least recently used entries (by file modification
time, which a hit refreshes) are deleted until the rest fit. Entries are written beside
their name and renamed over it, so a reader sees a whole entry or none; one that does not
check out (truncated, altered) is deleted and read as a miss, with one warning. The cache
never fails a run: a directory that cannot be written says so once and the run plans as if
there were no cache.
"""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from duplex_client.files import atomic_file
from duplex_client.framing.plan_cache import (
    ENTRY_SUFFIX,
    CorruptEntry,
    StoredEntry,
    decode_entry,
    encode_entry,
    evictions,
)
from duplex_client.media.errors import MediaWarning, warn_media

#: `off` (or 0, no, false) turns the cache off for runs that do not say (`plan_cache=None`).
ENV_SWITCH = "DUPLEX_PLAN_CACHE"
#: Where the cache lives (overrides the platform's user cache directory).
ENV_DIR = "DUPLEX_PLAN_CACHE_DIR"
#: The cache's size bound in MiB.
ENV_MAX_MB = "DUPLEX_PLAN_CACHE_MAX_MB"
DEFAULT_MAX_MB = 2048


def default_dir() -> Path:
    """`DUPLEX_PLAN_CACHE_DIR`, else `plans/` in the user cache directory."""
    given = os.environ.get(ENV_DIR, "").strip()
    if given:
        return Path(given).expanduser()
    from platformdirs import user_cache_path

    return user_cache_path("duplex-client", appauthor=False) / "plans"


def enabled_by_env() -> bool:
    """Whether `DUPLEX_PLAN_CACHE` leaves the cache on (`ValueError` naming it if unreadable)."""
    raw = os.environ.get(ENV_SWITCH, "").strip().lower()
    if raw in ("", "1", "on", "yes", "true"):
        return True
    if raw in ("0", "off", "no", "false"):
        return False
    raise ValueError(f"{ENV_SWITCH} must be on or off, got {raw!r}")


def max_bytes_from_env() -> int:
    """The size bound `DUPLEX_PLAN_CACHE_MAX_MB` sets (`ValueError` naming it if bad)."""
    raw = os.environ.get(ENV_MAX_MB, "").strip()
    if not raw:
        return DEFAULT_MAX_MB << 20
    try:
        mb = int(raw)
    except ValueError:
        mb = -1
    if mb < 0:
        raise ValueError(f"{ENV_MAX_MB} must be a whole number of MiB (0 or more), got {raw!r}")
    return mb << 20


@dataclass(frozen=True, slots=True)
class CacheInfo:
    """What `duplex-cli cache info` shows."""

    directory: Path
    entries: int
    bytes: int
    max_bytes: int

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""
        return {
            "directory": str(self.directory),
            "entries": self.entries,
            "bytes": self.bytes,
            "max_bytes": self.max_bytes,
        }


class PlanCache:
    """A directory of plan cache entries (`<key>.plan`), bounded to `max_bytes` in total."""

    def __init__(
        self, directory: str | os.PathLike[str] | None = None, *, max_bytes: int | None = None
    ) -> None:
        self.directory = Path(directory).expanduser() if directory is not None else default_dir()
        self.max_bytes = max_bytes_from_env() if max_bytes is None else max_bytes
        self._unwritable = False

    def path(self, key: str) -> Path:
        """Where the entry `key` lives."""
        return self.directory / f"{key}{ENTRY_SUFFIX}"

    def load(self, kind: str, key: str) -> tuple[dict[str, Any], memoryview] | None:
        """(meta, payload) of the entry `key`, or None (a miss; a corrupt entry warns once)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        try:
            found = decode_entry(data, kind, key)
        except CorruptEntry as exc:
            warn_media(MediaWarning(f"plan cache: {path}: {exc}; deleted, planning again"))
            with contextlib.suppress(OSError):
                path.unlink()
            return None
        with contextlib.suppress(OSError):
            os.utime(path)  # the LRU order: a hit is a use
        return found

    def store(self, kind: str, key: str, meta: dict[str, Any], payload: bytes) -> None:
        """Write the entry `key` whole (temporary file, rename), then evict down to the bound."""
        if self._unwritable:
            return
        data = encode_entry(kind, key, meta, payload)
        if len(data) > self.max_bytes:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with atomic_file(self.path(key)) as fh:
                fh.write(data)
        except OSError as exc:
            self._unwritable = True
            reason = exc.strerror or exc.__class__.__name__
            warn_media(MediaWarning(f"plan cache: {self.directory}: cannot write ({reason})"))
            return
        self.evict(keep=self.path(key).name)

    def entries(self) -> list[StoredEntry]:
        """The entries in the directory (none if it does not exist)."""
        found = []
        try:
            listing = list(os.scandir(self.directory))
        except OSError:
            return []
        for item in listing:
            if not item.name.endswith(ENTRY_SUFFIX):
                continue
            with contextlib.suppress(OSError):
                st = item.stat()
                found.append(StoredEntry(item.name, st.st_size, st.st_mtime))
        return found

    def evict(self, *, keep: str = "") -> int:
        """Delete least recently used entries until the rest fit; returns how many went."""
        gone = evictions(self.entries(), self.max_bytes, keep=keep)
        for name in gone:
            with contextlib.suppress(OSError):
                (self.directory / name).unlink()
        return len(gone)

    def info(self) -> CacheInfo:
        """How many entries, how many bytes, and the bound."""
        entries = self.entries()
        return CacheInfo(self.directory, len(entries), sum(e.size for e in entries), self.max_bytes)

    def clear(self) -> CacheInfo:
        """Delete every entry (and temporary files left by killed writers); what was deleted."""
        before = self.info()
        cutoff = time.time() - 60  # a writer's temporary file younger than this is left alone
        with contextlib.suppress(OSError):
            for item in os.scandir(self.directory):
                stale_tmp = item.name.endswith(".tmp") and item.stat().st_mtime < cutoff
                if item.name.endswith(ENTRY_SUFFIX) or stale_tmp:
                    with contextlib.suppress(OSError):
                        os.unlink(item.path)
        return before
