"""Manifest rows (JSONL or CSV) as `EvalItem`s; a row that cannot run becomes a failed item.

A column one edit away from a known one (`tail_silence` for `tail_silence_s`, `input_vidoe`,
`ID`) refuses the whole manifest, naming both: kept as an extra column it would silently run
without the option it meant. Other unknown columns are carried to the summary as they are.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from duplex_client.eval.item import KNOWN_COLUMNS, EvalItem, ItemSetError, id_problem

_JSON_TYPES = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def _norm(name: str) -> str:
    return name.strip().lower().replace("-", "_").replace(" ", "_")


def _one_edit(a: str, b: str) -> bool:
    """One character inserted, dropped, replaced, or two neighbours swapped (a != b)."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) == len(b):
        diff = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
        if len(diff) == 1:
            return True
        i = diff[0]
        return len(diff) == 2 and diff[1] == i + 1 and (a[i], a[i + 1]) == (b[i + 1], b[i])
    short, long = (a, b) if len(a) < len(b) else (b, a)
    return any(long[:i] + long[i + 1 :] == short for i in range(len(long)))


def _one_part(a: str, b: str) -> bool:
    """One `_`-separated part of at most two letters (a unit: `s`, `ms`) added or dropped
    (`input_audio_2` is a column of its own)."""
    pa, pb = a.split("_"), b.split("_")
    if abs(len(pa) - len(pb)) != 1:
        return False
    short, long = (pa, pb) if len(pa) < len(pb) else (pb, pa)
    return any(
        len(long[i]) <= 2 and long[i].isalpha() and long[:i] + long[i + 1 :] == short
        for i in range(len(long))
    )


def known_column_like(name: str) -> list[str]:
    """The known columns `name` is one edit away from (a typo of one), if it is none of them.

    Case, `-` and spaces aside; a one-letter edit counts against names of 4 letters or more
    (`idx` is no typo of `id`).
    """
    if name in KNOWN_COLUMNS:
        return []
    norm = _norm(name)
    return [
        known
        for known in KNOWN_COLUMNS
        if norm == known or (len(known) >= 4 and _one_edit(norm, known)) or _one_part(norm, known)
    ]


def _check_columns(names: Iterator[str] | list[str], where: str) -> None:
    """Refuse a column that looks like a known one misspelt (`ItemSetError` naming both)."""
    for name in names:
        near = known_column_like(name)
        if near:
            meant = " or ".join(repr(k) for k in near)
            raise ItemSetError(
                f"{where}: column {name!r} is one edit away from {meant}: rename it (a column "
                "the eval does not know is kept as an extra summary column, so this one would "
                "run without the option it meant)",
                keywords=(),
            )


class _RowError(Exception):
    """Why one row cannot run (its text is the item's error, after the row's place)."""


def read_manifest(path: Path) -> list[tuple[int, EvalItem]]:
    """(line number, item) of every row of a `.jsonl` or `.csv` manifest, in file order."""
    base = os.path.dirname(os.path.abspath(path))
    is_csv = path.suffix.lower() == ".csv"
    text = _read_text(path)
    rows = _csv_rows(path, text) if is_csv else _jsonl_rows(text)
    items: list[tuple[int, EvalItem]] = []
    for line, row in rows:
        where = f"{path.name} line {line}"
        fallback = f"{path.name}:{line}"
        if not is_csv and isinstance(row, dict):  # a CSV's header was checked once
            _check_columns(list(row), f"{path} line {line}")
        if isinstance(row, _RowError):
            items.append((line, EvalItem(id=fallback, error=f"{where}: {row}")))
        else:
            items.append((line, _row_item(row, base, where, fallback, is_csv=is_csv)))
    return items


