"""A real full file system (a 64 MiB tmpfs mounted for the test), not a patched writer: a checkpoint
write that runs out of space is one message naming the file, and the finished run beside it is kept.
Skipped, with the reason, where the machine refuses the mount (it needs root and CAP_SYS_ADMIN)."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import pytest
import torch

from argent.cli import explain
from argent.engine.checkpoint import CheckpointWriteError, atomic_torch_save
from tests.fixtures import checksums, train_tiny


@pytest.fixture
def small_fs(tmp_path: Path):
    mount = tmp_path / "fs"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a 64 MiB tmpfs here: {proc.stderr.strip() or proc.returncode}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def fill(folder: Path, leave: int) -> None:
    """Write a filler file until about ``leave`` bytes are free on ``folder``'s file system."""
    free = os.statvfs(folder).f_bavail * os.statvfs(folder).f_frsize
    with open(folder / "filler", "wb") as f:
        try:
            f.write(b"\0" * max(0, free - leave))
            f.flush()
        except OSError as err:
            assert err.errno == errno.ENOSPC


def test_a_checkpoint_that_fills_the_disk_keeps_the_old_one(small_fs):
    target = small_fs / "checkpoint.pt"
    atomic_torch_save({"step": 1}, target)
    before = target.read_bytes()
    fill(small_fs, leave=64 * 1024)
    with pytest.raises((CheckpointWriteError, OSError)) as info:
        atomic_torch_save({"weights": torch.zeros(1024 * 1024)}, target)  # 4 MiB into 64 KiB
    message = explain(info.value)
    assert message is not None and str(target) in message, message
    assert "full disk" in message or "no space left" in message, message
    assert target.read_bytes() == before
    assert sorted(p.name for p in small_fs.iterdir()) == ["checkpoint.pt", "filler"], "no temp file left"


def test_a_rerun_that_fills_the_disk_keeps_the_finished_run(small_fs):
    run = small_fs / "runs" / "main" / "meru-tiny" / "seed0"
    train_tiny(run)
    before = checksums(run)
    fill(small_fs, leave=1024 * 1024)  # a tiny run's checkpoint is ~20 MiB
    with pytest.raises(OSError) as info:  # CheckpointWriteError is an OSError too
        train_tiny(run, resume="no", steps=4)
    message = explain(info.value)
    assert message is not None and "Traceback" not in message, info.value
    assert "full disk" in message or "no space left" in message, message
    assert "?" not in message.split(":")[0], f"the file is named: {message}"
    (small_fs / "filler").unlink()
    assert {k: v for k, v in checksums(run).items() if not k.startswith(".staging")} == before


def test_a_torch_writer_failure_without_an_os_error_is_still_one_message(tmp_path, monkeypatch):
    """When torch's writer fails with no OS error behind it, the boundary keys on the type it raises
    here (CheckpointWriteError), not on torch's wording."""
    def failing_save(obj, f):
        f.write(b"PK\x03\x04 half")
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 704 vs 598")

    monkeypatch.setattr("argent.engine.checkpoint.torch.save", failing_save)
    target = tmp_path / "checkpoint.pt"
    with pytest.raises(CheckpointWriteError) as info:
        atomic_torch_save({"step": 1}, target)
    message = explain(info.value)
    assert message.startswith(f"{target}: writing the checkpoint failed") and "MiB free" in message
    assert list(tmp_path.iterdir()) == []
