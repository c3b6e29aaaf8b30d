"""Run bundles as eval items: a whole earlier eval (or any folder of bundles) replayed.

A bundle is a folder holding `input_timeline.json` and kept payloads (`input.pcm`, from
`--keep-payloads`). Given an eval's output directory, its `items/` folder is the root, so the
replay's ids are the original ids.
"""

from __future__ import annotations

from pathlib import Path

from duplex_client.bundle.eval_layout import items_root
from duplex_client.bundle.layout import TIMELINE_FILE, BundleLayout
from duplex_client.eval.item import EvalItem


def is_bundle_tree(root: Path) -> bool:
    """Whether `root` is a bundle, or holds bundles below it."""
    return BundleLayout(root).is_bundle() or any(_bundles(items_root(root)))


def read_bundle_items(root: Path) -> list[EvalItem]:
    """One replay item per bundle under `root`, sorted; a bundle without payloads fails alone."""
    base = items_root(root)
    items = []
    for folder in sorted(_bundles(base)):
        rel = folder.relative_to(base).as_posix()
        if rel == ".":
            rel = folder.name
        error = None
        if not BundleLayout(folder).input_pcm.is_file():
            error = f"{folder}: no kept payloads (run with --keep-payloads)"
        items.append(EvalItem(rel, replay=str(folder.resolve()), error=error))
    return items


def _bundles(base: Path) -> list[Path]:
    return [p.parent for p in base.rglob(TIMELINE_FILE) if not p.parent.name.startswith(".")]
