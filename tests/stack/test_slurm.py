"""The smoke DAG on a real one-node Slurm cluster (scripts/slurm-local.sh) through profiles/slurm:
every job is a Slurm job, and the tables equal those of a local run; its two Optuna workers, two
Slurm jobs sharing the stack's PostgreSQL, finish exactly the trial budget; a training job signalled
mid-run (a preemption) or stopped by its time limit checkpoints the step it reached, is resubmitted
by the profile's retries and resumes at exactly that step, ending bit for bit where a run that was
never stopped ends."""

from __future__ import annotations

import json
import math
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import optuna
import polars as pl
import pytest
import torch
import yaml
from stackutil import ROOT, child_env, script

from argent.runs import RunFolder, read_metrics, run_dir

pytestmark = [pytest.mark.stack, pytest.mark.timeout(1800)]  # a DAG of 27 Slurm jobs on 2 cores (~8 min)

SLURM = ROOT / "scripts" / "slurm-local.sh"
SHARED = ROOT.parent / "shared"
# This cluster has no accounting daemon (so squeue, not sacct, reports job states), one partition
# `debug`, and 2 CPUs; the profile's defaults are for a real cluster. Status: the plugin waits its
# init interval (default 40 s) after submitting and after every finished job, adding 10 s per poll
# that sees none finish; at 40 s those waits were a third of this module's time (a smoke job runs
# 15-25 s here; docs/scaling.md), so this one-node cluster is asked after 1 s (squeue is cheap here).
SITE = ["--slurm-status-command", "squeue", "--slurm-no-account", "--slurm-init-seconds-before-status-checks", "1",
        "--seconds-between-status-checks", "1",
        "--default-resources", "slurm_partition=debug", "cpus_per_task=1", "mem_mb=1000", "runtime=30"]
TUNING_GROUP = "tuning"  # config/config.yaml groups: the variant trained from the study's best.yaml
SUBMITTED = re.compile(r"Job (\d+) has been submitted with SLURM jobid (\d+) \(log: (\S+)\)")


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("slurm")
    try:
        script(SLURM, "up", str(folder))
        yield folder
    finally:
        subprocess.run(["bash", str(SLURM), "down", str(folder)], capture_output=True, timeout=120, env=child_env())


def checkout(dest: Path) -> Path:
    """The project's tracked files in a fresh folder (results/ and data/ of its own); ../shared beside it."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    for name in filter(None, files.split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    if SHARED.is_dir():
        (dest.parent / "shared").symlink_to(SHARED)
    return dest


def snakemake_cmd(*args: str, configs: tuple[str, ...] = ()) -> list[str]:
    """`snakemake ARGS` on the smoke config, plus ``configs`` merged over it (later files win). Targets
    go first in ``args``: options such as --default-resources take every word after them."""
    return [sys.executable, "-m", "snakemake", *args, "--configfile", "config/smoke.yaml", *configs]


def snakemake(cwd: Path, *args: str, timeout: int = 1500, configs: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run(snakemake_cmd(*args, configs=configs), check=False, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=child_env())


def slurm_states(ids: list[int]) -> dict[int, str]:
    """Slurm's final word on jobs (squeue keeps finished jobs: MinJobAge of slurm-local.sh)."""
    query = ["squeue", "-h", "-t", "all", "-o", "%i %T", "-j", ",".join(str(i) for i in ids)]
    out = subprocess.run(query, check=False, capture_output=True, text=True, env=child_env()).stdout
    return {int(i): state for i, state in (line.split() for line in out.splitlines() if line.strip())}


def local_tables(tmp: Path) -> Path:
    """Tables of a local smoke run: the README test run's when present (CI), else one made here."""
    done = ROOT / "results" / "smoke" / "tables" / "main.csv"
    if done.is_file():
        return done.parent
    repo = checkout(tmp / "local" / "repo")
    proc = snakemake(repo, "--cores", "2")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return repo / "results" / "smoke" / "tables"


