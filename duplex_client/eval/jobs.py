"""The jobs of an eval: one per item and repeat, or per item, repeat and endpoint in a
comparison, each with the bundle folder it writes."""

from __future__ import annotations

import collections
from collections.abc import Sequence
from dataclasses import dataclass

from duplex_client.bundle.eval_layout import ITEMS_DIR, endpoint_dir, item_key
from duplex_client.eval.item import EvalItem, ItemSetError

__all__ = ["EvalJob", "plan_jobs"]


@dataclass(frozen=True, slots=True)
class EvalJob:
    """An item and its repeat, with where its bundle goes."""

    item: EvalItem
    repeat: int | None
    key: str
    #: The endpoint (index) the job runs on in a comparison; None: whichever takes it.
    endpoint: int | None = None


def plan_jobs(items: Sequence[EvalItem], repeat: int, endpoints: int = 0) -> list[EvalJob]:
    """One job per item and repeat (per endpoint when `endpoints`, each in its endpoint's
    folder); bundle keys that would nest inside another are refused."""
    jobs = []
    pinned: Sequence[int | None] = range(endpoints) if endpoints else [None]
    for endpoint in pinned:
        folder = "" if endpoint is None else endpoint_dir(endpoint) + "/"
        for item in items:
            for r in range(1, repeat + 1) if repeat > 1 else [None]:
                jobs.append(EvalJob(item, r, folder + item_key(item.id, r), endpoint))
    keys = {j.key for j in jobs}
    if len(keys) < len(jobs):
        counts = collections.Counter(i.id for i in items)  # given as a list, not loaded
        twice = sorted(k for k, n in counts.items() if n > 1)
        raise ItemSetError(f"duplicate item ids: {', '.join(twice[:5])}")
    nested = sorted(
        (parent, key)
        for key in keys
        for parent in (key.rsplit("/", n)[0] for n in range(1, key.count("/")))
        if parent in keys
    )
    if nested:
        shown = ", ".join(f"{_id(a)!r} holds {_id(b)!r}" for a, b in nested[:5])
        raise ItemSetError(f"item ids nest inside each other's bundle folders: {shown}")
    return jobs


def _id(key: str) -> str:
    """The item id (and repeat) part of a bundle key."""
    return key.split(ITEMS_DIR + "/", 1)[-1]
