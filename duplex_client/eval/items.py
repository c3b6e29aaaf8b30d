"""What an eval runs: the item set of a directory, a manifest or a Full-Duplex-Bench tree.

`load_items` recognises the input set's layout and hands it to that layout's reader; each
reader builds `EvalItem`s (`eval.item`) and imports nothing back from here.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from duplex_client.eval import bundles, fdb, omni_duplexeval, omniinteract
from duplex_client.eval.item import EvalItem, ItemSetError
from duplex_client.eval.manifest import read_manifest
from duplex_client.eval.media_dir import read_media_dir
from duplex_client.usage import UsageError

__all__ = ["EvalItem", "ItemSetError", "load_items", "select_items"]

_LAYOUTS: Final = ("dir", "manifest", "fdb", "bundles", "omniinteract", "omni-duplexeval")
_MANIFEST_EXTENSIONS: Final = (".jsonl", ".csv")


def load_items(source: str | os.PathLike[str], *, layout: str | None = None) -> list[EvalItem]:
    """The items of a media directory, a `.jsonl`/`.csv` manifest or a Full-Duplex-Bench tree.

    `layout`: None recognises the kind; "dir", "manifest", "fdb", "omniinteract",
    "omni-duplexeval" or "bundles" (run bundles to replay: a folder of them, or an earlier
    eval's output directory) forces one. Raises
    `ItemSetError` when the set cannot run at all (missing, empty, duplicate ids); a row
    that cannot run becomes an item with `error` set.
    """
    if layout is not None and layout not in _LAYOUTS:
        raise ItemSetError(
            f"layout must be one of {', '.join(_LAYOUTS)}, got {layout!r}", param="layout"
        )
    shown = os.fspath(source)
    path = Path(shown)
    if not path.exists():
        # The path is user text: it must not be rewritten into a flag by `render`.
        raise ItemSetError(f"{shown}: no such file or directory", param="source", keywords=())
    lines: list[int] | None = None
    if path.is_dir():
        if layout == "manifest":
            raise ItemSetError(
                f"layout manifest needs a .jsonl or .csv file, {shown} is a directory",
                param="layout",
            )
        items = _read_directory(path, layout)
    else:
        if layout in ("dir", "fdb", "bundles", "omniinteract", "omni-duplexeval"):
            raise ItemSetError(
                f"layout {layout} needs a directory, {shown} is a file", param="layout"
            )
        if path.suffix.lower() not in _MANIFEST_EXTENSIONS:
            raise ItemSetError(
                f"{shown}: not an input set (a media directory, a Full-Duplex-Bench tree, "
                "or a .jsonl or .csv manifest)",
                keywords=(),
            )
        rows = read_manifest(path)
        lines = [line for line, _item in rows]
        items = [item for _line, item in rows]
    if not items:
        raise ItemSetError(f"{shown}: no items", keywords=())
    _check_unique(shown, items, lines)
    return items


def select_items(
    items: Sequence[EvalItem], *, limit: int | None = None, pattern: str | None = None
) -> list[EvalItem]:
    """The items whose id matches the glob `pattern` (case-sensitive), then the first `limit`."""
    if limit is not None and limit < 1:
        raise UsageError(f"limit must be positive, got {limit}", param="limit")
    chosen = list(items)
    if pattern is not None:
        chosen = [item for item in chosen if fnmatch.fnmatchcase(item.id, pattern)]
        if not chosen:
            raise ItemSetError(f"no item id matches filter {pattern!r}", param="filter")
    if not chosen:
        raise ItemSetError("no items")
    return chosen if limit is None else chosen[:limit]


def _read_directory(root: Path, layout: str | None) -> list[EvalItem]:
    if layout == "bundles" or (layout is None and bundles.is_bundle_tree(root)):
        return bundles.read_bundle_items(root)
    if layout == "omni-duplexeval" or (
        layout is None and omni_duplexeval.is_omni_duplexeval_dataset(root)
    ):
        return omni_duplexeval.read_omni_duplexeval_items(root)
    if layout == "omniinteract" or (layout is None and omniinteract.is_omniinteract_tree(root)):
        return omniinteract.read_omniinteract_items(root)
    if layout == "fdb" or (layout is None and fdb.is_fdb_tree(root)):
        return fdb.read_fdb_items(root)
    return read_media_dir(root)


def _check_unique(shown: str, items: Sequence[EvalItem], lines: Sequence[int] | None) -> None:
    where: dict[str, list[int]] = {}
    for index, item in enumerate(items):
        where.setdefault(item.id, []).append(lines[index] if lines is not None else index)
    duplicated = {item_id: spots for item_id, spots in where.items() if len(spots) > 1}
    if not duplicated:
        return
    if lines is not None:
        named = [
            f"{item_id!r} (lines {', '.join(map(str, spots))})"
            for item_id, spots in sorted(duplicated.items())
        ]
    else:
        named = [
            f"{item_id!r} ({len(spots)} times)" for item_id, spots in sorted(duplicated.items())
        ]
    raise ItemSetError(f"{shown}: duplicate ids: {', '.join(named)}", keywords=())