@pytest.fixture(scope="module")
def smoke_on_slurm(slurm, stack, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The smoke DAG run once through profiles/slurm, its study on the stack's PostgreSQL (as on a
    cluster: one database for every worker job): (its folder, snakemake's output)."""
    repo = checkout(tmp_path_factory.mktemp("slurm_smoke") / "repo")
    (repo / "config" / "cluster.yaml").write_text(yaml.safe_dump({"tune": {"storage": stack["optuna"]}}))
    proc = snakemake(repo, "--profile", "profiles/slurm", "--jobs", "4", *SITE, configs=("config/cluster.yaml",))
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-5000:]
    return repo, out


def same_number(x: float | None, y: float | None) -> bool:
    """Equal table cells: both empty (a cell with n = 0), or equal up to float noise."""
    if x is None or y is None:
        return x is None and y is None
    return math.isclose(x, y, rel_tol=1e-5, abs_tol=1e-6) or (math.isnan(x) and math.isnan(y))


def test_smoke_dag_runs_as_slurm_jobs_and_matches_a_local_run(smoke_on_slurm, tmp_path):
    repo, out = smoke_on_slurm

    submitted = SUBMITTED.findall(out)
    ids = [int(slurm_id) for _, slurm_id, _ in submitted]
    print(f"Slurm job ids of the smoke run: {ids}")
    counts = re.search(r"Job stats:\n.*?\ntotal\s+(\d+)", out, re.DOTALL)
    assert counts, out[:3000]
    # `all` and the localrules: of workflow/Snakefile run on the submitting host, printed as "localrule <name>:"
    local_rules = len(re.findall(r"^localrule \w+:$", out, re.M))
    assert local_rules >= 1, out[:3000]
    jobs = {job for job, _, _ in submitted}
    assert len(jobs) == int(counts.group(1)) - local_rules, "every job of the DAG went through sbatch"
    retried = len(submitted) - len(jobs)
    print(f"{len(jobs)} jobs, {retried} resubmitted by the profile's retries")
    assert len(set(ids)) == len(ids)
    last = {job: (int(slurm_id), Path(log)) for job, slurm_id, log in submitted}  # each job's final attempt
    for slurm_id, log in last.values():  # its own log, named by its Slurm job id, says it finished the rule
        assert log.name == f"{slurm_id}.log" and "Finished jobid: 0" in log.read_text(), log
    states = slurm_states([i for i, _ in last.values()])
    assert set(states.values()) == {"COMPLETED"} and len(states) == len(last), states

    local = local_tables(tmp_path)
    on_slurm = repo / "results" / "smoke" / "tables"
    for name in ("main", "ablations"):
        a, b = pl.read_csv(on_slurm / f"{name}.csv"), pl.read_csv(local / f"{name}.csv")
        assert a.columns == b.columns and a.height == b.height
        keys = [c for c in a.columns if a[c].dtype == pl.String]
        a, b = a.sort(keys), b.sort(keys)
        assert a.select(keys).equals(b.select(keys))
        # The tuned variant is exempt from equal numbers: two Optuna workers run their trials at once, so
        # which worker's seeded sampler draws which trial, and whether the median pruner stops a trial,
        # depend on the jobs' timing; best.yaml, and so argent-tuned's training, may differ between runs.
        timed = [row.startswith(f"{TUNING_GROUP}/") for row in a["row"]]
        for column in (c for c in a.columns if c not in keys):
            differ = [(row, x, y) for row, x, y, skip in zip(a["row"], a[column], b[column], timed)
                      if not skip and not same_number(x, y)]
            assert not differ, (name, column, differ[:5])
        assert not all(timed), f"{name}: every row is the tuned variant's; nothing was compared"


