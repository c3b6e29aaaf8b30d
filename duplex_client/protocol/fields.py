"""Wire fields: the `Rule` of one field, its compiled `Spec`, and the checks of strict decoding.

A record's type hints say what each field holds (`str`, `int`, `float`, `bool`, `dict`,
`list[...]`/`tuple[..., ...]`, a nested record, `Any`, optionally `| None`);
`Annotated[..., Rule(...)]` adds the wire key, aliases, ranges, choices, a custom check, the
error code and whether an encoder leaves the field out.
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, Field, dataclass, fields
from functools import partial
from typing import Annotated, Any, Final

#: The default error code of a schema violation (protocol.md §7).
BAD_EVENT: Final = "bad_event"


class SchemaError(ValueError):
    """A wire object breaks the schema: `param` names the field, `code` the error code."""

    def __init__(self, code: str, message: str, param: str | None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.param = param


@dataclass(frozen=True, slots=True)
class Rule:
    """How one field reads and writes on the wire, beyond its type hint.

    `key`/`aliases`: the wire key and further keys read (the first non-null wins). `omit`:
    left out while None or at an empty default (`omit_lifted`: also while it equals what it
    lifts). `lift=(field, key)`: an empty value is taken from that nested object.
    `ge`/`gt`/`le`, `choices` (of the items, for a list), `non_empty`, `check` (a message or
    None), `schema` (a dict validated as that record, kept as the dict): strict checks.
    `code`/`param`: the error code and param reported for this field (and inside it).
    `absent` (with `absent_set`): what a strict decode gives an absent field, if not its default.
    """

    key: str | None = None
    aliases: tuple[str, ...] = ()
    omit: bool = False
    lift: tuple[str, str] | None = None
    omit_lifted: bool = False
    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    choices: tuple[Any, ...] | None = None
    non_empty: bool = False
    check: Callable[[Any], str | None] | None = None
    schema: Any = None
    code: str | None = None
    param: str | None = None
    absent: Any = None
    absent_set: bool = False


#: Left out of the encoded object while None or at an empty default.
OMIT: Final = Rule(omit=True)

ANY, STR, INT, NUM, BOOL, OBJ, LIST, REC = range(8)
KIND_NAMES: Final = {
    STR: "a string",
    INT: "an integer",
    NUM: "a number",
    BOOL: "a boolean",
    OBJ: "an object",
    LIST: "a list",
    REC: "an object",
}
#: An absent field (distinct from a null).
ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()


@dataclass(frozen=True, slots=True)
class Spec:
    """One compiled field: where it sits on the wire and what it accepts."""

    name: str
    key: str
    keys: tuple[str, ...]
    kind: int
    item: int
    record: Any
    as_tuple: bool
    nullable: bool
    default: Any
    rule: Rule

    @property
    def required(self) -> bool:
        """Whether the field has no default (a strict decode needs it)."""
        return self.default is ABSENT

    @property
    def plain(self) -> bool:
        """Whether a strict decode checks nothing beyond the JSON type."""
        r = self.rule
        return (
            self.kind not in (LIST, REC)
            and not (r.choices or r.non_empty or r.check or r.schema)
            and (r.ge, r.gt, r.le) == (None, None, None)
        )


def is_record(hint: Any) -> bool:
    """Whether a hint names a record class (it has the schema's methods)."""
    return isinstance(hint, type) and hasattr(hint, "decode") and hasattr(hint, "from_raw")


def _kind(hint: Any) -> tuple[int, Any]:
    if is_record(hint):
        return REC, hint
    origin = typing.get_origin(hint) or hint
    if origin is tuple:
        return LIST, None
    found = {str: STR, bool: BOOL, int: INT, float: NUM, dict: OBJ, list: LIST}
    return found.get(origin, ANY), None


_HINTS: dict[tuple[str, str], Any] = {}


def _hints(cls: type, names: set[str]) -> dict[str, Any]:
    """The evaluated hints of these attributes (as `typing.get_type_hints` with extras).

    Each annotation string is evaluated once per module and reused by every class that
    repeats it, which makes compiling all wire classes at import cheap.
    """
    out: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        annotations = inspect.get_annotations(base)
        module = sys.modules[base.__module__]
        for name, value in annotations.items():
            if name not in names:
                continue
            if isinstance(value, str):
                key = (base.__module__, value)
                if key not in _HINTS:
                    _HINTS[key] = eval(value, vars(module))  # our own annotations
                value = _HINTS[key]
            out[name] = value
    return out


def compile_specs(cls: type) -> tuple[Spec, ...]:
    """The wire fields of a dataclass, in declaration order (`SKIP` names excluded)."""
    skip: frozenset[str] = getattr(cls, "SKIP", frozenset())
    wire = [f for f in fields(cls) if f.init and f.name not in skip]
    hints = _hints(cls, {f.name for f in wire})
    return tuple(_spec(f, hints[f.name]) for f in wire)


def _spec(f: Field[Any], annotation: Any) -> Spec:
    """One field's spec from its annotation (`Annotated` rule, optional, list item)."""
    hint, rule = annotation, Rule()
    if typing.get_origin(hint) is Annotated:
        hint, *meta = typing.get_args(hint)
        rule = next((m for m in meta if isinstance(m, Rule)), rule)
    nullable = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        nullable = len(args) < len(typing.get_args(hint))
        hint = args[0] if len(args) == 1 else Any
    kind, record = _kind(hint)
    item = ANY
    if kind == LIST:
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        item, record = _kind(args[0]) if args else (ANY, None)
    key = rule.key or f.name
    return Spec(
        name=f.name,
        key=key,
        keys=(key, *rule.aliases),
        kind=kind,
        item=item,
        record=record,
        as_tuple=(typing.get_origin(hint) or hint) is tuple,
        nullable=nullable,
        default=_default(f),
        rule=rule,
    )


def _default(f: Field[Any]) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return ABSENT


def fits(kind: int, value: Any) -> bool:
    """Whether a non-null value has the JSON type of `kind` (a bool is never a number)."""
    if kind == STR:
        return isinstance(value, str)
    if kind == INT:
        return isinstance(value, int) and value.__class__ is not bool
    if kind == NUM:
        return isinstance(value, int | float) and value.__class__ is not bool
    if kind == BOOL:
        return value is True or value is False
    if kind in (OBJ, REC):
        return isinstance(value, dict)
    if kind == LIST:
        return isinstance(value, list | tuple)
    return True


def pick(raw: dict[str, Any], keys: tuple[str, ...]) -> Any:
    """The first non-null value among a field's keys (null if only nulls, else `ABSENT`)."""
    found: Any = ABSENT
    for key in keys:
        value = raw.get(key, ABSENT)
        if value is None:
            found = None
        elif value is not ABSENT:
            return value
    return found


def error(code: str, s: Spec, path: str, message: str) -> SchemaError:
    """The error for field `s` under `path` (the rule's code and param win)."""
    return SchemaError(s.rule.code or code, message, s.rule.param or f"{path}{s.key}")


def strict_value(code: str, s: Spec, value: Any, path: str) -> Any:
    """Check one present, non-null value of field `s`; returns what the constructor gets."""
    rule, name = s.rule, f"{path}{s.key}"
    if not fits(s.kind, value):
        raise error(code, s, path, f"{name} must be {KIND_NAMES[s.kind]}")
    if s.kind == REC:
        return _nested(s, partial(s.record.decode, value, f"{name}."))
    if s.kind == LIST:
        value = _items(code, s, value, path)
    elif s.kind in (INT, NUM):
        _range(code, s, value, path)
    if rule.choices is not None and s.kind != LIST and value not in rule.choices:
        raise error(code, s, path, f"{name} must be one of {', '.join(map(str, rule.choices))}")
    if rule.non_empty and not value:
        raise error(code, s, path, f"{name} must not be empty")
    if rule.schema is not None:
        _nested(s, partial(rule.schema.decode, value, f"{name}."))
    if rule.check is not None:
        problem = rule.check(value)
        if problem is not None:
            raise error(code, s, path, problem)
    return value


def _items(code: str, s: Spec, value: Any, path: str) -> Any:
    name, choices = f"{path}{s.key}", s.rule.choices
    items = []
    for i, item in enumerate(value):
        if item is None or not fits(s.item, item):
            raise error(code, s, path, f"{name}[{i}] must be {KIND_NAMES.get(s.item, 'set')}")
        if s.record is not None:
            item = _nested(s, partial(s.record.decode, item, f"{name}[{i}]."))
        elif choices is not None and item not in choices:
            raise error(code, s, path, f"{name}[{i}] must be one of {', '.join(choices)}")
        items.append(item)
    return tuple(items) if s.as_tuple else items


def _range(code: str, s: Spec, value: float, path: str) -> None:
    rule, name, what = s.rule, f"{path}{s.key}", KIND_NAMES[s.kind]
    if rule.ge is not None and value < rule.ge:
        raise error(code, s, path, f"{name} must be {what} >= {rule.ge:g}")
    if rule.gt is not None and value <= rule.gt:
        raise error(code, s, path, f"{name} must be {what} > {rule.gt:g}")
    if rule.le is not None and value > rule.le:
        raise error(code, s, path, f"{name} must be {what} <= {rule.le:g}")


def _nested(s: Spec, run: Callable[[], Any]) -> Any:
    """Decode a nested object; the field's own `param` and `code`, if set, win over its inner."""
    try:
        return run()
    except SchemaError as exc:
        if s.rule.param is None and s.rule.code is None:
            raise
        raise SchemaError(s.rule.code or exc.code, exc.message, s.rule.param or exc.param) from None
