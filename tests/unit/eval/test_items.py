"""Reading eval input sets: media directories, JSONL/CSV manifests, and selecting items."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from duplex_client.eval.items import EvalItem, ItemSetError, load_items, select_items
from duplex_client.usage import UsageError


def touch(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x")
    return path


def write_jsonl(path: Path, rows: list[object]) -> Path:
    lines = [row if isinstance(row, str) else json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def by_id(items: list[EvalItem]) -> dict[str, EvalItem]:
    return {item.id: item for item in items}


# --- media directories -------------------------------------------------------------------


def test_directory_recursive_sorted_with_relative_ids(tmp_path: Path) -> None:
    root = tmp_path / "clips"
    for rel in ["b.mp4", "a.wav", "a.mp4", "sub/deep/c.MKV", "sub/d.Flac", "z.webm", "m.mov"]:
        touch(root / rel)
    touch(root / "y.mp3")
    touch(root / "notes.txt")
    touch(root / "frame.jpg")

    items = load_items(root, layout="dir")

    assert [item.id for item in items] == [
        "a.mp4",
        "a.wav",
        "b.mp4",
        "m.mov",
        "sub/d.Flac",
        "sub/deep/c.MKV",
        "y.mp3",
        "z.webm",
    ]
    found = by_id(items)
    assert found["a.mp4"].input_video == str(root / "a.mp4")
    assert found["a.mp4"].input_audio is None
    assert found["a.wav"].input_audio == str(root / "a.wav")
    assert found["sub/deep/c.MKV"].input_video == str(root / "sub/deep/c.MKV")
    assert found["sub/d.Flac"].input_audio == str(root / "sub/d.Flac")
    assert all(
        item.error is None and os.path.isabs(item.input_video or item.input_audio or "")
        for item in items
    )


def test_directory_skips_hidden_files_and_folders(tmp_path: Path) -> None:
    touch(tmp_path / "keep.wav")
    touch(tmp_path / ".hidden.wav")
    touch(tmp_path / ".cache" / "inside.mp4")
    touch(tmp_path / "sub" / ".DS_Store.mp4")

    assert [item.id for item in load_items(tmp_path, layout="dir")] == ["keep.wav"]


def test_directory_relative_source_gives_absolute_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    touch(tmp_path / "set" / "a.wav")
    monkeypatch.chdir(tmp_path)

    (item,) = load_items("set", layout="dir")

    assert item.id == "a.wav"
    assert item.input_audio == str(tmp_path / "set" / "a.wav")


def test_directory_follows_symlinks_but_not_loops(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    touch(outside / "o.wav")
    root = tmp_path / "root"
    touch(root / "a.wav")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)

    assert [item.id for item in load_items(root, layout="dir")] == ["a.wav", "linked/o.wav"]


def test_directory_broken_link_is_a_failed_item(tmp_path: Path) -> None:
    touch(tmp_path / "a.wav")
    (tmp_path / "gone.mp4").symlink_to(tmp_path / "nowhere.mp4")

    items = by_id(load_items(tmp_path, layout="dir"))

    assert items["a.wav"].error is None
    assert items["gone.mp4"].error is not None
    assert "gone.mp4" in items["gone.mp4"].error
    assert items["gone.mp4"].input_video is None


def test_directory_file_name_with_backslash_fails_alone(tmp_path: Path) -> None:
    touch(tmp_path / "a.wav")
    touch(tmp_path / "odd\\name.wav")

    items = load_items(tmp_path, layout="dir")

    assert [item.id for item in items] == ["a.wav", "odd_name.wav"]
    assert items[1].error is not None and "backslash" in items[1].error


def test_directory_without_media_is_refused(tmp_path: Path) -> None:
    touch(tmp_path / "readme.txt")
    touch(tmp_path / ".hidden.mp4")

    with pytest.raises(ItemSetError, match=r"no media files \(\.mp4, .*\.aiff\)") as info:
        load_items(tmp_path, layout="dir")
    assert str(tmp_path) in str(info.value)


def test_auto_layout_reads_a_plain_media_directory(tmp_path: Path) -> None:
    pytest.importorskip("duplex_client.eval.fdb")
    touch(tmp_path / "x" / "a.mp4")

    assert [item.id for item in load_items(tmp_path)] == ["x/a.mp4"]


def test_fdb_tree_is_recognised_and_dir_layout_overrides_it(tmp_path: Path) -> None:
    pytest.importorskip("duplex_client.eval.fdb")
    touch(tmp_path / "pause_handling" / "1" / "input.wav")
    (tmp_path / "pause_handling" / "1" / "pause.json").write_text("[]", encoding="utf-8")

    (fdb_item,) = load_items(tmp_path)
    (forced,) = load_items(tmp_path, layout="fdb")
    (media,) = load_items(tmp_path, layout="dir")

    assert fdb_item == forced
    assert fdb_item.fdb_task == "pause_handling"
    assert fdb_item.annotations is None  # pause.json marks a pause: VAD finds the turn end
    assert fdb_item.extra["fdb_annotation"] == "pause.json"
    assert media == EvalItem(
        id="pause_handling/1/input.wav",
        input_audio=str(tmp_path / "pause_handling" / "1" / "input.wav"),
    )


def test_fdb_layout_on_a_plain_media_dir_has_no_items(tmp_path: Path) -> None:
    pytest.importorskip("duplex_client.eval.fdb")
    touch(tmp_path / "a.mp4")

    with pytest.raises(ItemSetError, match="no items"):
        load_items(tmp_path, layout="fdb")


# --- sources and layouts -----------------------------------------------------------------


def test_missing_source_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    with pytest.raises(ItemSetError, match="no such file or directory") as info:
        load_items(missing)
    assert str(missing) in str(info.value)
    assert info.value.param == "source"


def test_unknown_layout_lists_the_allowed_ones(tmp_path: Path) -> None:
    with pytest.raises(ItemSetError, match="layout must be one of dir, manifest, fdb") as info:
        load_items(tmp_path, layout="tree")
    assert info.value.param == "layout"
    assert info.value.render().startswith("--layout must be one of")


def test_layout_and_source_kind_must_agree(tmp_path: Path) -> None:
    manifest = write_jsonl(tmp_path / "m.jsonl", [])
    with pytest.raises(ItemSetError, match="layout dir needs a directory"):
        load_items(manifest, layout="dir")
    with pytest.raises(ItemSetError, match="layout fdb needs a directory"):
        load_items(manifest, layout="fdb")
    with pytest.raises(ItemSetError, match=r"layout manifest needs a \.jsonl or \.csv file"):
        load_items(tmp_path, layout="manifest")


def test_other_files_are_refused_naming_the_accepted_kinds(tmp_path: Path) -> None:
    clip = touch(tmp_path / "clip.mp4")
    with pytest.raises(ItemSetError, match=r"not an input set .*\.jsonl or \.csv manifest"):
        load_items(clip)
    with pytest.raises(ItemSetError, match=r"\.jsonl or \.csv"):
        load_items(touch(tmp_path / "rows.json"), layout="manifest")


# --- JSONL manifests ---------------------------------------------------------------------


def test_jsonl_rows_resolve_paths_and_keep_extra_columns_in_order(tmp_path: Path) -> None:
    touch(tmp_path / "clips" / "a.mp4")
    touch(tmp_path / "clips" / "q.wav")
    touch(tmp_path / "img" / "p.jpg")
    touch(tmp_path / "ann" / "q.json")
    absolute = touch(tmp_path / "elsewhere" / "b.wav")
    manifest = tmp_path / "sets" / "m.jsonl"
    manifest.parent.mkdir()
    write_jsonl(
        manifest,
        [
            {
                "zeta": 1,
                "id": "a",
                "input_video": "../clips/a.mp4",
                "split": "dev",
                "tags": ["x", "y"],
                "tail_silence_s": 1.5,
                "annotations": [{"start_ms": 0, "end_ms": 900}],
                "instructions": "Be brief.",
                "expected": "red",
                "alpha": None,
            },
            "",
            "   ",
            {
                "id": "nested/q",
                "input_audio": "../clips/q.wav",
                "input_image": "../img/p.jpg",
                "annotations": "../ann/q.json",
                "tail_silence_s": 0,
            },
            {"id": 7, "input_audio": str(absolute)},
        ],
    )

    items = load_items(manifest)

    assert [item.id for item in items] == ["a", "nested/q", "7"]
    a, q, seven = items
    assert a == EvalItem(
        id="a",
        input_video=str(tmp_path / "clips" / "a.mp4"),
        tail_silence_s=1.5,
        annotations=[{"start_ms": 0, "end_ms": 900}],
        instructions="Be brief.",
        expected="red",
        extra={"zeta": 1, "split": "dev", "tags": ["x", "y"], "alpha": None},
    )
    assert list(a.extra) == ["zeta", "split", "tags", "alpha"]
    assert q.input_audio == str(tmp_path / "clips" / "q.wav")
    assert q.input_image == str(tmp_path / "img" / "p.jpg")
    assert q.annotations == str(tmp_path / "ann" / "q.json")
    assert q.tail_silence_s == 0.0
    assert q.extra == {}
    assert seven.input_audio == str(absolute)
    assert all(item.error is None for item in items)


def test_jsonl_with_only_blank_lines_has_no_items(tmp_path: Path) -> None:
    manifest = tmp_path / "empty.jsonl"
    manifest.write_text("\n  \n\n", encoding="utf-8")
    with pytest.raises(ItemSetError, match=r"empty\.jsonl: no items"):
        load_items(manifest)


@pytest.mark.parametrize(
    ("row", "item_id", "message"),
    [
        ('{"id": "x", ', "m.jsonl:2", "not valid JSON"),
        ('["a.wav"]', "m.jsonl:2", "not a JSON object (got an array)"),
        ('"just text"', "m.jsonl:2", "not a JSON object (got a string)"),
        ({"input_audio": "ok.wav"}, "m.jsonl:2", "no id"),
        ({"id": "", "input_audio": "ok.wav"}, "m.jsonl:2", "no id"),
        ({"id": "   ", "input_audio": "ok.wav"}, "m.jsonl:2", "id is empty"),
        ({"id": 1.5, "input_audio": "ok.wav"}, "m.jsonl:2", "id must be a string"),
        ({"id": "/abs", "input_audio": "ok.wav"}, "m.jsonl:2", "is an absolute path"),
        ({"id": "a/../b", "input_audio": "ok.wav"}, "m.jsonl:2", "'..' path segment"),
        ({"id": "..", "input_audio": "ok.wav"}, "m.jsonl:2", "'..' path segment"),
        ({"id": "a//b", "input_audio": "ok.wav"}, "m.jsonl:2", "empty, '.' or '..'"),
        ({"id": "a\\b", "input_audio": "ok.wav"}, "m.jsonl:2", "contains a backslash"),
        ({"id": "a\u0000b", "input_audio": "ok.wav"}, "m.jsonl:2", "control character"),
        ({"id": "r"}, "r", "no input_video or input_audio"),
        (
            {"id": "r", "input_video": "ok.mp4", "input_audio": "ok.wav"},
            "r",
            "give one of input_video and input_audio, not both",
        ),
        (
            {"id": "r", "input_video": "ok.mp4", "input_image": "ok.jpg"},
            "r",
            "input_image goes with input_audio, not input_video",
        ),
        ({"id": "r", "input_video": "clips/x.mp4"}, "r", "input_video clips/x.mp4: no such file"),
        ({"id": "r", "input_audio": "clips"}, "r", "input_audio clips: not a file"),
        (
            {"id": "r", "input_audio": "ok.wav", "input_image": "no.jpg"},
            "r",
            "input_image no.jpg: no such file",
        ),
        ({"id": "r", "input_audio": 3}, "r", "input_audio must be a path"),
        (
            {"id": "r", "input_audio": "ok.wav", "tail_silence_s": "1"},
            "r",
            "tail_silence_s must be a number >= 0, got 1",
        ),
        (
            {"id": "r", "input_audio": "ok.wav", "tail_silence_s": -0.5},
            "r",
            "tail_silence_s must be a number >= 0, got -0.5",
        ),
        (
            {"id": "r", "input_audio": "ok.wav", "tail_silence_s": True},
            "r",
            "tail_silence_s must be a number >= 0, got true",
        ),
        (
            '{"id": "r", "input_audio": "ok.wav", "tail_silence_s": Infinity}',
            "r",
            "tail_silence_s must be a number >= 0, got Infinity",
        ),
        (
            {"id": "r", "input_audio": "ok.wav", "annotations": "none.json"},
            "r",
            "annotations none.json: no such file",
        ),
        (
            {"id": "r", "input_audio": "ok.wav", "annotations": [1, 2]},
            "r",
            "annotations must be a file path or a list of segment objects",
        ),
        (
            {"id": "r", "input_audio": "ok.wav", "annotations": {"start_ms": 0}},
            "r",
            "annotations must be a file path or a list of segment objects",
        ),
        ({"id": "r", "input_audio": "ok.wav", "expected": 42}, "r", "expected must be a string"),
        (
            {"id": "r", "input_audio": "ok.wav", "instructions": ["a"]},
            "r",
            "instructions must be a string",
        ),
        ('{"id": "r", "input_audio": "ok.wav", "id": "s"}', "m.jsonl:2", "key 'id' given twice"),
    ],
)
def test_jsonl_malformed_row_fails_alone(
    tmp_path: Path, row: object, item_id: str, message: str
) -> None:
    touch(tmp_path / "ok.wav")
    touch(tmp_path / "ok.mp4")
    touch(tmp_path / "ok.jpg")
    (tmp_path / "clips").mkdir()
    manifest = write_jsonl(
        tmp_path / "m.jsonl",
        [
            {"id": "first", "input_audio": "ok.wav"},
            row,
            {"id": "last", "input_video": "ok.mp4", "split": "test"},
        ],
    )

    items = load_items(manifest)

    assert [item.id for item in items] == ["first", item_id, "last"]
    first, bad, last = items
    assert first.error is None and first.input_audio == str(tmp_path / "ok.wav")
    assert last.error is None and last.input_video == str(tmp_path / "ok.mp4")
    assert last.extra == {"split": "test"}
    assert bad.error is not None
    assert bad.error.startswith("m.jsonl line 2: ")
    assert message in bad.error
    assert "\n" not in bad.error
    assert bad.input_audio is None and bad.input_video is None


def test_error_row_keeps_its_extra_columns_for_the_summary(tmp_path: Path) -> None:
    manifest = write_jsonl(
        tmp_path / "m.jsonl", [{"id": "r", "input_video": "gone.mp4", "split": "dev"}]
    )

    (item,) = load_items(manifest)

    assert item.id == "r"
    assert item.error == "m.jsonl line 1: input_video gone.mp4: no such file"
    assert item.extra == {"split": "dev"}


def test_jsonl_that_is_not_utf8_is_refused_naming_the_line(tmp_path: Path) -> None:
    manifest = tmp_path / "m.jsonl"
    manifest.write_bytes(b'{"id": "a"}\n{"id": "\xff"}\n')
    with pytest.raises(ItemSetError, match=r"m\.jsonl line 2: not UTF-8 text"):
        load_items(manifest)


# --- CSV manifests -----------------------------------------------------------------------


def test_csv_with_bom_inline_annotations_and_extra_columns(tmp_path: Path) -> None:
    touch(tmp_path / "media" / "a.mp4")
    touch(tmp_path / "media" / "b.wav")
    touch(tmp_path / "media" / "b.png")
    touch(tmp_path / "b.json")
    manifest = tmp_path / "m.csv"
    manifest.write_text(
        "\ufeffsplit,id,input_video,input_audio,input_image,tail_silence_s,annotations,"
        "instructions,expected,notes\r\n"
        'dev,a,media/a.mp4,,,0.5,"[{""start_ms"": 100, ""end_ms"": 2000}]",'
        '"Say hi, then stop.",hello,\r\n'
        "\r\n"
        'test,b,,media/b.wav,media/b.png, 2 ,b.json,,,"two\nlines"\r\n',
        encoding="utf-8",
    )

    items = load_items(manifest)

    assert [item.id for item in items] == ["a", "b"]
    a, b = items
    assert a == EvalItem(
        id="a",
        input_video=str(tmp_path / "media" / "a.mp4"),
        tail_silence_s=0.5,
        annotations=[{"start_ms": 100, "end_ms": 2000}],
        instructions="Say hi, then stop.",
        expected="hello",
        extra={"split": "dev"},
    )
    assert b == EvalItem(
        id="b",
        input_audio=str(tmp_path / "media" / "b.wav"),
        input_image=str(tmp_path / "media" / "b.png"),
        tail_silence_s=2.0,
        annotations=str(tmp_path / "b.json"),
        extra={"split": "test", "notes": "two\nlines"},
    )
    assert list(b.extra) == ["split", "notes"]


@pytest.mark.parametrize(
    ("cells", "message"),
    [
        (",ok.wav,,", "no id"),
        ("r,,,", "no input_video or input_audio"),
        ("r,ok.wav,abc,", "tail_silence_s must be a number >= 0, got abc"),
        ("r,ok.wav,nan,", "tail_silence_s must be a number >= 0, got nan"),
        ("r,ok.wav,-1,", "tail_silence_s must be a number >= 0, got -1"),
        ('r,ok.wav,,[{"start_ms": 1', "annotations is not valid JSON"),
        ('r,ok.wav,,"[1, 2]"', "annotations must be a file path or a list of segment objects"),
        ("r,missing.wav,,", "input_audio missing.wav: no such file"),
        ("r,ok.wav,,,extra", "5 cells, the header has 4"),
    ],
)
def test_csv_malformed_row_fails_alone(tmp_path: Path, cells: str, message: str) -> None:
    touch(tmp_path / "ok.wav")
    manifest = tmp_path / "m.csv"
    manifest.write_text(
        f"id,input_audio,tail_silence_s,annotations\nfirst,ok.wav,,\n{cells}\nlast,ok.wav,1,\n",
        encoding="utf-8",
    )

    items = load_items(manifest)

    assert len(items) == 3
    first, bad, last = items
    assert (first.id, first.error, last.id, last.error) == ("first", None, "last", None)
    assert last.tail_silence_s == 1.0
    assert bad.error is not None
    assert bad.error.startswith("m.csv line 3: ")
    assert message in bad.error


def test_csv_row_error_id_falls_back_to_file_and_line(tmp_path: Path) -> None:
    touch(tmp_path / "ok.wav")
    manifest = tmp_path / "m.csv"
    manifest.write_text('id,input_audio\n"multi\nline",ok.wav\n,ok.wav\n', encoding="utf-8")

    items = load_items(manifest)

    assert [item.id for item in items] == ["m.csv:2", "m.csv:4"]
    assert items[0].error is not None and "control character" in items[0].error
    assert items[1].error == "m.csv line 4: no id"


def test_csv_header_problems_refuse_the_whole_file(tmp_path: Path) -> None:
    manifest = tmp_path / "m.csv"
    manifest.write_text("name,input_audio\na,a.wav\n", encoding="utf-8")
    with pytest.raises(ItemSetError, match=r"m\.csv: the header has no id column"):
        load_items(manifest)
    manifest.write_text("id,split,split\na,x,y\n", encoding="utf-8")
    with pytest.raises(ItemSetError, match="column 'split' given twice"):
        load_items(manifest)


def test_csv_trailing_unnamed_columns_are_fine_until_they_hold_a_value(tmp_path: Path) -> None:
    touch(tmp_path / "ok.wav")
    manifest = tmp_path / "m.csv"
    manifest.write_text("id,input_audio,,\na,ok.wav,,\nb,ok.wav,,oops\n,,,\n", encoding="utf-8")

    a, b = load_items(manifest)

    assert a.error is None and a.extra == {}
    assert b.error == "m.csv line 3: a value in column 4, which has no name"


def test_csv_header_only_has_no_items(tmp_path: Path) -> None:
    manifest = tmp_path / "m.csv"
    manifest.write_text("\ufeffid,input_audio\n", encoding="utf-8")
    with pytest.raises(ItemSetError, match="no items"):
        load_items(manifest)


# --- duplicate ids -----------------------------------------------------------------------


def test_duplicate_ids_are_refused_naming_each_with_its_lines(tmp_path: Path) -> None:
    touch(tmp_path / "ok.wav")
    manifest = write_jsonl(
        tmp_path / "m.jsonl",
        [
            {"id": "b", "input_audio": "ok.wav"},
            {"id": "a", "input_audio": "ok.wav"},
            {"id": "c", "input_audio": "ok.wav"},
            {"id": "a", "input_audio": "missing.wav"},
            {"id": "b", "input_audio": "ok.wav"},
            {"id": "a", "input_audio": "ok.wav"},
        ],
    )

    with pytest.raises(
        ItemSetError, match=r"duplicate ids: 'a' \(lines 2, 4, 6\), 'b' \(lines 1, 5\)$"
    ) as info:
        load_items(manifest)
    assert "'c'" not in str(info.value)


def test_csv_duplicate_ids_are_refused(tmp_path: Path) -> None:
    touch(tmp_path / "ok.wav")
    manifest = tmp_path / "m.csv"
    manifest.write_text("id,input_audio\nx,ok.wav\nx,ok.wav\n", encoding="utf-8")
    with pytest.raises(ItemSetError, match=r"duplicate ids: 'x' \(lines 2, 3\)"):
        load_items(manifest)


# --- select_items ------------------------------------------------------------------------


ITEMS = [EvalItem(id=name) for name in ["a/one.mp4", "a/two.wav", "b/one.mp4", "B/three.mp4"]]


def test_select_filter_is_a_case_sensitive_glob_applied_before_limit() -> None:
    assert [i.id for i in select_items(ITEMS, pattern="*one*")] == ["a/one.mp4", "b/one.mp4"]
    assert [i.id for i in select_items(ITEMS, pattern="b/*")] == ["b/one.mp4"]
    assert [i.id for i in select_items(ITEMS, pattern="*.mp4", limit=2)] == [
        "a/one.mp4",
        "b/one.mp4",
    ]
    assert [i.id for i in select_items(ITEMS, limit=3)] == ["a/one.mp4", "a/two.wav", "b/one.mp4"]
    assert select_items(ITEMS, limit=10) == ITEMS
    assert select_items(ITEMS) == ITEMS


def test_select_refuses_a_non_positive_limit() -> None:
    for limit in (0, -3):
        with pytest.raises(UsageError, match=f"limit must be positive, got {limit}") as info:
            select_items(ITEMS, limit=limit)
        assert info.value.param == "limit"


def test_select_that_leaves_nothing_names_the_filter() -> None:
    with pytest.raises(ItemSetError, match=r"no item id matches filter 'c/\*'") as info:
        select_items(ITEMS, pattern="c/*")
    assert info.value.param == "filter"
    assert info.value.render() == "no item id matches --filter 'c/*'"


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("tail_silence", ["tail_silence_s"]), ("tail_silence_ms", ["tail_silence_s"]),
        ("Tail-Silence-S", ["tail_silence_s"]), ("input_vidoe", ["input_video"]),
        ("inpt_audio", ["input_audio"]), ("ID", ["id"]), ("annotation", ["annotations"]),
        ("instruction", ["instructions"]),
        # columns of their own: carried to the summary, never refused
        ("idx", []), ("speaker", []), ("notes", []), ("expected_answer", []), ("lang", []),
        ("tail_silence_s", []), ("input_audio_2", []), ("id_2", []),
    ],
)  # fmt: skip
def test_a_column_one_edit_from_a_known_one_is_a_typo(name: str, meant: list[str]) -> None:
    from duplex_client.eval.manifest import known_column_like

    assert known_column_like(name) == meant


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("m.csv", "ID,input_audio\none,c.wav\n", "m.csv: column 'ID' is one edit away from 'id'"),
        (
            "m.jsonl",
            '{"id": "a", "input_audio": "c.wav"}\n{"id": "b", "input_vidoe": "c.wav"}\n',
            "m.jsonl line 2: column 'input_vidoe' is one edit away from 'input_video'",
        ),
        (
            "m.jsonl",
            '{"id": "a", "input_audio": "c.wav", "tail_silence_ms": 500}\n',
            "m.jsonl line 1: column 'tail_silence_ms' is one edit away from 'tail_silence_s'",
        ),
    ],
    ids=["csv ID", "jsonl input_vidoe", "jsonl tail_silence_ms"],
)
def test_a_misspelt_column_refuses_the_manifest(
    tmp_path: Path, name: str, text: str, message: str
) -> None:
    """The whole manifest, naming both columns: kept, the row would run without the option."""
    manifest = tmp_path / name
    manifest.write_text(text, encoding="utf-8")
    with pytest.raises(ItemSetError) as info:
        load_items(manifest)
    assert message in str(info.value) and "\n" not in str(info.value)