def test_two_tune_workers_as_slurm_jobs_on_postgresql_finish_exactly_the_budget(smoke_on_slurm, stack):
    repo, out = smoke_on_slurm
    tune = yaml.safe_load((repo / "results" / "smoke" / "workflow_config.yaml").read_text())["tune"]
    assert tune["storage"] == stack["optuna"] and tune["workers"] == 2
    workers = {job: (int(slurm_id), log) for job, slurm_id, log in SUBMITTED.findall(out) if "rule_tune_worker" in log}
    assert len(workers) == 2, f"two worker jobs went through sbatch: {workers}"
    ids = [slurm_id for slurm_id, _ in workers.values()]
    assert set(slurm_states(ids).values()) == {"COMPLETED"}, slurm_states(ids)

    study = optuna.load_study(study_name=tune["study"], storage=stack["optuna"])
    states = [t.state.name for t in study.get_trials()]
    assert len(states) == tune["n_trials"] and set(states) <= {"COMPLETE", "PRUNED"}, states
    ran = []
    for worker in range(2):  # each worker's last line on stdout: its trials by final state
        log = repo / "results" / "smoke" / "logs" / "tune" / f"{tune['study']}-worker{worker}.log"
        lines = [line for line in log.read_text().splitlines() if line.startswith("{") and '"ran"' in line]
        assert lines, log.read_text()[-2000:]
        ran.append(json.loads(lines[-1])["ran"])
    print(f"Slurm jobs of the tune workers: {ids}; trials per worker on PostgreSQL: {ran}")
    assert sum(sum(r.values()) for r in ran) == tune["n_trials"], ran


# About 70 s of training in a one-CPU Slurm job here (360 steps took 35 s): long enough to be caught
# mid-run, and to outlive the warning of a 1-minute limit with a 20 s lead, which slurmctld sends at the
# first of its 30-s checks at most 50 s before the limit, i.e. 10-40 s into the job (measured with sleep
# jobs; at 360 steps a 39.6 s job finished before it). No periodic checkpoint before the end, so every
# other checkpoint is a stop's.
STEPS, BATCH, CHECKPOINT_EVERY = 720, 128, 1000
RESUMED = re.compile(r"resumed \S+ at step (\d+)")
PREEMPTED = "returned non-zero exit status 75"  # argent train's status after checkpointing on a signal
# Snakemake's line on SIGTERM: it waits for its running job, then exits 1 whatever the job's outcome.
WARNED = "Will exit after finishing currently running jobs"
KILLED = "died with <Signals.SIGTERM: 15>"  # the rule's command, ended by the signal's default action
ALREADY_FINISHED = re.compile(r"already finished at step (\d+)")  # a retry of a run an earlier attempt finished


def slurm_jobs_of_rule(rule: str) -> list[int]:
    """Running Slurm jobs of a rule (the plugin puts rule_<name>_wildcards_... in the job's comment)."""
    out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i %k"], check=False, capture_output=True, text=True,
                         env=child_env()).stdout
    return [int(i) for i, comment in (line.split(maxsplit=1) for line in out.splitlines() if " " in line)
            if comment.startswith(f"rule_{rule}_")]


def comparable(rows: list[dict]) -> list[dict]:
    """metrics.jsonl without its timings (perf/*), which differ between any two runs."""
    return [{k: v for k, v in row.items() if not k.startswith("perf/")} for row in rows]


def long_run(tmp_path: Path) -> tuple[Path, Path, str]:
    """A checkout with one longer training of the smoke config: (repo, run folder, its summary target)."""
    repo = checkout(tmp_path / "repo")
    overrides = {"train": {"steps": STEPS, "batch_size": BATCH, "checkpoint_every": CHECKPOINT_EVERY, "log_every": 2}}
    (repo / "config" / "long.yaml").write_text(yaml.safe_dump(overrides))
    run = run_dir(repo / "results" / "smoke", "main", "clip", "tiny", 0)
    return repo, run, str((run / "summary.json").relative_to(repo))


def checkpoint_step(run: Path) -> int | None:
    """The step of the run's checkpoint now (written atomically: a reader sees the old or the new one)."""
    try:
        return int(torch.load(RunFolder(run).checkpoint, weights_only=True)["step"])
    except (FileNotFoundError, RuntimeError, EOFError):
        return None


def watch(proc: subprocess.Popen, run: Path, log: Path, on_training=None, timeout: float = 1500) -> list[int]:
    """Poll a Snakemake run until it ends: the distinct steps its checkpoint held, in order (with no
    periodic checkpoint before the end, each below STEPS is a stop on a signal). ``on_training(jobs)``
    is called once the train job has logged a few steps."""
    deadline, steps, called = time.monotonic() + timeout, [], on_training is None
    try:
        while proc.poll() is None:
            assert time.monotonic() < deadline, f"not finished in {timeout} s:\n{log.read_text()[-3000:]}"
            step = checkpoint_step(run)
            if step is not None and step not in steps:
                steps.append(step)
            metrics = RunFolder(run).metrics
            if not called and metrics.is_file() and len(metrics.read_text().splitlines()) >= 5:
                jobs = slurm_jobs_of_rule("train")
                if jobs:
                    assert not RunFolder(run).summary.is_file(), "the run finished before the signal: raise STEPS"
                    on_training(jobs)
                    called = True
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            proc.kill()
    return steps


