"""`Record`: a wire dataclass whose one field spec drives encoding, strict and tolerant decoding.

- `to_dict()` encodes (fields in declaration order).
- `decode(raw)` is strict (what a server accepts): the first offending field raises
  `SchemaError` naming it (`param`, dotted for nested objects) with the record's error code.
  A field without a default is required; an absent nullable field reads as None, an absent
  other one takes its default; a null reads as None where the hint allows None, else as
  absent (or, with `NULL_IS_ABSENT = False`, as an error).
- `from_raw(raw)` is tolerant (what a client reads): absent or ill-typed fields take their
  defaults and nothing raises.

Each record class's spec (`fields.compile_specs`) is compiled once into three Python
functions, as `dataclasses` compiles `__init__`, so the hot events cost no interpretation.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar, Self

from duplex_client.protocol.fields import (
    ABSENT,
    ANY,
    BAD_EVENT,
    BOOL,
    INT,
    KIND_NAMES,
    LIST,
    NUM,
    OBJ,
    OMIT,
    REC,
    STR,
    Rule,
    SchemaError,
    Spec,
    compile_specs,
    error,
    fits,
    pick,
    strict_value,
)

__all__ = [
    "BAD_EVENT",
    "OMIT",
    "Record",
    "Rule",
    "SchemaError",
    "lift_fields",
    "prepare",
    "specs",
    "tolerant_fields",
]

_TYPE_TESTS = {
    STR: "not isinstance(v, str)",
    INT: "not isinstance(v, int) or v.__class__ is bool",
    NUM: "not isinstance(v, (int, float)) or v.__class__ is bool",
    BOOL: "v is not True and v is not False",
    OBJ: "not isinstance(v, dict)",
}


class Record:
    """Mixin of every wire dataclass: encoding and both decodings, from one field spec."""

    __slots__ = ()

    #: The error code of this record's violations (a field's `Rule.code` overrides it).
    CODE: ClassVar[str] = BAD_EVENT
    #: When set, unknown keys are refused with this code (otherwise they are ignored).
    EXTRA_CODE: ClassVar[str | None] = None
    #: Attributes of which at least one must be non-empty (checked once they are decoded).
    REQUIRE_ANY: ClassVar[tuple[str, ...]] = ()
    #: Whether a null reads as an absent field where the hint does not allow None.
    NULL_IS_ABSENT: ClassVar[bool] = True
    #: Attributes that are not wire fields of the body.
    SKIP: ClassVar[frozenset[str]] = frozenset()

    def __post_init__(self) -> None:
        lift_fields(self)

    def body(self, out: dict[str, Any] | None = None) -> dict[str, Any]:
        """The wire fields, added to `out` (a new dict by default) in declaration order."""
        return _code(type(self)).body(self, {} if out is None else out)

    def to_dict(self) -> dict[str, Any]:
        """The wire object."""
        return self.body()

    @classmethod
    def decode(cls, raw: dict[str, Any], path: str = "") -> Self:
        """Strict decode (raises `SchemaError` naming the first offending field)."""
        result: Self = _code(cls).strict(raw, path)
        return result

    @classmethod
    def from_raw(cls, raw: dict[str, Any]) -> Self:
        """Tolerant decode: absent or ill-typed fields take their defaults; never raises."""
        return cls(**tolerant_fields(cls, raw))


def specs(cls: type) -> tuple[Spec, ...]:
    """The wire fields of a record class, in declaration order."""
    return _code(cls).specs


def tolerant_fields(cls: type, raw: dict[str, Any]) -> dict[str, Any]:
    """The constructor arguments `from_raw` reads: well-typed present fields only."""
    return _code(cls).tolerant(raw)


def lift_fields(obj: Record) -> None:
    """Fill empty lifted fields from the nested object they repeat (`Rule.lift`)."""
    for s in _code(type(obj)).lifts:
        value = getattr(obj, s.name)
        if value is None or value == s.default:
            nested = _lifted(obj, s)
            if nested is not None and fits(s.kind, nested):
                setattr(obj, s.name, nested)


def _lifted(obj: Any, s: Spec) -> Any:
    assert s.rule.lift is not None
    source, key = s.rule.lift
    nested = getattr(obj, source)
    return nested.get(key) if isinstance(nested, dict) else None


def _convert(value: Any) -> Any:
    """Nested records become their wire objects and tuples lists; the rest is already JSON."""
    if isinstance(value, Record):
        return value.to_dict()
    if isinstance(value, list | tuple):
        return [v.to_dict() if isinstance(v, Record) else v for v in value]
    return value


def _tolerant_value(s: Spec, value: Any) -> Any:
    """A present, non-null value of a record or list field as `from_raw` keeps it, or ABSENT."""
    if s.kind == REC:
        try:
            return s.record.from_raw(value)
        except TypeError:  # a required field is missing: keep the default
            return ABSENT
    if s.record is not None:
        value = [s.record.from_raw(v) for v in value if isinstance(v, dict)]
    elif s.item != ANY:
        value = [v for v in value if v is not None and fits(s.item, v)]
    return tuple(value) if s.as_tuple else value


def _refuse_extra(cls: type[Record], raw: dict[str, Any], path: str, known: frozenset[str]) -> None:
    code = cls.EXTRA_CODE
    assert code is not None
    for key in raw:
        if key not in known:
            raise SchemaError(code, f"{path}{key} is not supported", f"{path}{key}")


class _Compiled:
    """The generated encoder and decoders of one record class, each built on first use."""

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.specs = compile_specs(cls)
        self.lifts = tuple(s for s in self.specs if s.rule.lift is not None)
        self.body: Callable[[Any, dict[str, Any]], dict[str, Any]] = self._lazy("body")
        self.strict: Callable[[dict[str, Any], str], Any] = self._lazy("strict")
        self.tolerant: Callable[[dict[str, Any]], dict[str, Any]] = self._lazy("tolerant")

    def _lazy(self, name: str) -> Callable[..., Any]:
        def first_call(*args: Any) -> Any:
            return self.build(name)(*args)

        return first_call

    def build(self, name: str) -> Callable[..., Any]:
        """Generate, compile and keep one of `body`, `strict` and `tolerant`."""
        ns: dict[str, Any] = {
            "cls": self.cls,
            "S": self.specs,
            "A": ABSENT,
            "E": error,
            "SV": strict_value,
            "P": pick,
            "C": _convert,
            "L": _lifted,
            "TV": _tolerant_value,
            "X": _refuse_extra,
            "K": frozenset(k for s in self.specs for k in s.keys),
        }
        if name == "body":
            lines = _body_source(self.specs)
        elif name == "strict":
            lines = _strict_source(self.cls, self.specs)
        else:
            lines = _tolerant_source(self.specs)
        where = f"<record {self.cls.__qualname__}.{name}>"
        exec(compile("\n".join(lines), where, "exec"), ns)
        setattr(self, name, ns[name])
        fn: Callable[..., Any] = ns[name]
        return fn


def _body_source(all_specs: tuple[Spec, ...]) -> list[str]:
    lines = ["def body(self, out):"]
    for i, s in enumerate(all_specs):
        value = "C(v)" if _converts(s) else "v"
        lines.append(f"    v = self.{s.name}")
        if s.rule.omit:
            skip = ["v is not None"]
            if not s.default:
                skip.append(f"v != S[{i}].default")
            if s.rule.omit_lifted:
                skip.append(f"v != L(self, S[{i}])")
            lines.append(f"    if {' and '.join(skip)}: out[{s.key!r}] = {value}")
        else:
            lines.append(f"    out[{s.key!r}] = {value}")
    lines.append("    return out")
    return lines


def _converts(s: Spec) -> bool:
    return s.record is not None or s.as_tuple


def _strict_source(cls: type[Record], all_specs: tuple[Spec, ...]) -> list[str]:
    code = repr(cls.CODE)
    lines = ["def strict(raw, path):"]
    if cls.EXTRA_CODE is not None:
        lines.append("    X(cls, raw, path, K)")
    lines.append("    kw = {}")
    group = set(cls.REQUIRE_ANY)
    for i, s in enumerate(all_specs):
        lines += _strict_field(cls, code, i, s)
        if group and s.name in group:
            group.discard(s.name)
            if not group:
                names = [x for x in all_specs if x.name in cls.REQUIRE_ANY]
                empty = " and ".join(f"not kw.get({x.name!r})" for x in names)
                keys = " or ".join(x.key for x in names)
                first = all_specs.index(names[0])
                lines.append(f"    if {empty}:")
                lines.append(
                    f"        raise E({code}, S[{first}], path, path + {keys!r} + ' is required')"
                )
    lines.append("    return cls(**kw)")
    return lines


def _strict_field(cls: type[Record], code: str, i: int, s: Spec) -> list[str]:
    """One field's lines of `strict`: read it, handle absent and null, check and keep it."""
    name, fail = repr(s.name), f"raise E({code}, S[{i}], path, path + {s.key!r} + "
    if s.plain:
        test = _TYPE_TESTS.get(s.kind)
        check = [f"        if {test}: {fail}' must be {KIND_NAMES[s.kind]}')"] if test else []
        keep = [*check, f"        kw[{name}] = v"]
    else:
        keep = [f"        kw[{name}] = SV({code}, S[{i}], v, path)"]
    if s.rule.absent_set:
        absent = [f"        kw[{name}] = S[{i}].rule.absent"]
    elif s.required:
        absent = [f"        {fail}' is required')"]
    elif s.nullable:
        absent = [f"        kw[{name}] = None"]
    else:
        absent = []
    if s.nullable or cls.NULL_IS_ABSENT:
        # null and absent read alike: one test
        get = f"raw.get({s.key!r})" if len(s.keys) == 1 else f"P(raw, S[{i}].keys)"
        lines = [f"    v = {get}"]
        if len(s.keys) > 1:
            lines.append("    if v is A: v = None")
        if not absent:
            return [*lines, "    if v is not None:", *keep]
        return [*lines, "    if v is None:", *absent, "    else:", *keep]
    get = f"raw.get({s.key!r}, A)" if len(s.keys) == 1 else f"P(raw, S[{i}].keys)"
    what = KIND_NAMES.get(s.kind, "set")
    lines = [f"    v = {get}", "    if v is None:", f"        {fail}' must be {what}')"]
    if absent:
        lines += ["    elif v is A:", *absent]
    return [*lines, "    elif v is not A:" if not absent else "    else:", *keep]


