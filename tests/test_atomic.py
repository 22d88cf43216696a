"""sphgpu._atomic.atomic_write: a file is written whole or not at all."""

import os

import pytest

from sphgpu._atomic import atomic_write


def test_writes_and_replaces(tmp_path):
    path = tmp_path / "out.txt"
    for text in ("first", "second"):
        with atomic_write(path) as tmp, open(tmp, "w") as f:
            f.write(text)
        assert path.read_text() == text
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]           # no temporary file left


def test_failure_part_way_keeps_the_previous_file(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("previous result")
    with pytest.raises(OSError, match="disk full"):
        with atomic_write(path) as tmp, open(tmp, "w") as f:
            f.write("half of the new")
            raise OSError(28, "disk full (simulated)")
    assert path.read_text() == "previous result"
    assert sorted(os.listdir(tmp_path)) == ["out.txt"]


def test_overwrite_false_refuses_an_existing_file(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("kept")
    with pytest.raises(FileExistsError, match="overwrite=True"):
        with atomic_write(path, overwrite=False):
            pass
    assert path.read_text() == "kept"


def test_missing_folder_names_the_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nowhere"):
        with atomic_write(tmp_path / "nowhere" / "out.txt"):
            pass


def test_file_mode_follows_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        with atomic_write(tmp_path / "out.txt") as tmp, open(tmp, "w") as f:
            f.write("x")
    finally:
        os.umask(old)
    assert (tmp_path / "out.txt").stat().st_mode & 0o777 == 0o644
