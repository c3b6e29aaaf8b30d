"""docs/protocol.md's upstream conformance appendix is checked against the schema, row by row.

Each row of the appendix's tables says whether an upstream event, field, value or error code
is `implemented` (and where), `not applicable` or `missing` (both with a reason). These tests
parse the tables and hold every row to the code in `duplex_client.protocol`: an implemented
row must resolve, a missing row with a location must not, so the table cannot drift.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import json
import pkgutil
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import duplex_client.protocol as protocol_pkg
from duplex_client.protocol.client_events import CLIENT_EVENT_NAMES
from duplex_client.protocol.errors import ERROR_TYPES, ErrorCode
from duplex_client.protocol.events import SERVER_EVENT_TYPES, parse_server_event
from duplex_client.protocol.fields import SchemaError
from duplex_client.protocol.schema import Record, specs
from duplex_client.server.errors import error_class
from tests.support.upstream_wheel import MISSING, vllm_omni_src

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
APPENDIX = "## Appendix: upstream conformance"
STATUSES = ("implemented", "not applicable", "missing")
#: Dataclass attributes that are not wire fields.
NOT_WIRE = frozenset({"raw", "extras"})


@dataclass(frozen=True)
class Row:
    """One table row: its section, the cells by header, and the line it came from."""

    section: str
    cells: dict[str, str]
    line: int

    def cell(self, header: str) -> str:
        """The raw text of one cell."""
        return self.cells[header]

    @property
    def status(self) -> str:
        """The status cell."""
        return self.cells["Status"].strip()

    @property
    def note(self) -> str:
        """The note cell (the reason, for rows that are not implemented)."""
        return self.cells.get("Note", "").strip()

    @property
    def ours(self) -> str | None:
        """The first backticked name of the **Ours** cell, None for `—`."""
        names = ticks(self.cells["Ours"])
        return names[0] if names else None


def ticks(text: str) -> list[str]:
    """Every backticked span of a cell, in order."""
    return re.findall(r"`([^`]+)`", text)


def _split(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def parse_appendix(text: str) -> dict[str, list[Row]]:
    """The appendix's tables: section heading → rows (header cells as keys)."""
    start = text.index(APPENDIX)
    lines = text[start:].splitlines()
    first = text[:start].count("\n") + 1
    tables: dict[str, list[Row]] = {}
    section, header = "", None
    for offset, line in enumerate(lines):
        if line.startswith("### "):
            section, header = line[4:].strip(), None
            continue
        if not line.startswith("|"):
            header = None
            continue
        cells = _split(line)
        if header is None:
            header = cells
        elif set(line) <= set("|-: "):
            continue
        else:
            assert len(cells) == len(header), f"line {first + offset}: {len(cells)} cells"
            row = Row(section, dict(zip(header, cells, strict=True)), first + offset)
            tables.setdefault(section, []).append(row)
    return tables


TABLES = parse_appendix(DOC.read_text(encoding="utf-8"))


def section(prefix: str) -> list[Row]:
    """The rows of the section whose heading starts with `prefix` (e.g. `A.4`)."""
    found = [rows for name, rows in TABLES.items() if name.startswith(prefix)]
    assert len(found) == 1, f"no single section {prefix}"
    return found[0]


def _row_id(row: Row) -> str:
    first, second = (c.replace("`", "") for c in list(row.cells.values())[:2])
    return f"L{row.line}:{first}:{second}"


def rows_of(prefix: str) -> pytest.MarkDecorator:
    """Pytest parameters for one section's rows, each named after its line and names."""
    return pytest.mark.parametrize("row", section(prefix), ids=_row_id)


# --- the schema's classes and a wire-key resolver over them ---


