"""Lock files are never followed (issue 45 item 2): a run folder's ``.writer.lock`` and the folder locks
of argent.io (a study's MLflow parent, a SQLite MLflow store) are opened with O_NOFOLLOW and without
truncation. A symbolic link in their place (pointing at another run's checkpoint, or nowhere) and a
hard link are refused with one message naming the lock file; the file they point to is untouched and
a dangling link's target is never created."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from argent.io import ArgentError, exclusive_lock
from argent.runs import RunFolder, hold_writer
from tests.fixtures import checksums, train_tiny


@pytest.fixture
def other_run(tmp_path: Path) -> Path:
    """Stands for another run's folder: a checkpoint.pt whose bytes must survive."""
    folder = tmp_path / "other"
    folder.mkdir()
    (folder / "checkpoint.pt").write_bytes(b"PK\x03\x04 another run's weights" * 100)
    return folder


def test_a_writer_lock_linked_to_another_runs_checkpoint_is_refused_and_the_checkpoint_kept(tmp_path, other_run):
    """Before: the lock's record was written through the link: the other run's checkpoint.pt held
    ``pid ...`` while training ran and was emptied when it ended."""
    run = tmp_path / "run"
    run.mkdir()
    (run / ".writer.lock").symlink_to(other_run / "checkpoint.pt")
    before = checksums(other_run)
    with pytest.raises(ArgentError) as info:
        train_tiny(run)
    message = str(info.value)
    assert str(run / ".writer.lock") in message and "symbolic link" in message and "checkpoint.pt" in message
    assert checksums(other_run) == before
    assert sorted(p.name for p in run.iterdir()) == [".writer.lock"]  # nothing trained into the folder


def test_a_dangling_writer_lock_link_creates_nothing_outside_the_run(tmp_path):
    run, outside = tmp_path / "results" / "run", tmp_path / "elsewhere" / "created-by-the-lock"
    run.mkdir(parents=True)
    outside.parent.mkdir()
    (run / ".writer.lock").symlink_to(outside)
    with pytest.raises(ArgentError, match="symbolic link"):
        with hold_writer(RunFolder(run), "a test"):
            pass
    assert not outside.exists()


def test_a_hard_linked_writer_lock_is_refused(tmp_path, other_run):
    run = tmp_path / "run"
    run.mkdir()
    os.link(other_run / "checkpoint.pt", run / ".writer.lock")
    before = checksums(other_run)
    with pytest.raises(ArgentError, match="hard link"):
        with hold_writer(RunFolder(run), "a test"):
            pass
    assert checksums(other_run) == before


@pytest.mark.parametrize("dangling", [False, True])
def test_a_folder_lock_that_is_a_link_is_refused(tmp_path, other_run, dangling):
    """``exclusive_lock`` (the study folder's MLflow-parent lock, a SQLite MLflow store's lock)."""
    target = tmp_path / "nowhere" / "x" if dangling else other_run / "checkpoint.pt"
    lock = tmp_path / "study" / ".mlflow-parent.lock"
    lock.parent.mkdir()
    lock.symlink_to(target)
    before = checksums(other_run)
    with pytest.raises(ArgentError) as info:
        with exclusive_lock(lock):
            pass
    assert str(lock) in str(info.value) and "symbolic link" in str(info.value)
    assert checksums(other_run) == before and not (tmp_path / "nowhere").exists()


def test_an_existing_lock_file_is_opened_without_truncation(tmp_path):
    from argent.io import open_lock_file

    lock = tmp_path / "held.lock"
    lock.write_text("pid 1\n")
    os.close(open_lock_file(lock))
    assert lock.read_text() == "pid 1\n"