def attempt_ending(log: str) -> str:
    """How a stopped attempt ended, from its Slurm log: "stopped" (the trainer checkpointed the step
    it reached and exited 75), "killed" (no one listened: the warning came while Python was still
    starting, before the trainer listens, or after the trainer had returned and put the default
    handler back, while the process exits; the signal's default action ended it, with no step lost)
    or "after training" (the warning came after the last step, while the trainer still listened: it
    finished, but Snakemake inside the job exits 1 after any SIGTERM). Anything else is "unexpected"."""
    if PREEMPTED in log:
        return "stopped"
    if KILLED in log:
        return "killed"
    return "after training" if WARNED in log else "unexpected"


def check_resumed_where_stopped(repo: Path, run: Path, reference: Path, out: str,
                                steps: list[int]) -> tuple[list[int], list[int]]:
    """Each attempt but the last ended on its warning without losing a step: most stopped with a
    checkpoint of the step they reached (exit 75, between periodic checkpoints: each a new step
    ``watch`` saw), and some had no step to stop at (``attempt_ending``: killed before the trainer
    listened or after it returned, or warned after its last step; each costs a retry, not a step). The
    last attempt resumed at the last checkpoint: the last stop's, or the last step's when an attempt
    after that stop trained to the end (its own log then says the run had finished). Every step is
    logged once; the run ends bit for bit where a run never stopped ends. ``steps``: the checkpoint
    steps ``watch`` saw. Returns the Slurm job ids and the stops."""
    attempts = [(int(slurm_id), Path(log)) for _, slurm_id, log in SUBMITTED.findall(out) if "rule_train" in log]
    endings = [attempt_ending(log.read_text()) for _, log in attempts[:-1]]
    assert "unexpected" not in endings, [(a, e, log.read_text()[-2000:]) for (a, log), e in zip(attempts, endings)
                                         if e == "unexpected"]
    stops = [k for k in steps if k < STEPS]
    assert stops, f"no attempt was stopped (checkpoint steps {steps}): the run outran its signal; raise STEPS"
    assert endings.count("stopped") == len(stops), (endings, steps)
    assert all(0 < k < STEPS and k % CHECKPOINT_EVERY for k in stops) and stops == sorted(stops), stops
    last_log = (repo / "results" / "smoke" / "logs" / "train" / "main" / "clip-tiny-seed0.log").read_text()
    finished_before = ALREADY_FINISHED.findall(last_log)
    assert finished_before in ([], [str(STEPS)]), finished_before
    if finished_before:  # an attempt after the last stop trained to the end and was ended on its way out
        assert endings[-1] != "stopped", (endings, stops)
    else:
        assert "after training" not in endings, f"an attempt warned after its last step, but the retry trained: {endings}"
    last = STEPS if finished_before else stops[-1]
    assert RESUMED.findall(last_log) == [str(last)], (last_log[-2000:], endings, stops)  # the last attempt's log
    ended = slurm_states([attempts[-1][0]])
    assert ended == {attempts[-1][0]: "COMPLETED"}, ended
    if endings.count("stopped") < len(endings):
        print(f"attempts that had no step to stop at: {[e for e in endings if e != 'stopped']}")
    rows = read_metrics(RunFolder(run).metrics)
    assert [r["step"] for r in rows] == list(range(2, STEPS + 1, 2)), "every step logged once, none twice"
    assert json.loads(RunFolder(run).summary.read_text())["steps"] == STEPS
    assert comparable(rows) == comparable(read_metrics(RunFolder(reference).metrics))
    weights = torch.load(RunFolder(run).checkpoint, weights_only=True)["model"]
    again = torch.load(RunFolder(reference).checkpoint, weights_only=True)["model"]
    assert weights.keys() == again.keys() and all(torch.equal(weights[k], again[k]) for k in weights)
    return [slurm_id for slurm_id, _ in attempts], stops


