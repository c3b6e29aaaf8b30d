"""Every `§N` / `§N.M` cited in the docs and docstrings is a numbered heading of its document.

A reference names its document (`protocol.md §5`, `docs/protocol.md §10`, `protocol §2.1`, or
`live.md §2`, resolved against that file); a bare `§N` inside a document means that document,
and in code (`duplex_client/`) means docs/protocol.md. Markdown links to
`protocol.md#anchor` must hit a heading too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = ROOT / "docs" / "protocol.md"
DOCS = [
    ROOT / "README.md",
    ROOT / "benchmarks" / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
]
CODE = sorted((ROOT / "duplex_client").rglob("*.py"))

_NUM = r"§\d+(?:\.\d+)*"
#: An optional document name (also as a link target: `[docs/protocol.md](docs/protocol.md) §9`),
#: then one or more section numbers (`§2.1, §2.4`, `§3–§9`).
_REF = re.compile(
    rf"(?:(?P<doc>[\w./-]*\.md|\bprotocol)\)?\s+)?(?P<nums>{_NUM}(?:\s*(?:,|and|or|–|-)\s*{_NUM})*)"
)
_HEADING = re.compile(r"^#{1,6}\s+(?P<num>\d+(?:\.\d+)*)\.?\s", re.M)
_LINK = re.compile(r"\]\((?P<file>[\w./-]*?\.md)?#(?P<anchor>[^)\s]+)\)")


@dataclass(frozen=True)
class Ref:
    """One cited section: where it was written, the document it names, the number."""

    where: str
    doc: Path
    number: str


def headings(doc: Path) -> set[str]:
    """The section numbers of a document's numbered headings (`## 5.` / `### 9.6`)."""
    return {m["num"] for m in _HEADING.finditer(doc.read_text(encoding="utf-8"))}


def slugs(doc: Path) -> set[str]:
    """GitHub's anchors for a document's headings."""
    out = set()
    for line in doc.read_text(encoding="utf-8").splitlines():
        if m := re.match(r"^#{1,6}\s+(.*)$", line):
            text = re.sub(r"[^\w\- ]", "", m[1].strip().lower())
            out.add(text.replace(" ", "-"))
    return out


def resolve(name: str | None, here: Path, default: Path) -> Path:
    """The document a reference names (`protocol`, `protocol.md`, `docs/live.md`, ...)."""
    if name is None:
        return default
    if name == "protocol":
        return PROTOCOL
    for base in (here.parent, ROOT, ROOT / "docs"):
        if (base / name).is_file():
            return (base / name).resolve()
    return ROOT / name  # missing: reported by the check


def references(text: str, here: Path, default: Path) -> list[Ref]:
    """Every section cited in `text`, each resolved to its document."""
    refs = []
    for m in _REF.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        doc = resolve(m["doc"], here, default)
        for number in re.findall(r"§(\d+(?:\.\d+)*)", m["nums"]):
            refs.append(Ref(f"{here.relative_to(ROOT)}:{line}", doc, number))
    return refs


def missing(refs: list[Ref]) -> list[str]:
    """The references whose document has no such numbered heading."""
    cache: dict[Path, set[str]] = {}
    out = []
    for ref in refs:
        if ref.doc not in cache:
            cache[ref.doc] = headings(ref.doc) if ref.doc.is_file() else set()
        if ref.number not in cache[ref.doc]:
            out.append(f"{ref.where}: §{ref.number} is not a heading of {ref.doc.name}")
    return out


def test_the_protocol_has_numbered_sections() -> None:
    assert {"1", "2.1", "5", "6.1", "9.6", "10"} <= headings(PROTOCOL)


def test_the_check_resolves_each_reference_against_its_own_document(tmp_path: Path) -> None:
    doc = ROOT / "docs" / "metrics.md"
    text = (
        "protocol.md §5 and §6.1; live.md §2; docs/protocol.md §99; §2.1 (protocol §3.2, §12);"
        " see [the protocol](protocol.md) §9"
    )
    refs = references(text, doc, default=doc)
    assert [(r.doc.name, r.number) for r in refs] == [
        ("protocol.md", "5"), ("protocol.md", "6.1"), ("live.md", "2"), ("protocol.md", "99"),
        ("metrics.md", "2.1"), ("protocol.md", "3.2"), ("protocol.md", "12"), ("protocol.md", "9"),
    ]  # fmt: skip
    assert [b.split(": ", 1)[1] for b in missing(refs)] == [
        "§2 is not a heading of live.md",
        "§99 is not a heading of protocol.md",
        "§2.1 is not a heading of metrics.md",
        "§12 is not a heading of protocol.md",
    ]
    assert [r.number for r in references("(§3–§9)", doc, PROTOCOL)] == ["3", "9"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_section_a_document_cites_exists(doc: Path) -> None:
    assert missing(references(doc.read_text(encoding="utf-8"), doc, default=doc)) == []


def test_every_section_a_docstring_cites_exists() -> None:
    refs = [r for path in CODE for r in references(path.read_text("utf-8"), path, PROTOCOL)]
    assert refs, "the code cites the protocol"
    assert missing(refs) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_to_headings_hit_one(doc: Path) -> None:
    broken = []
    for m in _LINK.finditer(doc.read_text(encoding="utf-8")):
        target = resolve(m["file"], doc, doc) if m["file"] else doc
        if target.is_file() and m["anchor"] not in slugs(target):
            broken.append(f"{doc.name}: #{m['anchor']} is not a heading of {target.name}")
    assert broken == []