def _tolerant_source(all_specs: tuple[Spec, ...]) -> list[str]:
    lines = ["def tolerant(raw):", "    kw = {}"]
    for i, s in enumerate(all_specs):
        name = repr(s.name)
        if len(s.keys) == 1:
            lines.append(f"    v = raw.get({s.key!r})")
        else:
            lines.append(f"    v = P(raw, S[{i}].keys)")
            lines.append("    if v is A: v = None")
        if s.kind in (REC, LIST):
            test = "isinstance(v, dict)" if s.kind == REC else "isinstance(v, (list, tuple))"
            lines.append(f"    if {test}:")
            lines.append(f"        v = TV(S[{i}], v)")
            lines.append(f"        if v is not A: kw[{name}] = v")
        elif s.kind == ANY:
            lines.append(f"    if v is not None: kw[{name}] = v")
        else:
            lines.append(f"    if v is not None and not ({_TYPE_TESTS[s.kind]}): kw[{name}] = v")
    lines.append("    return kw")
    return lines


_CODE: dict[type, _Compiled] = {}


def prepare(classes: Iterable[type], *functions: str) -> None:
    """Compile these classes' `body`, `strict` and/or `tolerant` now, not on first use."""
    for cls in classes:
        code = _code(cls)
        for name in functions:
            code.build(name)


def _code(cls: type) -> _Compiled:
    found = _CODE.get(cls)
    if found is None:
        found = _CODE[cls] = _Compiled(cls)
    return found
