"""One workflow per results folder (issue 45 item 4), the lock helper the Snakefile takes at parse time
(``argent.runs.workflow_lock.hold_workflow``; tests/integration/faults/test_one_workflow.py runs the real Snakemake).
Holders are real processes: the lock lives as long as the process that took it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from argent.io import ArgentError
from argent.runs.layout import WORKFLOW_LOCK as LOCK
from argent.runs.workflow_lock import hold_workflow
from tests.fixtures import ROOT, checksums

# Takes the lock of argv[1] as "snakemake in argv[2]", prints what hold_workflow said (or the refusal),
# then holds it until stdin closes (or, with argv[3] == "exit", ends at once: released at exit).
HOLDER = textwrap.dedent("""
    import sys
    from argent.io import ArgentError
    from argent.runs.workflow_lock import hold_workflow
    try:
        note = hold_workflow(sys.argv[1], f"snakemake in {sys.argv[2]}")
        again = hold_workflow(sys.argv[1], "the same process, parsing again")
    except ArgentError as err:
        print(f"refused: {err}", flush=True)
        sys.exit(2)
    print(f"held: {note} / {again}", flush=True)
    if sys.argv[3:] != ["exit"]:
        sys.stdin.read()
""")


def holder(results: Path, clone: str, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", HOLDER, str(results), clone, *extra], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.fixture
def held(tmp_path):
    results = tmp_path / "results"
    first = holder(results, "/clone-a")
    assert first.stdout.readline().startswith("held: None / None")  # a second parse in it re-uses its own
    yield results, first
    first.kill()
    first.wait()


def test_a_second_workflow_stops_at_once_naming_the_first_and_touching_nothing(held):
    results, first = held
    before = checksums(results)
    with pytest.raises(ArgentError) as info:
        hold_workflow(results, "snakemake in /clone-b")
    message = str(info.value)
    assert str(results) in message and f"pid {first.pid} on {socket.gethostname()}" in message, message
    assert "since " in message and "snakemake in /clone-a" in message and "another Snakemake" in message
    assert checksums(results) == before  # the lock file's record too


def test_a_dry_run_takes_nothing_and_only_warns(held, tmp_path):
    results, first = held
    note = hold_workflow(results, "snakemake in /clone-b", dry_run=True)
    assert note is not None and f"pid {first.pid}" in note and "dry run" in note
    free = tmp_path / "free"
    assert hold_workflow(free, "snakemake in /clone-b", dry_run=True) is None and not free.exists()


def test_the_lock_is_released_when_its_snakemake_ends(tmp_path):
    results = tmp_path / "results"
    ended = holder(results, "/clone-a", "exit")
    assert ended.communicate(timeout=60)[0].startswith("held: None")
    assert (results / LOCK).read_text() == ""  # names nobody
    second = holder(results, "/clone-b", "exit")
    assert second.communicate(timeout=60)[0].startswith("held: None")


def test_a_lock_left_by_a_killed_snakemake_on_this_host_is_taken_over_with_a_message(tmp_path):
    results = tmp_path / "results"
    killed = holder(results, "/clone-a")
    assert killed.stdout.readline().startswith("held:")
    killed.send_signal(signal.SIGKILL)
    killed.wait()
    assert f"pid {killed.pid}\n" in (results / LOCK).read_text()  # the dead holder's record stays
    taker = holder(results, "/clone-b", "exit")
    said = taker.communicate(timeout=60)[0]
    assert said.startswith(f"held: took over {results / LOCK}: snakemake in /clone-a, pid {killed.pid}"), said
    assert "ended without releasing it" in said


def test_a_record_of_another_host_is_not_taken_over(tmp_path):
    """Some shared file systems lock per node: a record of another host's Snakemake may be live."""
    results = tmp_path / "results"
    results.mkdir()
    (results / LOCK).write_text("pid 4242\nhost login2\nsince 2026-01-01T00:00:00+0000\nwhat snakemake in /x\n")
    taker = holder(results, "/clone-b", "exit")
    said = taker.communicate(timeout=60)[0]
    assert taker.returncode == 2 and "pid 4242 on login2" in said and f"delete {results / LOCK}" in said, said


def test_a_workflow_lock_that_is_a_link_is_refused(tmp_path):
    results, target = tmp_path / "results", tmp_path / "other" / "summary.json"
    results.mkdir()
    target.parent.mkdir()
    target.write_text("{}")
    (results / LOCK).symlink_to(target)
    taker = holder(results, "/clone-b", "exit")
    said = taker.communicate(timeout=60)[0]
    assert taker.returncode == 2 and "symbolic link" in said and target.read_text() == "{}", said
