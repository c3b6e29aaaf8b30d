"""The dialects of an eval's endpoints: one for all or one per URL, a comparison or a share-out,
and `auto` detected once per endpoint (docs/dialects.md)."""

from __future__ import annotations

import functools
from collections.abc import Sequence

from duplex_client.eval.endpoints import EndpointPool
from duplex_client.protocol.dialects.detect import AUTO
from duplex_client.run.options import DIALECT_CHOICES, RunOptions
from duplex_client.usage import UsageError

__all__ = ["compares", "one_dialect", "set_dialects"]


def one_dialect(dialects: Sequence[str], urls: Sequence[str]) -> str:
    """The dialect the options carry: the only one, or the first of one per URL (checked)."""
    for name in dialects:
        if name not in DIALECT_CHOICES:
            allowed = ", ".join(DIALECT_CHOICES)
            raise UsageError(f"dialect must be one of {allowed}, got {name!r}", param="dialect")
    if len(dialects) > 1 and len(dialects) != len(urls):
        raise UsageError(
            f"dialect names {len(dialects)} dialects for {len(urls)} url(s): give one, or one "
            "per url in the same order",
            keywords=("dialect", "url"),
        )
    return dialects[0]


def compares(asked: bool | None, urls: Sequence[str], dialects: Sequence[str]) -> bool:
    """Whether every item runs on every URL: as asked, else when the dialects differ (two
    wires named side by side are a comparison, never a share-out)."""
    if asked is None:
        return len(set(dialects)) > 1
    if asked and len(urls) < 2:
        raise UsageError(
            f"each_endpoint compares endpoints: give two or more urls, got {len(urls)}",
            keywords=("each_endpoint", "url"),
        )
    return asked


async def set_dialects(
    pool: EndpointPool,
    options: RunOptions,
    dialects: Sequence[str],
    notes: list[str],
    *,
    embedded: bool,
) -> None:
    """Give each endpoint its dialect: its own of one per URL, and `auto` detected (once per
    endpoint, not once per item; the embedded server is ours: duplex)."""
    from duplex_client.run.dialect import with_dialect

    if len(dialects) > 1:  # one per url, in order
        for endpoint, dialect in zip(pool.endpoints, dialects, strict=True):
            endpoint.dialect = dialect
    for endpoint in pool.endpoints:
        asked = endpoint.options(options)
        if asked.dialect == AUTO:
            said = functools.partial(_note, notes, endpoint.label)
            where = None if embedded else endpoint.url
            endpoint.dialect = (await with_dialect(where, asked, said)).dialect


def _note(notes: list[str], label: str, line: str) -> None:
    notes.append(f"endpoint {label}: {line}")