@pytest.fixture(scope="module")
def never_stopped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The long run, never stopped, trained here from a checkout's smoke data (the same config and data)."""
    repo, _, _ = long_run(tmp_path_factory.mktemp("never_stopped"))
    data = subprocess.run(snakemake_cmd("data/smoke/hiershapes/manifest.json", "--cores", "1",
                                        configs=("config/long.yaml",)),
                          check=False, cwd=repo, capture_output=True, text=True, timeout=900, env=child_env())
    assert data.returncode == 0, data.stderr[-3000:]  # the DAG build wrote results/smoke/groups/main.yaml
    reference = repo.parent / "reference"
    proc = subprocess.run([sys.executable, "-m", "argent", "train", "--config", "results/smoke/groups/main.yaml",
                           "--variant", "clip", "--size", "tiny", "--seed", "0", "--out", str(reference),
                           "--threads", "1", "--set", "tracking.enabled=false"],
                          check=False, cwd=repo, capture_output=True, text=True, timeout=900, env=child_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return reference


def test_a_training_job_signalled_mid_run_checkpoints_that_step_and_resumes_there(slurm, never_stopped, tmp_path):
    """A preemption's SIGTERM (`scancel --signal=TERM`, as Slurm sends before it kills) between two periodic
    checkpoints: the trainer checkpoints the step it reaches, the profile's retry resumes at that step."""
    repo, run, target = long_run(tmp_path)
    log = tmp_path / "snakemake.log"
    proc = subprocess.Popen(snakemake_cmd(target, "--profile", "profiles/slurm", "--jobs", "1", *SITE,
                                          configs=("config/long.yaml",)),
                            cwd=repo, env=child_env(), stdout=log.open("w"), stderr=subprocess.STDOUT)
    signalled = []

    def preempt(jobs: list[int]) -> None:
        signalled.append(jobs[0])
        subprocess.run(["scancel", "--signal=TERM", str(jobs[0])], check=True, env=child_env())

    steps = watch(proc, run, log, on_training=preempt)
    out = log.read_text()
    assert proc.returncode == 0, out[-5000:]
    attempts, stops = check_resumed_where_stopped(repo, run, never_stopped, out, steps)
    assert attempts[0] == signalled[0] and len(attempts) == 2, (attempts, signalled)
    print(f"Slurm job {signalled[0]} signalled; stopped at step {stops[0]} of {STEPS}, resumed there in job {attempts[1]}")


def test_a_training_job_at_its_time_limit_checkpoints_the_step_it_reached(slurm, never_stopped, tmp_path):
    """One-minute time limits with the profile's warning (here 20 s before the limit): every attempt is
    stopped by it (or by the limit's own SIGTERM) at some step, and the next resumes at exactly that step."""
    repo, run, target = long_run(tmp_path)
    log = tmp_path / "snakemake.log"
    limits = ["--set-resources", "train:runtime=1", "train:slurm_extra='--signal=TERM@20'"]
    proc = subprocess.Popen(snakemake_cmd(target, "--profile", "profiles/slurm", "--jobs", "1", *SITE, *limits,
                                          "--retries", "8", configs=("config/long.yaml",)),
                            cwd=repo, env=child_env(), stdout=log.open("w"), stderr=subprocess.STDOUT)
    steps = watch(proc, run, log)
    out = log.read_text()
    assert proc.returncode == 0, out[-5000:]
    attempts, stops = check_resumed_where_stopped(repo, run, never_stopped, out, steps)
    print(f"Slurm jobs of the train job: {attempts}; stopped at steps {stops} of {STEPS}, each resumed there")


def test_a_wrong_partition_is_a_clear_message(slurm, tmp_path):
    repo = checkout(tmp_path / "repo")
    site = [arg if arg != "slurm_partition=debug" else "slurm_partition=no_such_partition" for arg in SITE]
    proc = snakemake(repo, "data/smoke/hiershapes/manifest.json", "--profile", "profiles/slurm", "--jobs", "1",
                     *site, "--retries", "0", timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "no_such_partition" in out and re.search(r"[Ii]nvalid partition", out), out[-3000:]