def _protocol_classes() -> dict[str, type | None]:
    """Every class defined in `duplex_client.protocol` by name (None when ambiguous)."""
    found: dict[str, type | None] = {}
    for info in pkgutil.iter_modules(protocol_pkg.__path__):
        module = importlib.import_module(f"{protocol_pkg.__name__}.{info.name}")
        for name, obj in vars(module).items():
            if inspect.isclass(obj) and obj.__module__ == module.__name__:
                known = found.get(name, obj)
                found[name] = obj if known is obj else None
    return found


CLASSES = _protocol_classes()


def _class(name: str) -> type:
    cls = CLASSES.get(name)
    assert cls is not None, f"{name} is not a (unique) class of duplex_client.protocol"
    return cls


def _inner_class(hint: Any) -> type | None:
    """The dataclass a field's hint holds (through Optional, Annotated, list, tuple)."""
    while typing.get_origin(hint) is typing.Annotated:
        hint = typing.get_args(hint)[0]
    if typing.get_origin(hint) is None:
        return hint if inspect.isclass(hint) and dataclasses.is_dataclass(hint) else None
    for arg in typing.get_args(hint):
        if inspect.isclass(arg) and dataclasses.is_dataclass(arg):
            return arg
    return None


def wire_fields(cls: type) -> dict[str, type | None]:
    """A class's wire keys (aliases included) → the class describing the key's value."""
    out: dict[str, type | None] = {}
    if issubclass(cls, Record):
        for s in specs(cls):
            nested = s.record if s.record is not None else s.rule.schema
            for key in s.keys:
                out[key] = nested
    if dataclasses.is_dataclass(cls):
        hints = typing.get_type_hints(cls, include_extras=True)
        for f in dataclasses.fields(cls):
            skipped = f.name in getattr(cls, "SKIP", frozenset())
            plain = not issubclass(cls, Record)
            if f.name not in NOT_WIRE and (skipped or plain) and f.name not in out:
                out[f.name] = _inner_class(hints.get(f.name))
    return out


def resolve(path: str) -> str | None:
    """None when `Class.key.key…` names a wire field of the schema, else why it does not."""
    head, *keys = path.split(".")
    cls: type | None = CLASSES.get(head)
    if cls is None:
        return f"{head} is not a (unique) class of duplex_client.protocol"
    walked = head
    for key in keys:
        if cls is None:
            return f"{walked} is an untyped object (no record describes {key!r})"
        fields = wire_fields(cls)
        if key not in fields:
            return f"{cls.__name__} has no wire field {key!r}"
        cls, walked = fields[key], f"{walked}.{key}"
    return None


def test_resolver_follows_records_and_stops_at_untyped_objects() -> None:
    """The lookups themselves: nested records, schemas, aliases, envelopes, plain dataclasses."""
    assert resolve("SessionObject.audio.input.format.rate") is None
    assert resolve("SessionRequest.extra_body.minicpmo45_native_duplex") is None
    assert resolve("InputAudioBufferAppend.delta") is None
    assert resolve("ServerEvent.server_event_seq") is None
    assert resolve("Item.content.transcript") is None
    assert resolve("Capabilities.supports_barge_in") is None
    assert resolve("ErrorEvent.error.param") is None
    assert "no wire field" in (resolve("SessionObject.no_such_field") or "")
    assert "untyped" in (resolve("ResponseDone.metadata.epoch") or "")
    assert "not a (unique) class" in (resolve("NoSuchClass.field") or "")
    assert resolve("ServerEvent.raw") is not None
    assert resolve("SessionObject.extras") is not None


def test_parser_reads_rows_with_their_lines() -> None:
    """Rows keep their cells and the doc line they came from."""
    rows = section("A.1")
    first = rows[0]
    assert ticks(first.cell("Upstream name")) == ["session.update"]
    line = DOC.read_text(encoding="utf-8").splitlines()[first.line - 1]
    assert "`session.update`" in line and "`SessionUpdate`" in line


