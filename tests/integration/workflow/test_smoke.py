"""End-to-end: the whole Snakemake DAG on config/smoke.yaml, then its incremental behaviour.

One run of every rule (data, cleaning, negatives, training, evaluation, tuning, probe, tables) in a
few minutes. Outputs go to results/smoke and data/smoke (git-ignored), wiped first.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from argent.io import flatten
from argent.tracking import metric_key
from tests.fixtures import ROOT, SHARED
from tests.integration.workflow import readme

RESULTS = ROOT / "results" / "smoke"
SMOKE = ["--configfile", "config/smoke.yaml"]


def snakemake(*args: str, timeout: int = 1500, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", **(env or {})}
    cmd = [sys.executable, "-m", "snakemake", "--cores", "2", *SMOKE, *args]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def smoke_run():
    for path in (RESULTS, ROOT / "data" / "smoke"):
        shutil.rmtree(path, ignore_errors=True)
    proc = snakemake()
    if proc.returncode != 0:
        logs = "\n".join(f"--- {p}\n{p.read_text()[-1500:]}" for p in sorted((RESULTS / "logs").rglob("*.log"))[-6:])
        pytest.fail(f"snakemake failed:\n{proc.stderr[-4000:]}\n{logs}")
    return proc


def test_dag_produces_tables_with_every_cell_filled(smoke_run):
    for name in ("main", "ablations"):
        assert (RESULTS / "tables" / f"{name}.md").is_file()
        cells = pl.read_csv(RESULTS / "tables" / f"{name}.csv")
        present = cells.filter(pl.col("n") > 0)
        assert present.height > 0
        # Every (row, column) the smoke config asks for was evaluated, apart from real-data
        # columns when ../shared/data is absent and PEP of the Euclidean CLIP (n/a by definition).
        # Rows of variants the smoke config does not train say "not run" (kept, never dropped).
        missing = cells.filter((pl.col("n") == 0) & (pl.col("status") != "not run")
                               & ~pl.col("benchmark").is_in(["hierarcaps_pep", "sugarcrepe"]))
        missing = missing.filter(~(pl.col("variant").str.ends_with("/clip") & pl.col("benchmark").str.contains("pep")))
        assert missing.height == 0, missing
    claims = pl.read_csv(RESULTS / "tables" / "claims.csv")
    assert claims.filter(pl.col("verdict") == "inconclusive").height > 0  # n = 1 here: no CI, no verdict
    assert (RESULTS / "tables" / "mechanism.md").is_file()
    main = (RESULTS / "tables" / "main.md").read_text()
    assert "argent-tuned" in main and "Published, for orientation only" in main
    # the ablation rows of meru, hycoclip, argent are main's runs (borrowed, same config hash): filled
    ablations = pl.read_csv(RESULTS / "tables" / "ablations.csv")
    borrowed = ablations.filter(pl.col("variant").is_in(["ablations/meru", "ablations/hycoclip", "ablations/argent"]))
    assert borrowed.height > 0 and (borrowed.filter(pl.col("benchmark") == "hs_zeroshot")["n"] == 1).all()
    assert (RESULTS / "figures" / "training_curves.png").stat().st_size > 0
    assert (RESULTS / "figures" / "probe_exposure.png").stat().st_size > 0
    assert (RESULTS / "tune" / "argent_weights" / "best.yaml").is_file()


def test_mlflow_ui_compares_what_the_paper_compares(smoke_run, monkeypatch):
    """Evaluation metrics on every training run, filterable by family; one tables run with the tables."""
    import mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{RESULTS / 'mlflow.db'}")
    runs = mlflow.search_runs(experiment_names=["argent-smoke"], filter_string="tags.family = 'argent'",
                              order_by=["metrics.`eval/hs_zeroshot/top1` DESC"])
    assert sorted(runs["tags.variant"]) == ["argent", "argent-tuned", "argent_negs_cement"]
    top1 = runs["metrics.eval/hs_zeroshot/top1"].tolist()
    assert top1 == sorted(top1, reverse=True)
    for row in runs.to_dict("records"):
        # the experiment group is a tag, and the first part of the run's folders
        group = {"argent": "main", "argent-tuned": "tuning", "argent_negs_cement": "negatives"}[row["tags.variant"]]
        assert row["tags.experiment_group"] == group
        results = sorted((RESULTS / "eval" / group / f"{row['tags.variant']}-tiny" / "seed0").glob("*.json"))
        assert results
        for path in results:
            data = json.loads(path.read_text())
            numbers = {k: v for k, v in flatten(data["metrics"], sep="/").items()
                       if isinstance(v, (int, float)) and not isinstance(v, bool)}
            assert numbers, path
            for key, value in numbers.items():
                assert row[f"metrics.{metric_key('eval', path.stem, key)}"] == value, (path, key)
            assert row[f"tags.eval/{path.stem}/entry_hash"] == data["entry_hash"]
            assert row["tags.config_hash"] == data["config_hash"]
        assert row["tags.group"] in ("main", "negatives") and row["tags.size"] == "tiny" and row["tags.seed"] == "0"
        analysis = {a.path for a in mlflow.MlflowClient().list_artifacts(row["run_id"], "eval/hs_analysis")}
        assert {"eval/hs_analysis/hs_analysis_norms.png", "eval/hs_analysis/hs_analysis_projection.png"} <= analysis

    every = mlflow.search_runs(experiment_names=["argent-smoke"])
    training = every[every["tags.kind"] != "tables"]
    assert set(training["tags.family"]) == {"clip", "meru", "hycoclip", "argent"}
    assert training["metrics.eval/hs_zeroshot/top1"].notna().all()
    tables = every[every["tags.kind"] == "tables"]
    assert len(tables) == 1 and tables["tags.git_commit"].iloc[0] and tables["tags.config_hash"].iloc[0]
    client = mlflow.MlflowClient()
    stored = {a.path for d in ("tables", "figures") for a in client.list_artifacts(tables["run_id"].iloc[0], d)}
    made = {f"tables/{p.name}" for p in (RESULTS / "tables").iterdir() if not p.name.startswith(".")}
    assert made >= {"tables/main.md", "tables/ablations.md", "tables/probe.md"} and made <= stored
    assert "figures/training_curves.png" in stored


def test_every_run_folder_is_complete(smoke_run):
    runs = sorted((RESULTS / "runs").glob("*/*/seed0"))
    names = {f"{r.parent.parent.name}/{r.parent.name}" for r in runs}
    assert names == {"main/clip-tiny", "main/meru-tiny", "main/hycoclip-tiny", "main/argent-tiny",
                     "negatives/argent_negs_cement-tiny", "tuning/argent-tuned-tiny"}  # ablations: all borrowed
    for run in runs:
        for name in ("config.yaml", "metrics.jsonl", "checkpoint.pt", "summary.json"):
            assert (run / name).is_file(), run / name


def test_the_run_showed_its_progress_and_recorded_its_cost_and_hardware(smoke_run):
    """Issue 53: one line per job start and end with jobs done / total and the time left, in the terminal
    Snakemake runs in; a finished training prices the next plan (no `argent plan --record-from`); each
    run's provenance names the CPU it ran on."""
    assert re.search(r"^argent: \[ *\d+/\d+\] start  train main/clip-tiny/seed0", smoke_run.stderr, re.M)
    assert re.search(r"^argent: \[ *\d+/\d+\] done   train main/clip-tiny/seed0 in .* left", smoke_run.stderr, re.M)
    proc = subprocess.run([sys.executable, "-m", "argent", "plan", "--config", "config/smoke.yaml"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    line = proc.stdout.strip().splitlines()[-1]
    assert proc.returncode == 0 and "no estimate" not in line and "CPU-core-h" in line, line
    provenance = json.loads((RESULTS / "runs" / "main" / "clip-tiny" / "seed0" / "provenance.json").read_text())
    assert provenance["cpu_model"] and provenance["cpu_capability"] and provenance["numpy"]


def test_the_readme_commands_run_as_typed_after_the_first_look(smoke_run, tmp_path):
    """Every fenced README command a reader runs after the install, in order, on the smoke run (the first
    look's names rewritten: tests/integration/workflow/readme.py); each block is run or named as skipped."""
    env = {**os.environ, "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
           "MLFLOW_DISABLE_TELEMETRY": "true", "OMP_NUM_THREADS": "1"}
    ran, skipped = [], []
    for lang, text in readme.blocks(ROOT / "README.md"):
        text = readme.on_smoke(text)
        if lang == "python":
            proc = subprocess.run([sys.executable, "-c", text], cwd=ROOT, capture_output=True, text=True, env=env,
                                  timeout=300)
            assert proc.returncode == 0 and "argent" in proc.stdout, proc.stderr[-2000:]
            ran.append("python")
            continue
        if "pip install" in text or "--profile profiles/slurm" in text or "gpu=8" in text:
            skipped.append(text.splitlines()[0])  # the install (CI's own first step) and the GPU/cluster launches
            continue
        for command in readme.commands(text):
            if command.startswith("mlflow ui"):
                _check_mlflow_ui(command, env)
            else:
                line = command if command.startswith("source ") else f"source .venv/bin/activate && {command}"
                proc = subprocess.run(["bash", "-c", line], cwd=ROOT, capture_output=True, text=True, env=env,
                                      timeout=900)
                assert proc.returncode == 0, f"{command}: {proc.stderr[-2000:]}"
            ran.append(command)
    (ROOT / "report.html").unlink(missing_ok=True)
    assert any("--report" in c for c in ran) and any(c.startswith("argent plan") for c in ran), ran
    assert "python" in ran and any(c.startswith("mlflow ui") for c in ran), ran
    assert len(skipped) == 4, skipped  # the three install commands and the block of GPU launches


def _check_mlflow_ui(command: str, env: dict[str, str]) -> None:
    """Start the README's `mlflow ui` as typed, read the smoke run's runs through its REST API, stop it."""
    import time
    import urllib.request

    server = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True)
    try:
        base = "http://127.0.0.1:5000"
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/health", timeout=2)
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()[-2000:]
                time.sleep(1)
        with urllib.request.urlopen(f"{base}/api/2.0/mlflow/experiments/get-by-name?experiment_name=argent-smoke",
                                    timeout=10) as reply:
            experiment = json.load(reply)["experiment"]
        request = urllib.request.Request(f"{base}/api/2.0/mlflow/runs/search", method="POST",
                                         data=json.dumps({"experiment_ids": [experiment["experiment_id"]]}).encode(),
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=10) as reply:
            assert len(json.load(reply).get("runs", [])) >= 6  # the smoke run's trainings and its tables run
    finally:
        server.terminate()
        server.wait(timeout=30)


@pytest.mark.skipif(not (SHARED / "hierarcaps").is_dir(), reason="../shared/data/hierarcaps absent: real-data stages not run")
def test_real_hierarcaps_cleaning_and_pep_ran(smoke_run):
    clean = RESULTS / "data" / "hierarcaps"
    assert (clean / "hierarcaps_clean.csv").is_file() and (clean / "negative_pool.csv").is_file()
    assert pl.read_csv(clean / "negative_pool.csv").height == 100
    assert (RESULTS / "eval" / "main" / "argent-tiny" / "seed0" / "hierarcaps_pep.json").is_file()


def test_second_run_does_nothing(smoke_run):
    proc = snakemake("-n")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr


def test_a_moved_results_folder_replans_nothing(smoke_run, tmp_path):
    """A run's identity is what it computed from, not where it lives (issue 45): the finished smoke
    results renamed, spelled as an absolute or an ``x/../name`` path, or copied with their times
    (``cp -a``), plan no job."""
    moved = RESULTS.with_name("smoke-moved")
    shutil.rmtree(moved, ignore_errors=True)
    RESULTS.rename(moved)
    try:
        for spelling in (str(moved.relative_to(ROOT)), str(moved), f"{moved.relative_to(ROOT)}/runs/../../{moved.name}"):
            proc = snakemake("-n", "--config", f"results={spelling}")
            out = proc.stdout + proc.stderr
            assert proc.returncode == 0 and "Nothing to be done" in out, (spelling, out[-3000:])
    finally:
        moved.rename(RESULTS)
    copied = tmp_path / "copied"
    shutil.copytree(RESULTS, copied, symlinks=True)  # copy2 keeps the times, as cp -a does
    proc = snakemake("-n", "--config", f"results={copied}")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "Nothing to be done" in out, out[-3000:]


def test_reprovisioned_wordnet_with_the_same_bytes_reruns_nothing(smoke_run):
    """A fresh copy of the configured WordNet (new timestamps, same bytes: a new clone, a re-provisioned
    data folder) must not re-run the mining and the negatives trainings that hang on the staged WordNet."""
    staged = RESULTS / "nltk_data" / "corpora" / "wordnet.zip"
    before = staged.stat()
    source = ROOT / "argent" / "resources" / "wordnet-3.0-subset.zip"  # negatives.wordnet_zip of config.yaml
    older = source.stat().st_mtime - 3600  # the source is now newer than its copy, as after re-provisioning
    os.utime(staged, (older, older))
    try:
        proc = snakemake("-n")
    finally:
        os.utime(staged, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]


def test_changing_one_variant_reruns_only_its_jobs_and_the_tables(smoke_run):
    proc = snakemake("-n", "--config", "variant_overrides={meru: {entailment_weight: 0.3}}")
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = proc.stdout + proc.stderr
    train_jobs = [line for line in out.splitlines() if line.strip().startswith("wildcards:") and "variant=" in line]
    assert train_jobs and all("variant=meru," in line for line in train_jobs), train_jobs
    assert "rule tables" in out


def test_an_interrupted_run_resumes_from_its_checkpoint(smoke_run):
    run = RESULTS / "runs" / "main" / "meru-tiny" / "seed0"
    (run / "summary.json").unlink()  # as if the job had been killed after its last checkpoint
    target = str((run / "summary.json").relative_to(ROOT))
    proc = snakemake("--rerun-incomplete", "--allowed-rules", "train", "--", target)
    assert proc.returncode == 0, proc.stderr[-2000:]
    log = (RESULTS / "logs" / "train" / "main" / "meru-tiny-seed0.log").read_text()
    assert "resumed" in log and (run / "summary.json").is_file()


def test_lint_finds_only_the_documented_findings(smoke_run):
    """workflow/README.md explains the two remaining findings (no per-rule conda environments; the
    synth job's parameters file named in its command, not as a param)."""
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--lint", *SMOKE], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    findings = [line.strip() for line in (proc.stdout + proc.stderr).splitlines() if line.startswith("    * ")]
    assert findings, "expected the documented conda finding"
    assert set(findings) == {"* Specify a conda environment or container for each rule.:",
                             "* Shell command directly uses variable HIERSHAPES_PARAMS from outside of the rule:"}, \
        set(findings)


def _with_patched_config(tmp_path: Path, cls: str, name: str, tp: str, default: str) -> dict[str, str]:
    """An environment whose Python adds (or re-defaults) a config field before Snakemake starts, as an
    upgrade of argent would: a sitecustomize that subclasses the dataclass where the loader finds it."""
    (tmp_path / "sitecustomize.py").write_text(
        "import dataclasses\nimport argent.config.experiment as c\n"
        f"c.{cls} = dataclasses.make_dataclass({cls!r}, [({name!r}, {tp}, dataclasses.field(default={default}))], "
        f"bases=(c.{cls},))\n")
    return {"PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), os.environ.get("PYTHONPATH", "")])}


def test_a_new_neutral_config_field_retrains_nothing(smoke_run, tmp_path):
    """Issue 27: adding a field whose default keeps the behaviour leaves every finished run finished."""
    proc = snakemake("-n", env=_with_patched_config(tmp_path, "TrainConfig", "loss_scale_warmup", "int", "0"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Nothing to be done" in proc.stdout + proc.stderr, (proc.stdout + proc.stderr)[-3000:]


def test_a_changed_default_retrains_only_the_runs_that_take_it(smoke_run, tmp_path):
    """huber_beta's default 1.0 -> 0.5: argent (and what extends it) sets 1.0 itself; the others take it."""
    proc = snakemake("-n", env=_with_patched_config(tmp_path, "VariantConfig", "huber_beta", "float", "0.5"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert _planned_variants(proc.stdout + proc.stderr, "train") == {"clip", "meru", "hycoclip"}


def _planned_variants(out: str, rule: str) -> set[str]:
    """The ``variant`` wildcard of every job of ``rule`` in a ``snakemake -n`` listing."""
    variants, current = set(), None
    for line in out.splitlines():
        text = line.strip()
        if text.startswith(("rule ", "localrule ")):
            current = text.split()[1].rstrip(":")
        elif current == rule and text.startswith("wildcards:") and "variant=" in text:
            variants.add(text.split("variant=")[1].split(",")[0])
    return variants
