"""A SQLite study store that another process keeps locked (issue 45 item 3): a worker waits for it up
to ``tune.store_wait`` seconds, saying so once, and goes on when it is free; past the wait it stops
with ``StoreLocked``, one line naming the store and the key, also from inside Optuna's own calls
(before: Optuna's StorageInternalError after 120 s, with its tracebacks)."""

from __future__ import annotations

import logging
import subprocess
import sys
import time
from pathlib import Path

import pytest

from argent.tuning.storage import StoreLocked, open_study, storage_for
from tests.fixtures import make_spec


def lock_store(db: Path, seconds: float) -> subprocess.Popen:
    """Another process holding the store's lock for ``seconds`` (returns once it holds it)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", "import sqlite3, sys, time\n"
                               "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
                               "c.execute('BEGIN EXCLUSIVE'); print('locked', flush=True)\n"
                               "time.sleep(float(sys.argv[2])); c.execute('ROLLBACK')", str(db), str(seconds)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    return holder


def test_a_store_locked_for_a_while_is_waited_for_saying_so(tmp_path, caplog):
    spec = make_spec(tmp_path, store_wait=60)
    holder = lock_store(tmp_path / "study" / "optuna.db", 3)
    try:
        with caplog.at_level(logging.WARNING, logger="argent.tune"):
            study = open_study(spec, storage_for(spec))
    finally:
        holder.wait(timeout=60)
    assert study.study_name == spec.tune.study
    said = [r.getMessage() for r in caplog.records]
    assert any("locked by another process; waiting up to 60 s" in m for m in said), said
    assert any("free again" in m for m in said), said


def test_a_store_locked_past_the_wait_at_the_start_is_one_line(tmp_path):
    spec = make_spec(tmp_path, store_wait=1)
    db = tmp_path / "study" / "optuna.db"
    holder = lock_store(db, 60)
    try:
        started = time.monotonic()
        with pytest.raises(StoreLocked) as info:
            storage_for(spec)
        assert time.monotonic() - started < 30  # before: 120 s of SQLite's timeout, five times over
    finally:
        holder.kill()
        holder.wait()
    message = str(info.value)
    assert message.startswith(f"{db}: the study store stayed locked") and "tune.store_wait" in message
    assert "\n" not in message


def test_a_store_locked_in_the_middle_of_a_study_stops_optunas_own_call_with_one_line(tmp_path):
    """The lock comes while the worker runs: the next storage call (here a user attribute, in a trial a
    report or the tell) waits, then raises StoreLocked through Optuna, not a StorageInternalError."""
    spec = make_spec(tmp_path, store_wait=1)
    study = open_study(spec, storage_for(spec))
    holder = lock_store(tmp_path / "study" / "optuna.db", 60)
    try:
        with pytest.raises(StoreLocked, match="tune.store_wait"):
            study.set_user_attr("note", "written while another process holds the store")
    finally:
        holder.kill()
        holder.wait()
    study.set_user_attr("note", "written once the store is free")  # the storage is usable again
    assert study.user_attrs["note"] == "written once the store is free"
