"""The smoke DAG on a real one-node Slurm cluster (scripts/slurm-local.sh) through profiles/slurm:
every job is a Slurm job, and the tables equal those of a local run."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from stackutil import ROOT, child_env, script

pytestmark = [pytest.mark.stack, pytest.mark.timeout(3600)]  # a DAG of ~20 Slurm jobs on 2 cores

SLURM = ROOT / "scripts" / "slurm-local.sh"
SHARED = ROOT.parent / "shared"
# This cluster has no accounting daemon (so squeue, not sacct, reports job states), one partition
# `debug`, and 2 CPUs; the profile's defaults are for a real cluster.
SITE = ["--slurm-status-command", "squeue", "--slurm-no-account", "--seconds-between-status-checks", "5",
        "--default-resources", "slurm_partition=debug", "cpus_per_task=1", "mem_mb=1000", "runtime=30"]
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


def snakemake(cwd: Path, *args: str, timeout: int = 1500) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--configfile", "config/smoke.yaml", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=child_env())


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
def smoke_on_slurm(slurm, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The smoke DAG run once through profiles/slurm: (its folder, snakemake's output)."""
    repo = checkout(tmp_path_factory.mktemp("slurm_smoke") / "repo")
    proc = snakemake(repo, "--profile", "profiles/slurm", "--jobs", "4", *SITE)
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
    counts = re.search(r"Job stats:\n.*?\ntotal\s+(\d+)", out, re.S)
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
    query = ["squeue", "-h", "-t", "all", "-o", "%i %T", "-j", ",".join(str(i) for i, _ in last.values())]
    states = dict(line.split() for line in subprocess.run(query, capture_output=True, text=True,
                                                          env=child_env()).stdout.splitlines() if line.strip())
    assert set(states.values()) == {"COMPLETED"} and len(states) == len(last), states

    local = local_tables(tmp_path)
    on_slurm = repo / "results" / "smoke" / "tables"
    for name in ("main", "ablations"):
        a, b = pl.read_csv(on_slurm / f"{name}.csv"), pl.read_csv(local / f"{name}.csv")
        assert a.columns == b.columns and a.height == b.height
        keys = [c for c in a.columns if a[c].dtype == pl.String]
        a, b = a.sort(keys), b.sort(keys)
        assert a.select(keys).equals(b.select(keys))
        for column in (c for c in a.columns if c not in keys):
            differ = [(row, x, y) for row, x, y in zip(a["row"], a[column], b[column]) if not same_number(x, y)]
            assert not differ, (name, column, differ[:5])


def test_a_wrong_partition_is_a_clear_message(slurm, tmp_path):
    repo = checkout(tmp_path / "repo")
    site = [arg if arg != "slurm_partition=debug" else "slurm_partition=no_such_partition" for arg in SITE]
    proc = snakemake(repo, "--profile", "profiles/slurm", "--jobs", "1", *site, "--retries", "0",
                     "--", "data/smoke/hiershapes/manifest.json", timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "no_such_partition" in out and re.search(r"[Ii]nvalid partition", out), out[-3000:]