def test_the_appendix_has_every_table() -> None:
    """Each section is present and non-empty, and every status is one of the three."""
    for prefix in ("A.1", "A.2", "A.3", "A.4", "A.5", "A.6"):
        rows = section(prefix)
        assert rows, prefix
        for row in rows:
            assert row.status in STATUSES, f"line {row.line}: status {row.status!r}"


def test_rows_not_implemented_give_a_reason() -> None:
    """`not applicable` and `missing` rows carry a non-empty reason."""
    for rows in TABLES.values():
        for row in rows:
            if row.status != "implemented":
                assert row.note, f"line {row.line}: {row.status} without a reason"


def test_upstream_names_are_listed_once() -> None:
    """No upstream name appears twice in one table."""
    for name, rows in TABLES.items():
        seen: set[tuple[str, ...]] = set()
        for row in rows:
            cells = list(row.cells.values())
            key = (cells[0], cells[1]) if name.startswith(("A.4", "A.5")) else (cells[0],)
            assert key not in seen, f"line {row.line}: {key} listed twice"
            seen.add(key)


# --- A.1 / A.2: client events ---


@rows_of("A.1")
def test_client_event_row(row: Row) -> None:
    """An implemented client event is accepted under that name, as the named class."""
    (name,) = ticks(row.cell("Upstream name"))
    registered = CLIENT_EVENT_NAMES.get(name)
    if row.status == "implemented":
        assert registered is not None, f"{name} is not a registered client event"
        assert registered.__name__ == row.ours, f"{name} decodes as {registered.__name__}"
        alias_of = ticks(row.cell("Alias of"))
        if alias_of:
            assert alias_of[0] == registered.TYPE, f"{name} is an alias of {registered.TYPE}"
    elif row.status == "missing":
        assert registered is None, f"{name} is accepted (as {registered}); mark it implemented"


@rows_of("A.2")
def test_refused_client_name_row(row: Row) -> None:
    """A name upstream refuses is not accepted by our schema either."""
    (name,) = ticks(row.cell("Upstream name"))
    if row.status == "implemented":
        assert name not in CLIENT_EVENT_NAMES, f"{name} is still accepted"


# --- A.3: server events ---


@rows_of("A.3")
def test_server_event_row(row: Row) -> None:
    """An implemented server event is a registered type (GA or beta) of the named class."""
    (name,) = ticks(row.cell("Upstream name"))
    if "<type>" in name:  # a family of names (`duplex.<type>`): any member reads as the class
        event = parse_server_event({"type": name.replace("<type>", "some.internal_type")})
        assert type(event).__name__ == row.ours, f"{name} reads as {type(event).__name__}"
        return
    registered = SERVER_EVENT_TYPES.get(name)
    if row.status == "implemented":
        assert registered is not None, f"{name} is not a registered server event"
        assert registered.__name__ == row.ours, f"{name} decodes as {registered.__name__}"
    elif row.status == "missing":
        assert registered is None, f"{name} is registered (as {registered}); mark it implemented"


# --- A.4: fields ---


def _field_paths(row: Row) -> list[str]:
    names = ticks(row.cell("Field"))
    assert names, f"line {row.line}: no field named"
    ours = row.ours
    if ours is None:
        assert row.status != "implemented", f"line {row.line}: implemented but no location"
        return []
    if "." not in ours:
        return [f"{ours}.{name}" for name in names]
    assert len(names) == 1, f"line {row.line}: a full path names one field"
    return [ours]


@rows_of("A.4")
def test_field_row(row: Row) -> None:
    """An implemented field resolves through the named class; a missing one does not."""
    for path in _field_paths(row):
        problem = resolve(path)
        if row.status == "implemented":
            assert problem is None, f"{path}: {problem}"
        elif row.status == "missing":
            assert problem is not None, f"{path} resolves; mark the row implemented"


# --- A.5: values ---


def _nested(path: list[str], value: Any) -> dict[str, Any]:
    obj: Any = value
    for key in reversed(path):
        obj = {key: obj}
    assert isinstance(obj, dict)
    return obj


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


