"""The README and docs name the families of `duplex_client.families`, and nothing else.

The README's families table is `markdown_table()` verbatim (regenerate it from there); the
prose lists that name presets, default models, profiles and commit-free presets must agree
with the table, so adding a family fails here until the docs say so.
"""

from __future__ import annotations

import re
from pathlib import Path

from duplex_client.families import (
    COMMIT_FREE,
    DEFAULT_FAMILY,
    FAMILIES,
    FAMILY_NAMES,
    LIVE_PRESET_CHOICES,
    PRESET_CHOICES,
    PROFILE_FAMILIES,
    auto_preset,
    markdown_table,
)

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def doc(name: str) -> str:
    """A document under docs/, its line breaks folded to spaces."""
    return " ".join((ROOT / "docs" / name).read_text(encoding="utf-8").split())


def names(text: str) -> list[str]:
    """The backquoted names of a `(`a`, `b`, ...)` list."""
    return re.findall(r"`([a-z0-9_-]+)`", text)


def one(pattern: str, text: str) -> re.Match[str]:
    """The one match of `pattern` (a clear failure when the sentence was reworded)."""
    found = list(re.finditer(pattern, text, re.S))
    assert len(found) == 1, f"expected one match of {pattern!r}, found {len(found)}"
    return found[0]


def test_the_readme_table_is_the_families_table() -> None:
    block = one(r"<!-- families: [^\n]*-->\n(.*?)\n<!-- /families -->", README)[1]
    assert block == markdown_table(), "regenerate it: duplex_client.families.markdown_table()"
    rows = [line.split(" | ") for line in block.splitlines()[2:]]
    assert [row[0].strip("|` ") for row in rows] == list(FAMILY_NAMES)
    models = [row[2].strip("`") for row in rows]
    assert models == [f.default_model or "none" for f in FAMILIES]


def test_the_readme_names_the_presets_and_their_default_models() -> None:
    flat = " ".join(README.split())
    assert (
        one(r"--preset ([a-z0-9|-]+)\|none`", flat)[0]
        == "--preset " + "|".join(PRESET_CHOICES) + "`"
    )
    sentence = one(r"the preset's model is sent \((.*?)\)\.", flat)[1]
    named = dict(re.findall(r"([\w-]+): `([^`]+)`", sentence))
    assert named == {f.name: f.default_model for f in FAMILIES if f.default_model}
    nameless = one(r"; ([\w, ]+) name none$", sentence)[1].replace(" and ", ", ").split(", ")
    assert nameless == [f.name for f in FAMILIES if f.default_model is None]


def test_the_readme_names_the_commit_free_presets_and_real_profiles() -> None:
    flat = " ".join(README.split())
    listed = one(r"`--preset ([a-z|]+)` follows those models", flat)[1].split("|")
    assert set(listed) == COMMIT_FREE and "they take no commits" in flat
    assert set(re.findall(r"duplex-cli serve --profile (\w+)", README)) <= set(PROFILE_FAMILIES)
    assert set(re.findall(r"duplex-cli live --preset (\w+)", README)) <= set(LIVE_PRESET_CHOICES)


def test_live_md_names_the_live_presets_and_the_auto_choice() -> None:
    text = doc("live.md")
    assert names(one(r"`--preset` (\(`auto`.*?\)) overrides", text)[1]) == list(LIVE_PRESET_CHOICES)
    auto = one(r"`auto` is the turn-based choice above \((.*?)\)", text)[1]
    assert auto == f"`{auto_preset('model')}` for `model` turns, `{auto_preset('vad')}` otherwise"


def test_eval_md_names_the_embedded_profiles() -> None:
    listed = names(one(r"Its profile follows `--preset` (\(.*?\))", doc("eval.md"))[1])
    others = [name for name in PROFILE_FAMILIES if name != DEFAULT_FAMILY]
    assert listed == [*others, DEFAULT_FAMILY]  # the last one after "else"


def test_protocol_md_describes_every_profile() -> None:
    text = (ROOT / "docs" / "protocol.md").read_text(encoding="utf-8")
    section = one(r"### 9\.2 Profiles\n(.*?)\n### 9\.3", text)[1]
    described = re.findall(r"^- \*\*([\w-]+)\*\*", section, re.M)
    assert sorted(described) == sorted(PROFILE_FAMILIES)
    assert f"- **{DEFAULT_FAMILY}** (default)" in section
