"""A damaged or unwritable study store is one line naming it (issue 54, item 2): a garbage or half-copied
``optuna.db`` ended in a ``sqlite3.DatabaseError`` traceback from the store-lock wait (round 5 gave one
line), a read-only study folder in Optuna's misleading ``StorageInternalError`` ("... exceeding max
length") at the first commit."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from argent.cli import explain
from argent.tuning.storage import TuneError, open_study, storage_for
from tests.fixtures import ROOT, make_spec


def _store_with_trials(spec) -> bytes:
    study = open_study(spec, storage_for(spec))
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    return Path(spec.storage_url.removeprefix("sqlite:///")).read_bytes()


@pytest.mark.parametrize("damage", ["garbage", "half"])
def test_a_garbage_or_half_copied_store_is_one_line_naming_it(tmp_path, damage):
    spec = make_spec(tmp_path)
    db = Path(spec.storage_url.removeprefix("sqlite:///"))
    whole = _store_with_trials(make_spec(tmp_path / "whole"))
    db.parent.mkdir(parents=True, exist_ok=True)
    db.write_bytes(os.urandom(5000) if damage == "garbage" else whole[: len(whole) // 2])
    with pytest.raises(TuneError) as err:
        open_study(spec, storage_for(spec))
    message = explain(err.value)  # what `argent tune` prints: one line, no traceback
    assert message is not None and "\n" not in message and str(db) in message, message
    assert "not a readable study store" in message and "Move it aside" in message
    assert db.stat().st_size == (5000 if damage == "garbage" else len(whole) // 2)  # left as it was


def _nobody() -> int | None:
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        return None


READ_ONLY_PROBE = """
import sys
sys.path.insert(0, sys.argv[2])
from argent.cli import explain
from argent.tuning.storage import TuneError, open_study, storage_for
from tests.fixtures import make_spec
from pathlib import Path
spec = make_spec(Path(sys.argv[1]))
try:
    open_study(spec, storage_for(spec))
except TuneError as err:
    print("REFUSED", explain(err))
else:
    print("OPENED")
"""


def test_a_read_only_study_folder_is_one_clear_line_not_a_storage_internal_error(tmp_path):
    """Run as an unprivileged user (root writes through any mode bits): the study folder and its store
    are read-only to it, as a folder of another user or a read-only mount is."""
    spec = make_spec(tmp_path)
    _store_with_trials(spec)
    uid = _nobody()
    if os.geteuid() == 0 and uid is None:
        pytest.skip("running as root with no unprivileged user to drop to")
    base = Path(tempfile.mkdtemp(prefix="argent-ro-study-"))  # a folder the other user may traverse
    try:
        shutil.copytree(tmp_path / "study", base / "study")
        for path in (base / "study", *(base / "study").iterdir()):
            path.chmod(0o555 if path.is_dir() else 0o444)
        base.chmod(0o755)
        drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups"] if os.geteuid() == 0 else []
        if drop and shutil.which("setpriv") is None:
            pytest.skip("setpriv (util-linux) is not installed")
        proc = subprocess.run([*drop, sys.executable, "-c", READ_ONLY_PROBE, str(base), str(ROOT)],
                              capture_output=True, text=True, timeout=120, cwd=base)
        out = proc.stdout + proc.stderr
        assert "REFUSED" in out and "StorageInternalError" not in out and "Traceback" not in out, out
        assert "is read-only for this process" in out and str(base / "study") in out, out
    finally:
        for path in (base, *base.rglob("*")):
            path.chmod(0o755 if path.is_dir() else 0o644)
        shutil.rmtree(base, ignore_errors=True)
