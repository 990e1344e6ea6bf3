"""The file system's refusals are messages (issue 45 item 3): a write through argent.io (the atomic
writers, the checkpoint write, a writer handed a temporary name: polars, matplotlib) that the file
system refuses (ENOSPC, EDQUOT, EFBIG, EROFS, EACCES) is one ``WriteRefused`` naming the file and
what to do, printed by ``argent``'s error boundary without a traceback; the earlier file is unchanged
and no temporary file is left.

Root ignores permissions and a read-only mount needs privileges, so the refusal is raised by the
patched call here; tests/integration/faults/test_file_size_limit.py provokes EFBIG for real."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
import torch

from argent.cli import explain
from argent.engine.checkpoint import atomic_torch_save
from argent.io import ArgentError, atomic_output, atomic_write_text

FIXES = {errno.ENOSPC: "no space left", errno.EDQUOT: "quota", errno.EFBIG: "ulimit -f", errno.EROFS: "read-only",
         errno.EACCES: "permission denied"}


def refusing(code: int):
    def refuse(*args, **kwargs):
        raise OSError(code, os.strerror(code), str(args[0]) if args else None)
    return refuse


def one_message(err: BaseException, path: Path, fix: str) -> str:
    """The line `argent` prints: it starts with the file, says what to do, and is no bug (no traceback)."""
    assert isinstance(err, ArgentError) and isinstance(err, OSError), type(err)
    message = explain(err)
    assert message is not None and message.startswith(f"{path}: ") and fix in message, message
    assert "\n" not in message and "[Errno" not in message
    return message


@pytest.mark.parametrize("code", list(FIXES))
def test_a_refused_rename_is_one_message_and_the_old_file_stays(tmp_path, monkeypatch, code):
    path = tmp_path / "tables" / "main.md"
    path.parent.mkdir()
    path.write_text("the earlier table\n")
    monkeypatch.setattr(os, "replace", refusing(code))
    with pytest.raises(OSError) as info:
        atomic_write_text(path, "the new table\n")
    one_message(info.value, path, FIXES[code])
    assert path.read_text() == "the earlier table\n" and sorted(p.name for p in path.parent.iterdir()) == ["main.md"]


@pytest.mark.parametrize("code", [errno.EROFS, errno.EACCES])
def test_a_folder_that_cannot_be_made_or_written_is_one_message(tmp_path, monkeypatch, code):
    """mkstemp in a read-only or foreign folder: before anything is written."""
    path = tmp_path / "out" / "result.json"
    monkeypatch.setattr("tempfile.mkstemp", refusing(code))
    with pytest.raises(OSError) as info:
        atomic_write_text(path, "{}")
    one_message(info.value, path, FIXES[code])


@pytest.mark.parametrize("code", [errno.EFBIG, errno.EDQUOT])
def test_a_refused_checkpoint_write_is_one_message(tmp_path, monkeypatch, code):
    """torch's writer fails inside the file (the OS error with the temporary name, or none at all)."""
    path = tmp_path / "run" / "checkpoint.pt"
    path.parent.mkdir()
    path.write_bytes(b"the step-2 checkpoint")

    def failing_save(obj, f):
        f.write(b"PK\x03\x04 half")
        raise RuntimeError("[enforce fail at inline_container.cc] unexpected pos") from OSError(code, os.strerror(code))
    monkeypatch.setattr("argent.engine.checkpoint.torch.save", failing_save)
    with pytest.raises(OSError) as info:
        atomic_torch_save({"step": 3, "w": torch.zeros(2)}, path)
    one_message(info.value, path, FIXES[code])
    assert path.read_bytes() == b"the step-2 checkpoint" and sorted(p.name for p in path.parent.iterdir()) == [
        "checkpoint.pt"]


def test_a_rust_writers_file_too_large_is_one_message(tmp_path):
    """polars raises OSError("File too large (os error 27)") without an errno (what `argent tables`
    met under `ulimit -f`)."""
    path = tmp_path / "tables" / "main.csv"
    with pytest.raises(OSError) as info:
        with atomic_output(path):
            raise OSError("File too large (os error 27)")
    one_message(info.value, path, "ulimit -f")
    assert not path.parent.exists() or list(path.parent.iterdir()) == []


def test_other_errors_pass_through_unchanged(tmp_path):
    """Only the refusals are rewritten: anything else is the writer's own error (a bug shows a traceback)."""
    with pytest.raises(ValueError, match="not a table"):
        with atomic_output(tmp_path / "x.csv"):
            raise ValueError("not a table")
    with pytest.raises(OSError) as info:
        with atomic_output(tmp_path / "y.csv"):
            raise OSError(errno.EIO, "Input/output error")
    assert not isinstance(info.value, ArgentError)
