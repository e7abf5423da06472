"""Removing a child's directory: never follows a symlink, never raises, survives any shape."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tablequest.sandbox._cleanup import measure, remove_tree


@pytest.fixture()
def outside(tmp_path: Path) -> Path:
    target = tmp_path / "outside"
    (target / "sub").mkdir(parents=True)
    (target / "sub" / "keep.txt").write_text("keep")
    return target


def test_symlinks_are_removed_not_followed(tmp_path: Path, outside: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "to-dir").symlink_to(tree / "a")
    (tree / "to-outside").symlink_to(outside)
    (tree / "a" / "to-outside-sub").symlink_to(outside / "sub")
    (tree / "loop").symlink_to("loop")
    (tree / "dangling").symlink_to(tmp_path / "missing")
    assert remove_tree(str(tree))
    assert not tree.exists() and (outside / "sub" / "keep.txt").read_text() == "keep"


def test_locked_directories(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "open" / "locked" / "deeper").mkdir(parents=True)
    (tree / "open" / "locked" / "deeper" / "f").write_text("x")
    (tree / "open" / "locked" / "deeper").chmod(0)
    (tree / "open" / "locked").chmod(0)
    (tree / "open").chmod(0o500)
    assert remove_tree(str(tree)) and not tree.exists()


def test_deeper_than_the_recursion_and_descriptor_limits(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    fd = os.open(tree, os.O_RDONLY)
    for _ in range(1500):  # beyond sys.getrecursionlimit() and a 1024-fd limit
        os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(fd)
    assert remove_tree(str(tree)) and not tree.exists()


def test_wide_directories_and_odd_names(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(300):
        (tree / f"d{i}").mkdir()
        (tree / f"f{i}").write_text("x")
    odd = os.fsencode(tree) + b"/\xff\xfe-not-utf8"
    os.mkdir(odd)
    assert remove_tree(str(tree)) and not tree.exists()


def test_missing_files_and_a_symlink_as_the_top(tmp_path: Path, outside: Path) -> None:
    assert remove_tree(str(tmp_path / "missing"))
    link = tmp_path / "top-link"
    link.symlink_to(outside)
    assert remove_tree(str(link)) and not link.is_symlink()
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    assert remove_tree(str(plain)) and not plain.exists()
    assert (outside / "sub" / "keep.txt").exists()


def test_a_moved_tree_stops_the_walk_without_raising(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tablequest.sandbox import _cleanup

    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    real = _cleanup._ident
    calls = {"n": 0}

    def shifting(fd: int) -> tuple[int, int]:
        calls["n"] += 1
        dev, ino = real(fd)
        return (dev, ino + 1) if calls["n"] > 3 else (dev, ino)

    monkeypatch.setattr(_cleanup, "_ident", shifting)
    assert remove_tree(str(tree)) is False  # stopped safely; reported as not removed
    monkeypatch.setattr(_cleanup, "_ident", real)
    assert remove_tree(str(tree))


def test_measure_stops_past_the_limit(tmp_path: Path, outside: Path) -> None:
    tree = tmp_path / "tree"
    (tree / "a" / "b").mkdir(parents=True)
    for i in range(30):
        (tree / "a" / f"f{i}").write_bytes(b"x" * 10_000)
    (tree / "to-outside").symlink_to(outside)  # counted, not followed
    files, size = measure(str(tree), limit=1000)
    assert files == 33 and size >= 30 * 10_000
    assert measure(str(tree), limit=10)[0] == 11
    assert measure(str(tmp_path / "missing"), limit=10) == (0, 0)
