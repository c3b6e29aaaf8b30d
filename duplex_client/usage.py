"""`UsageError`: bad options or bad input, refused before anything is sent (exit code 2).

Messages name the Python keyword arguments (`chunk_ms must be positive, got 0`), as the
notebook API takes them. `param` is the keyword at fault and `keywords` every keyword the
message names, so a command line can show its flags instead: `render(flag_for)` replaces
each named keyword, as a whole word, with `flag_for(keyword)`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from duplex_client.protocol.errors import DuplexClientError


def default_flag(keyword: str) -> str:
    """The usual CLI flag of a keyword argument: `chunk_ms` → `--chunk-ms`."""
    return "--" + keyword.replace("_", "-")


class UsageError(DuplexClientError, ValueError):
    """Bad options or bad input files (exit code 2); nothing was sent or written.

    `param`: the keyword argument at fault (None when no single one is). `keywords`: the
    keyword arguments the message names, as plain words (default: `param`, if named).
    """

    def __init__(
        self, message: str, *, param: str | None = None, keywords: Iterable[str] | None = None
    ) -> None:
        self.message = " ".join(message.split())
        super().__init__(self.message)
        self.param = param
        if keywords is None:
            keywords = [param] if param is not None and _find(param, self.message) else []
        self.keywords: tuple[str, ...] = tuple(keywords)

    def render(self, flag_for: Callable[[str], str] = default_flag) -> str:
        """The message with each named keyword replaced by `flag_for(keyword)` (its flag).

        Only a keyword's first occurrence is replaced: messages name each keyword once, before
        any user text (a path, a URL) that might contain the same word.
        """
        text = self.message
        for keyword in sorted(self.keywords, key=len, reverse=True):
            text = _replace(text, keyword, flag_for(keyword))
        return text


def _pattern(keyword: str) -> re.Pattern[str]:
    """`keyword` as a whole word: not inside a longer name, a flag or a path."""
    return re.compile(rf"(?<![\w/.-]){re.escape(keyword)}(?![\w/-])(?!\.\w)")


def _replace(text: str, keyword: str, flag: str) -> str:
    return _pattern(keyword).sub(lambda _match: flag, text, count=1)


def _find(keyword: str, text: str) -> bool:
    return _pattern(keyword).search(text) is not None
