"""One workflow per results folder (issue 45 item 4), through the real Snakefile: a Snakemake started
on a results folder another one holds stops at once, naming the first (host, pid, start time), and
touches nothing there, its logs included. Before: the second Snakemake ran; its refused train job
deleted the running job's training log. (tests/unit/faults/test_workflow_lock.py: the lock helper.)"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import yaml

from tests.fixtures import ROOT, checksums

HOLD = ("import sys\nfrom argent.runs.workflow_lock import hold_workflow\n"
        "hold_workflow(sys.argv[1], 'snakemake in /the/first/clone')\nprint('held', flush=True)\nsys.stdin.read()")


def test_a_second_snakemake_on_a_held_results_folder_stops_at_once_and_writes_nothing(tmp_path):
    results = tmp_path / "results"
    log = results / "logs" / "train" / "main" / "argent-tiny-seed0.log"  # the running job's log
    log.parent.mkdir(parents=True)
    log.write_text("step 1200/5000 ...\n")
    override = tmp_path / "results.yaml"
    override.write_text(yaml.safe_dump({"results": str(results)}))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MLFLOW_DISABLE_TELEMETRY": "true"}
    first = subprocess.Popen([sys.executable, "-c", HOLD, str(results)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env=env)
    try:
        assert first.stdout.readline().strip() == "held"
        before = checksums(results)
        started = time.monotonic()
        second = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "1", "--configfile",
                                 "config/smoke.yaml", str(override)], cwd=ROOT, env=env, capture_output=True, text=True,
                                timeout=300)
        took = time.monotonic() - started
        assert checksums(results) == before  # nothing written, the running job's log whole
    finally:
        first.kill()
        first.wait()
    said = second.stdout + second.stderr
    assert second.returncode != 0, said[-3000:]
    assert f"pid {first.pid} on {socket.gethostname()}" in said and "since " in said, said[-3000:]
    assert "snakemake in /the/first/clone" in said and "another Snakemake is running" in said, said[-3000:]
    assert "Traceback" not in said, said[-3000:]
    assert took < 60, f"stopped while parsing, before any job: {took:.0f} s"
