"""The smoke DAG on a real one-node Slurm cluster (scripts/slurm-local.sh) through profiles/slurm:
every job is a Slurm job, and the tables equal those of a local run; its two Optuna workers, two
Slurm jobs sharing the stack's PostgreSQL, finish exactly the trial budget; a training job killed
with `scancel` is resubmitted by the profile's retries and resumes from its checkpoint, ending where
a run that was never killed ends."""

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

from argent.layout import RunFolder, run_dir
from argent.runs import read_metrics

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
    local_rules = 1  # `all` runs on the submitting host
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


STEPS, CHECKPOINT_EVERY = 240, 20  # long enough to be caught after its first checkpoint


def slurm_jobs_of_rule(rule: str) -> list[int]:
    """Running Slurm jobs of a rule (the plugin puts rule_<name>_wildcards_... in the job's comment)."""
    out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%i %k"], check=False, capture_output=True, text=True,
                         env=child_env()).stdout
    return [int(i) for i, comment in (line.split(maxsplit=1) for line in out.splitlines() if " " in line)
            if comment.startswith(f"rule_{rule}_")]


def comparable(rows: list[dict]) -> list[dict]:
    """metrics.jsonl without its timings (perf/*), which differ between any two runs."""
    return [{k: v for k, v in row.items() if not k.startswith("perf/")} for row in rows]


def test_a_training_job_cancelled_mid_run_is_resubmitted_and_resumes(slurm, tmp_path):
    repo = checkout(tmp_path / "repo")
    # One longer training of the smoke config (its data generated first, a Slurm job too).
    overrides = {"train": {"steps": STEPS, "checkpoint_every": CHECKPOINT_EVERY, "log_every": 2}}
    (repo / "config" / "scancel.yaml").write_text(yaml.safe_dump(overrides))
    run = run_dir(repo / "results" / "smoke", "main", "clip", "tiny", 0)
    target = str((run / "summary.json").relative_to(repo))
    log = tmp_path / "snakemake.log"
    proc = subprocess.Popen(snakemake_cmd(target, "--profile", "profiles/slurm", "--jobs", "1", *SITE,
                                          configs=("config/scancel.yaml",)),
                            cwd=repo, env=child_env(), stdout=log.open("w"), stderr=subprocess.STDOUT)
    try:
        deadline, cancelled = time.monotonic() + 900, None
        while cancelled is None:  # wait for the first checkpoint, then cancel the job as an admin would
            assert proc.poll() is None, f"snakemake ended before the cancel:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"no checkpoint in 15 min:\n{log.read_text()[-3000:]}"
            jobs = slurm_jobs_of_rule("train")
            if jobs and RunFolder(run).checkpoint.is_file():
                assert not RunFolder(run).summary.is_file(), "the run finished before the cancel: raise STEPS"
                cancelled = jobs[0]
                subprocess.run(["scancel", str(cancelled)], check=True, env=child_env())
            time.sleep(0.2)
        proc.wait(timeout=1200)
    finally:
        if proc.poll() is None:
            proc.kill()
    out = log.read_text()
    assert proc.returncode == 0, out[-5000:]

    attempts = [(job, int(slurm_id)) for job, slurm_id, log in SUBMITTED.findall(out) if "rule_train" in log]
    print(f"train job cancelled: Slurm job {cancelled}; submissions: {attempts}")
    assert len(attempts) == 2 and attempts[0][0] == attempts[1][0], "one job, resubmitted once"
    assert attempts[0][1] == cancelled
    assert slurm_states([cancelled, attempts[1][1]]) == {cancelled: "CANCELLED", attempts[1][1]: "COMPLETED"}
    # The second attempt resumed from the checkpoint the cancelled one left (its log: the rule's log).
    resumed = re.findall(r"resumed \S+ at step (\d+)", (repo / "results" / "smoke" / "logs" / "train" /
                                                        "main" / "clip-tiny-seed0.log").read_text())
    assert len(resumed) == 1 and 0 < int(resumed[0]) < STEPS and int(resumed[0]) % CHECKPOINT_EVERY == 0, resumed
    print(f"resumed at step {resumed[0]} of {STEPS}")
    rows = read_metrics(RunFolder(run).metrics)
    assert [r["step"] for r in rows] == list(range(2, STEPS + 1, 2)), "every step logged once, none twice"
    assert json.loads(RunFolder(run).summary.read_text())["steps"] == STEPS

    # The same run, never killed, trained here: the resumed run ends exactly where it ends.
    reference = tmp_path / "reference"
    proc = subprocess.run([sys.executable, "-m", "argent", "train", "--config", "results/smoke/groups/main.yaml",
                           "--variant", "clip", "--size", "tiny", "--seed", "0", "--out", str(reference),
                           "--threads", "1", "--set", "tracking.enabled=false"],
                          check=False, cwd=repo, capture_output=True, text=True, timeout=900, env=child_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert comparable(rows) == comparable(read_metrics(RunFolder(reference).metrics))
    weights = torch.load(RunFolder(run).checkpoint, weights_only=True)["model"]
    again = torch.load(RunFolder(reference).checkpoint, weights_only=True)["model"]
    assert weights.keys() == again.keys() and all(torch.equal(weights[k], again[k]) for k in weights)


def test_a_wrong_partition_is_a_clear_message(slurm, tmp_path):
    repo = checkout(tmp_path / "repo")
    site = [arg if arg != "slurm_partition=debug" else "slurm_partition=no_such_partition" for arg in SITE]
    proc = snakemake(repo, "data/smoke/hiershapes/manifest.json", "--profile", "profiles/slurm", "--jobs", "1",
                     *site, "--retries", "0", timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "no_such_partition" in out and re.search(r"[Ii]nvalid partition", out), out[-3000:]