@rows_of("A.5")
def test_value_row(row: Row) -> None:
    """An implemented value passes a strict decode of the named field; a missing one fails."""
    if row.ours is None:
        assert row.status != "implemented", f"line {row.line}: implemented but no location"
        return
    head, *keys = row.ours.split(".")
    cls = _class(head)
    assert issubclass(cls, Record) and keys, f"{row.ours} is not a record field"
    assert resolve(row.ours) is None, f"{row.ours}: {resolve(row.ours)}"
    (text,) = ticks(row.cell("Value"))
    raw = _nested(keys, _value(text))
    if row.status == "implemented":
        cls.decode(raw)
    elif row.status == "missing":
        with pytest.raises(SchemaError):
            cls.decode(raw)


# --- A.6: error codes ---


def _error_codes() -> dict[str, str]:
    return {v: k for k, v in vars(ErrorCode).items() if k.isupper() and isinstance(v, str)}


@rows_of("A.6")
def test_error_code_row(row: Row) -> None:
    """An implemented code is an `ErrorCode` with upstream's `error.type`; a missing one is not."""
    codes = ticks(row.cell("Code"))
    ours = _error_codes()
    upstream_type = row.cell("Upstream type").strip()
    for code in codes:
        if row.status == "implemented":
            assert len(codes) == 1, f"line {row.line}: one code per implemented row"
            assert code in ours, f"{code} is not an ErrorCode"
            assert row.ours == f"ErrorCode.{ours[code]}", f"{code} is ErrorCode.{ours[code]}"
            if upstream_type in ERROR_TYPES:
                assert error_class(code) == upstream_type, f"{code}: ours {error_class(code)}"
        elif row.status == "missing":
            assert code not in ours, f"{code} is ErrorCode.{ours[code]}; mark it implemented"


# --- evidence: every row cites vLLM-Omni 0.30.0 or says it is not there ---

EVIDENCE = "Evidence (vLLM-Omni 0.30.0)"
#: The unzipped `vllm-omni` 0.30.0 wheel (the folder holding `vllm_omni/`), when available.
VLLM_OMNI_SRC = vllm_omni_src()


def _candidates(row: Row) -> set[str]:
    """The strings a row's upstream names may appear as in upstream's source."""
    out: set[str] = set()
    for cell in list(row.cells.values())[:2]:
        for name in ticks(cell):
            out |= {name, name.split(".")[-1], name.removeprefix("duplex.")}
            value = _value(name)
            if isinstance(value, dict):
                out |= {str(v) for v in value.values()} | set(value)
            elif isinstance(value, list):
                out |= {str(v) for v in value}
    return {c for c in out if c and "<" not in c} | (
        {"duplex."} if any("<type>" in c for c in out) else set()
    )


def test_every_row_cites_its_evidence() -> None:
    """A 0.30.0 path, or `not in 0.30.0` with where the row comes from instead."""
    for rows in TABLES.values():
        for row in rows:
            cell = row.cells.get(EVIDENCE, "").strip()
            cited = ticks(cell)
            assert cell.startswith("not in 0.30.0") or (
                cited and cited[0].startswith("vllm_omni/")
            ), f"line {row.line}: evidence {cell!r}"


@pytest.mark.skipif(
    VLLM_OMNI_SRC is None,
    reason=MISSING,
)
def test_cited_files_hold_the_names() -> None:
    """Each cited 0.30.0 file exists and names the row's event, field, value or code."""
    assert VLLM_OMNI_SRC is not None
    root = VLLM_OMNI_SRC
    for rows in TABLES.values():
        for row in rows:
            cell = row.cells[EVIDENCE].strip()
            if cell.startswith("not in 0.30.0"):
                continue
            text = (root / ticks(cell)[0]).read_text(encoding="utf-8")
            names = _candidates(row)
            assert any(n in text for n in names), f"line {row.line}: none of {names} there"
