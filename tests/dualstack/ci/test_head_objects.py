"""The untrusted job's render, read strictly and bounded (`dualstack.ci.head_objects`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dualstack.ci import head_objects
from dualstack.ci.head_objects import HeadObjectsError, read_head_objects

GOOD = (
    "apiVersion: v1\nkind: Service\nmetadata:\n  name: a\n"
    "---\napiVersion: v1\nkind: X\nmetadata: {name: b}\n"
)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prod.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_kubernetes_objects_are_read(tmp_path: Path) -> None:
    assert [o["metadata"]["name"] for o in read_head_objects(write(tmp_path, GOOD))] == ["a", "b"]


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("a: &x [1]\nb: *x\n", "anchors and aliases"),
        ("apiVersion: !!str v1\nkind: S\nmetadata: {name: a}\n", "tag tag:yaml.org,2002:str"),
        ("--- !custom\napiVersion: v1\n", "tag !custom"),
        ("- 1\n", "document 1 is not a mapping"),
        ("apiVersion: v1\nkind: S\nmetadata: {}\n", "no string metadata.name"),
        ("apiVersion: 1\nkind: S\nmetadata: {name: a}\n", "no string apiVersion"),
        ("a: [\n", "not YAML"),
    ],
)
def test_anything_else_is_refused_with_one_line(tmp_path: Path, text: str, cause: str) -> None:
    with pytest.raises(HeadObjectsError, match=cause.replace("!", "!")) as caught:
        read_head_objects(write(tmp_path, text))
    assert "\n" not in str(caught.value)


def test_sizes_are_bounded(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(head_objects, "MAX_BYTES", 100)
    with pytest.raises(HeadObjectsError, match="over the 100 accepted"):
        read_head_objects(write(tmp_path, GOOD * 3))
    monkeypatch.setattr(head_objects, "MAX_BYTES", 10_000)
    monkeypatch.setattr(head_objects, "MAX_OBJECTS", 1)
    with pytest.raises(HeadObjectsError, match="2 objects, over the 1 accepted"):
        read_head_objects(write(tmp_path, GOOD))


def test_a_missing_file_or_a_symlink_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HeadObjectsError, match="not a regular file"):
        read_head_objects(tmp_path / "staging.yaml")
    (tmp_path / "link.yaml").symlink_to(write(tmp_path, GOOD))
    with pytest.raises(HeadObjectsError, match="not a regular file"):
        read_head_objects(tmp_path / "link.yaml")
    with pytest.raises(HeadObjectsError, match="not UTF-8"):
        (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe")
        read_head_objects(tmp_path / "bin.yaml")
