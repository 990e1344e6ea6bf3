"""Several worker processes share one Optuna study (cheap objectives, no training): the budget is met
exactly, and a killed worker's trial is retried without redoing the finished ones
(tests/unit/tuning/test_study.py: the same mechanics in one process)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna

from argent.tuning import budget_used, finished_in_budget
from tests.fixtures import ROOT, STUDY_BASE, make_spec, stored_trials

# A worker process: joins the study, waits at a barrier so that workers really overlap, and runs a
# cheap objective that logs "start k" / "done k" lines (O_APPEND: whole lines, one writer each).
WORKER = r"""
import json, sys, time, os
from pathlib import Path
from argent.tuning import parse_tune, run_study, study_spec
args = json.loads(sys.argv[1])
spec = study_spec(parse_tune(args["tune"]), args["out"])
events = Path(args["events"])
def note(text):
    fd = os.open(events, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(fd, (text + "\n").encode()); os.close(fd)
def objective(ctx):
    note(f"start {ctx.number} {args['worker']}")
    if ctx.number >= args["hang_from"]:
        time.sleep(600)  # stands for a long trial; the test kills the worker here
    x = ctx.params["entailment_weight"]
    for step in range(1, args["reports"] + 1):
        time.sleep(args["sleep"])
        ctx.report(x * step, step)
    note(f"done {ctx.number} {args['worker']}")
    return x
Path(args["out"]).mkdir(parents=True, exist_ok=True)
Path(args["out"], f"ready-{args['worker']}").touch()
while args.get("barrier") and not Path(args["out"], "go").exists():
    time.sleep(0.05)
print(json.dumps(run_study(spec, objective)))
"""

# A claimer: takes budget slots as fast as it can once every claimer is ready; prints the slots it got.
CLAIMER = r"""
import json, sys, time
from pathlib import Path
from argent.tuning import parse_tune, study_spec
from argent.tuning.budget import TrialBudget
from argent.tuning.storage import open_study, storage_for
args = json.loads(sys.argv[1])
spec = study_spec(parse_tune(args["tune"]), args["out"])
budget = TrialBudget(storage_for(spec), spec.tune.study)
budget.issue(spec.tune.n_trials, open_study(spec, storage_for(spec)))
Path(args["out"], f"ready-{args['worker']}").touch()
while not Path(args["out"], "go").exists():
    time.sleep(0.01)
got = []
while (slot := budget.claim(spec.tune.n_trials)) is not None:
    got.append(slot)
print(json.dumps(got))
"""


def start(script: str, args: dict) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", script, json.dumps(args)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def release_together(tmp: Path, procs: list[subprocess.Popen], names: list[str]) -> None:
    """Wait until every process has written ``ready-<name>``, then let them all go at once."""
    deadline = time.time() + 120
    while not all((tmp / "study" / f"ready-{n}").exists() for n in names):
        assert time.time() < deadline and all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.05)
    (tmp / "study" / "go").touch()


def worker(tmp: Path, tune: dict, name: str, *, sleep: float = 0.1, reports: int = 2, barrier: bool = False,
           hang_from: int = 1 << 30) -> subprocess.Popen:
    args = {"tune": tune, "out": str(tmp / "study"), "events": str(tmp / "events.log"), "worker": name,
            "sleep": sleep, "reports": reports, "barrier": barrier, "hang_from": hang_from}
    return start(WORKER, args)


def events(tmp: Path) -> list[tuple[str, int, str]]:
    path = tmp / "events.log"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(kind, int(num), who) for kind, num, who in (line.split() for line in lines)]


def test_two_worker_processes_finish_the_budget_exactly(tmp_path):
    # No worker dies here: a grace period far above the heartbeat keeps a live worker whose heart
    # thread a loaded 2-core machine delays by > 2 s from being failed as stale by the other.
    tune = {**STUDY_BASE, "n_trials": 8, "grace_period": 30}
    procs = [worker(tmp_path, tune, name, sleep=0.15, barrier=True) for name in ("a", "b")]
    release_together(tmp_path, procs, ["a", "b"])
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs

    trials = stored_trials(make_spec(tmp_path, n_trials=8))
    assert len(trials) == 8 and sorted(t.number for t in trials) == list(range(8))
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in trials)
    done = [(num, who) for kind, num, who in events(tmp_path) if kind == "done"]
    assert sorted(num for num, _ in done) == list(range(8)), "every trial ran exactly once"
    assert {who for _, who in done} == {"a", "b"}, "both workers took trials"
    params = [tuple(sorted(t.params.items())) for t in trials]
    assert len(set(params)) == 8, "per-trial sampler seeds: no two workers draw the same parameters"
    ran = [json.loads(out.strip().splitlines()[-1])["ran"] for out, _ in outs]
    assert sum(r.get("COMPLETE", 0) for r in ran) == 8


def test_killed_worker_is_resumed_without_redoing_finished_trials(tmp_path):
    tune = {**STUDY_BASE, "n_trials": 6}
    proc = worker(tmp_path, tune, "a", sleep=0.05, reports=3, hang_from=2)
    deadline = time.time() + 120
    while ("start", 2, "a") not in events(tmp_path):  # trials 0 and 1 done, trial 2 running
        assert time.time() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)

    spec = make_spec(tmp_path, n_trials=6)
    stored = stored_trials(spec)
    before = {t.number: (t.value, t.datetime_complete) for t in stored if t.state == optuna.trial.TrialState.COMPLETE}
    (killed,) = [t.number for t in stored if t.state == optuna.trial.TrialState.RUNNING]
    assert sorted(before) == [0, 1] and killed == 2

    rerun = worker(tmp_path, tune, "b", sleep=0.05, reports=1)  # heartbeat 1 s, grace 2 s
    out, err = rerun.communicate(timeout=180)
    assert rerun.returncode == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    trials = stored_trials(spec)
    by_number = {t.number: t for t in trials}
    for number, (value, completed) in before.items():  # untouched, not redone
        assert (by_number[number].value, by_number[number].datetime_complete) == (value, completed)
    assert by_number[killed].state == optuna.trial.TrialState.FAIL
    retries = [t for t in trials if t.system_attrs.get("failed_trial") == killed]
    assert len(retries) == 1 and retries[0].state == optuna.trial.TrialState.COMPLETE
    assert retries[0].params == by_number[killed].params, "the dead worker's parameters are retried"
    counted = finished_in_budget(trials)
    assert len(counted) == 6 and budget_used(trials) == 6
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in counted)
    done = [n for k, n, _ in events(tmp_path) if k == "done"]
    assert sorted(done) == sorted(t.number for t in counted), "each counted trial finished exactly once"
    assert result["ran"] == {"COMPLETE": 6 - len(before)}


def test_workers_claiming_at_once_each_slot_goes_to_exactly_one(tmp_path):
    # Four processes race for 60 slots of an SQLite study. Optuna pops a queued trial with a
    # read-then-write that SQLite made atomic only once argent's storage begins its transactions
    # IMMEDIATE: before that, two workers took one slot and one of them died telling it
    # ("Cannot tell a COMPLETE trial"), in 3 of 4 such races on a 2-core machine.
    names = ["a", "b", "c", "d"]
    tune = {**STUDY_BASE, "n_trials": 60}
    procs = [start(CLAIMER, {"tune": tune, "out": str(tmp_path / "study"), "worker": n}) for n in names]
    release_together(tmp_path, procs, names)
    outs = [p.communicate(timeout=180) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err.strip().splitlines()[-1:] for _, err in outs]
    claimed = [slot for out, _ in outs for slot in json.loads(out.strip().splitlines()[-1])]
    assert sorted(claimed, key=int) == [str(k) for k in range(60)], "every slot claimed exactly once"