def _read_text(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ItemSetError(f"{path}: {exc.strerror}", keywords=()) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ItemSetError(f"{path} line {line}: not UTF-8 text", keywords=()) from None


def _jsonl_rows(text: str) -> Iterator[tuple[int, dict[str, Any] | _RowError]]:
    # Split on newlines only: str.splitlines() would also cut at U+2028 inside a JSON string.
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip("\r")
        if not line.strip():
            continue
        try:
            value = json.loads(line, object_pairs_hook=_unique_keys)
        except _RowError as exc:
            yield number, exc
            continue
        except ValueError as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            yield number, _RowError(f"not valid JSON ({reason})")
            continue
        if not isinstance(value, dict):
            yield number, _RowError(f"not a JSON object (got {_JSON_TYPES.get(type(value))})")
            continue
        yield number, value


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _RowError(f"key {key!r} given twice")
        result[key] = value
    return result


def _csv_rows(path: Path, text: str) -> Iterator[tuple[int, dict[str, Any] | _RowError]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    header: list[str] | None = None
    while True:
        start = reader.line_num + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise ItemSetError(f"{path} line {reader.line_num}: {exc}", keywords=()) from None
        if not any(cells):
            continue  # a blank line, or a spreadsheet's row of empty cells
        if header is None:
            header = _csv_header(path, cells)
            continue
        if len(cells) > len(header):
            yield start, _RowError(f"{len(cells)} cells, the header has {len(header)}")
            continue
        row: dict[str, Any] = {}
        for column, (name, cell) in enumerate(zip(header, cells, strict=False), start=1):
            if cell == "":
                continue
            if name == "":
                yield start, _RowError(f"a value in column {column}, which has no name")
                break
            row[name] = cell
        else:
            yield start, row


def _csv_header(path: Path, cells: list[str]) -> list[str]:
    names = [cell.strip() for cell in cells]
    seen: set[str] = set()
    for name in names:
        if name and name in seen:
            raise ItemSetError(f"{path}: column {name!r} given twice", keywords=())
        seen.add(name)
    _check_columns([n for n in names if n], str(path))
    if "id" not in seen:
        raise ItemSetError(f"{path}: the header has no id column", keywords=())
    return names


def _row_item(
    row: dict[str, Any], base: str, where: str, fallback: str, *, is_csv: bool
) -> EvalItem:
    extra = {key: value for key, value in row.items() if key not in KNOWN_COLUMNS}
    item_id = fallback
    try:
        item_id = _row_id(row)
        fields = _row_fields(row, base, is_csv=is_csv)
    except _RowError as exc:
        return EvalItem(id=item_id, extra=extra, error=f"{where}: {exc}")
    return EvalItem(id=item_id, extra=extra, **fields)


def _value(row: dict[str, Any], key: str) -> Any:
    """A known column's value; None (JSON null) and "" count as absent."""
    value = row.get(key)
    return None if value == "" else value


def _row_id(row: dict[str, Any]) -> str:
    value = _value(row, "id")
    if value is None:
        raise _RowError("no id")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        raise _RowError(f"id must be a string, got {_JSON_TYPES.get(type(value), 'an object')}")
    problem = id_problem(value)
    if problem is not None:
        raise _RowError(problem)
    return value


def _row_fields(row: dict[str, Any], base: str, *, is_csv: bool) -> dict[str, Any]:
    video = _value(row, "input_video")
    audio = _value(row, "input_audio")
    image = _value(row, "input_image")
    if video is None and audio is None:
        raise _RowError("no input_video or input_audio")
    if video is not None and audio is not None:
        raise _RowError("give one of input_video and input_audio, not both")
    if video is not None and image is not None:
        raise _RowError("input_image goes with input_audio, not input_video")
    fields: dict[str, Any] = {}
    for key in ("input_video", "input_audio", "input_image"):
        if _value(row, key) is not None:
            fields[key] = _existing_file(row[key], key, base)
    tail = _value(row, "tail_silence_s")
    if tail is not None:
        fields["tail_silence_s"] = _tail_silence(tail, is_csv=is_csv)
    annotations = _value(row, "annotations")
    if annotations is not None:
        fields["annotations"] = _annotations(annotations, base, is_csv=is_csv)
    for key in ("instructions", "expected"):
        text = _value(row, key)
        if text is not None and not isinstance(text, str):
            raise _RowError(
                f"{key} must be a string, got {_JSON_TYPES.get(type(text), 'an object')}"
            )
        fields[key] = text
    return fields


def _existing_file(value: Any, key: str, base: str) -> str:
    if not isinstance(value, str):
        raise _RowError(f"{key} must be a path, got {_JSON_TYPES.get(type(value), 'an object')}")
    full = os.path.abspath(os.path.join(base, value))
    if not os.path.exists(full):
        raise _RowError(f"{key} {_shown(value)}: no such file")
    if not os.path.isfile(full):
        raise _RowError(f"{key} {_shown(value)}: not a file")
    return full


def _tail_silence(value: Any, *, is_csv: bool) -> float:
    number: float | None = None
    if is_csv and isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    elif isinstance(value, int | float) and not isinstance(value, bool):
        number = float(value)
    if number is None or not math.isfinite(number) or number < 0:
        shown = _shown(value) if isinstance(value, str) else json.dumps(value)
        raise _RowError(f"tail_silence_s must be a number >= 0, got {shown}")
    return number


def _annotations(value: Any, base: str, *, is_csv: bool) -> str | list[dict[str, Any]]:
    if is_csv and isinstance(value, str) and value.lstrip().startswith("["):
        try:
            value = json.loads(value)
        except ValueError as exc:
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise _RowError(f"annotations is not valid JSON ({reason})") from None
    elif isinstance(value, str):
        return _existing_file(value, "annotations", base)
    if not isinstance(value, list) or not all(isinstance(segment, dict) for segment in value):
        raise _RowError("annotations must be a file path or a list of segment objects")
    return value


def _shown(text: str) -> str:
    """User text in a one-line message: as is when printable, else quoted with escapes."""
    return text if text.isprintable() else repr(text)
