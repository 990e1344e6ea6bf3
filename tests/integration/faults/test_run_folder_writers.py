"""One writer per run folder (issue 37 item 3), a promotion that cannot lose a finished run, data
counts that survive every resume, and ``argent restamp`` on damaged inputs (item 2).

Real processes where the case is about processes (two writers at once; a writer killed while it
holds the lock); kills inside the promotion are in-process exceptions at each of its renames (the
state on disk is the one a SIGKILL at that instant leaves)."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from unittest import mock

import pytest
import torch
import yaml

import argent.engine.trainer as trainer
from argent.config import IDENTITY_VERSION, WorkflowConfig, experiment_from_dict
from argent.config.groups import TUNED_VARIANT, RunKey, run_experiment
from argent.engine.preemption import Preempted
from argent.engine.step import TrainingDiverged
from argent.engine.trainer import train
from argent.io import ArgentError
from argent.models import build_model
from argent.models.trained import load_model
from argent.plan.cli import merged_config
from argent.plan.groups import build_plan
from argent.restamp.stamp import _tuned_overrides, restamp_run
from argent.runs import RunFolder, RunFolderBusy, hold_writer, legacy_hash, read_metrics, run_dir
from tests.fixtures import ROOT, SCRIPTS, TINY, bad_shard, checksums, nan_at, stream, tiny_exp, train_tiny

SCRIPT = SCRIPTS / "writer_run.py"
ENV = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def writer(out: Path, *args: str) -> list[str]:
    return [sys.executable, str(SCRIPT), str(out), *args]


def wait_for(path: Path, proc: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists():
        assert proc.poll() is None, proc.communicate()[1][-2000:]
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def run_files(folder: Path) -> dict[str, str]:
    """Checksums of a run's own files (the lock file's text names whoever holds it, if anyone)."""
    return {k: v for k, v in checksums(folder).items() if k != ".writer.lock"}


# ---- one writer per run folder -----------------------------------------------------------------


def test_a_second_writer_stops_at_once_naming_the_first_which_finishes(tmp_path):
    """Two processes train into one folder (the issue's two clones, 6 and 4 steps): the second stops
    before touching anything, naming the first (pid, host, since) and the folder; the first finishes
    its run, whole. Before: both exited 0 and the folder held a mix."""
    run, ready, go = tmp_path / "run", tmp_path / "ready", tmp_path / "go"
    first = subprocess.Popen(writer(run, "--steps", "6", "--hold-at", "3", "--ready", str(ready), "--go", str(go)),
                             env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(ready, first)  # the first is at step 3, its step-2 checkpoint written
        before = checksums(run)
        second = subprocess.run(writer(run, "--steps", "4"), env=ENV, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr[-2000:]
        err = second.stderr
        assert str(run) in err and f"pid {first.pid} on " in err and "since " in err and "argent train" in err, err
        assert "Traceback" not in err
        assert checksums(run) == before  # the second wrote nothing, not even the lock file
        go.touch()
        out, err = first.communicate(timeout=120)
    finally:
        go.touch()
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err[-2000:]
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 6 and load_model(run)[1].train.steps == 6
    assert torch.load(run / "checkpoint.pt", weights_only=True)["step"] == 6
    assert [r["step"] for r in read_metrics(run / "metrics.jsonl")] == [1, 2, 3, 4, 5, 6]
    assert not (run / ".staging").exists() and (run / ".writer.lock").read_text() == ""  # released


def test_a_writer_killed_while_holding_the_lock_blocks_nobody(tmp_path):
    run = tmp_path / "run"
    killed = subprocess.Popen(writer(run, "--steps", "4", "--kill-at", "3"), env=ENV, stderr=subprocess.PIPE, text=True)
    _, err = killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL, err[-2000:]
    stale = (run / ".writer.lock").read_text()
    assert f"pid {killed.pid}\n" in stale and "argent train" in stale  # the dead holder's record is still there
    summary = train_tiny(run, resume="strict", steps=4)  # the kernel released the lock with the process
    assert summary["steps"] == 4 and (run / ".writer.lock").read_text() == ""


def test_the_lock_names_its_holder_and_is_released_on_every_exit(tmp_path):
    run = tmp_path / "run"
    with hold_writer(RunFolder(run), "a test holder"):
        with pytest.raises(RunFolderBusy) as info:
            train_tiny(run)
        message = str(info.value)
        assert str(run) in message and f"pid {os.getpid()} on " in message and "a test holder" in message
        assert sorted(p.name for p in run.iterdir()) == [".writer.lock"]  # nothing written
    with pytest.raises(TrainingDiverged):  # an exception: released
        train(tiny_exp(steps=4), run, batches=stream, batch_hook=nan_at(1))
    with hold_writer(RunFolder(run), "check"):
        pass

    def signal_at_1(step, batch):
        if step == 1:
            os.kill(os.getpid(), signal.SIGUSR1)
        return batch
    with pytest.raises(Preempted):  # a signal-driven exit: released
        train(tiny_exp(steps=4, checkpoint_every=4), run, batches=stream, batch_hook=signal_at_1)
    assert train_tiny(run, resume="auto", steps=4)["steps"] == 4


# ---- promotion: a finished run is never lost -------------------------------------------------------


def staged_and_killed_before_promotion(finished_run: Path) -> tuple[dict, dict]:
    """A 4-step re-run of the 2-step ``finished_run``, finished in ``.staging/``; killed as its
    promotion begins. Returns (the old run's checksums, the staged run's)."""
    old = run_files(finished_run)
    with mock.patch.object(trainer, "promote", side_effect=KeyboardInterrupt("killed")):
        with pytest.raises(KeyboardInterrupt):
            train(tiny_exp(steps=4), finished_run, resume="auto", batches=stream)
    staged = checksums(finished_run / ".staging")
    assert "summary.json" in staged and run_files(finished_run) == {**old, **{f".staging/{k}": v for k, v in staged.items()}}
    return old, staged


def renames_of_a_promotion(folder: Path) -> int:
    scratch = folder.parent / "count"
    shutil.copytree(folder, scratch)
    real, calls = os.replace, []
    with mock.patch("os.replace", side_effect=lambda a, b: (calls.append(1), real(a, b))):
        trainer.promote(RunFolder(scratch).staging, RunFolder(scratch))
    shutil.rmtree(scratch)
    return len(calls)


def test_a_kill_at_any_instant_of_a_promotion_then_a_start_with_the_old_config_keeps_the_new_run(finished_run):
    """The issue's LOST case: a kill inside the promotion of a finished staged re-run, then a start
    with the old config (which fails at its first step, so the folder shows what the start kept).
    At every rename of the promotion, and between its two deletions, the finished staged run
    survives: the start completes the promotion first (before: it deleted the staged run as "a staged
    re-run of another config", the old run's files already gone)."""
    old, new = staged_and_killed_before_promotion(finished_run)
    base = finished_run.parent / "base"
    shutil.copytree(finished_run, base)
    n = renames_of_a_promotion(base)  # six files aside, the folder's rename, six files in
    real_replace, real_rmtree = os.replace, shutil.rmtree

    def killed_at_rename(k):
        calls = []

        def replace(a, b):
            calls.append(1)
            if len(calls) == k:
                raise KeyboardInterrupt(f"killed at rename {k}")
            real_replace(a, b)
        return mock.patch("os.replace", side_effect=replace)

    def killed_at_delete(k):
        calls = []

        def rmtree(path, *a, **kw):
            calls.append(1)
            if len(calls) == k:
                raise KeyboardInterrupt(f"killed at deletion {k}")
            real_rmtree(path, *a, **kw)
        return mock.patch("shutil.rmtree", side_effect=rmtree)

    kills = [(f"rename {k}", killed_at_rename(k)) for k in range(1, n + 1)]
    kills += [(f"deletion {k}", killed_at_delete(k)) for k in (1, 2)]
    for where, kill in kills:
        real_rmtree(finished_run)
        shutil.copytree(base, finished_run)
        with kill, pytest.raises(KeyboardInterrupt):
            trainer.promote(RunFolder(finished_run).staging, RunFolder(finished_run))
        # The start with the old config (2 steps) fails at its first step.
        with pytest.raises(KeyboardInterrupt):
            train(tiny_exp(steps=2), finished_run, resume="auto", batches=stream,
                  batch_hook=lambda step, batch: (_ for _ in ()).throw(KeyboardInterrupt("stopped")))
        assert run_files(finished_run) == new, where  # the finished staged run, moved in whole
        assert load_model(finished_run)[1].train.steps == 4
        assert not any((finished_run / name).exists() for name in (".staging", ".replacing", ".replaced"))


def test_the_old_run_stays_whole_until_the_new_one_is_whole(finished_run):
    """At every instant of a promotion one of the two runs is whole where the next start looks: the
    old one across the folder and ``.replacing/`` before the switch, the new one across
    ``.staging/`` and the folder after it."""
    old, new = staged_and_killed_before_promotion(finished_run)
    base = finished_run.parent / "base"
    shutil.copytree(finished_run, base)
    real_replace = os.replace
    for k in range(1, renames_of_a_promotion(base) + 1):
        shutil.rmtree(finished_run)
        shutil.copytree(base, finished_run)
        calls = []

        def replace(a, b, calls=calls, k=k):
            calls.append(1)
            if len(calls) == k:
                raise KeyboardInterrupt
            real_replace(a, b)
        with mock.patch("os.replace", side_effect=replace), pytest.raises(KeyboardInterrupt):
            trainer.promote(RunFolder(finished_run).staging, RunFolder(finished_run))
        files = run_files(finished_run)
        top = {k2: v for k2, v in files.items() if "/" not in k2}
        aside = {k2.split("/", 1)[1]: v for k2, v in files.items() if k2.startswith((".replacing/", ".replaced/"))}
        staged = {k2.split("/", 1)[1]: v for k2, v in files.items() if k2.startswith(".staging/")}
        if (finished_run / ".replaced").exists():  # after the switch: the old run aside, the new one moving in
            assert aside == old and {**top, **staged} == new, k
        else:  # before: the old run moving aside, the new one staged
            assert {**top, **aside} == old and staged == new, k


# ---- data counts survive every resume path -------------------------------------------------------------


def counting_exp(shards: Path):
    cfg = {**TINY, "train": {**TINY["train"], "steps": 2, "batch_size": 4, "checkpoint_every": 1, "shuffle_buffer": 1},
           "data": {"train_shards": str(shards / "shard-*.tar"), "format": "plain", "augment": False}}
    return experiment_from_dict(cfg, "meru", "tiny", 0, base_dir=ROOT)


def test_a_kill_between_the_final_checkpoint_and_the_summary_keeps_the_data_counts(tmp_path):
    shards = tmp_path / "shards"
    shards.mkdir()
    bad_shard(shards / "shard-000000.tar")
    torch.set_num_threads(1)
    whole = train(counting_exp(shards), tmp_path / "whole")
    assert whole["skipped_samples"]  # the counts this case is about
    run = tmp_path / "run"
    with mock.patch.object(trainer, "plot_curves", side_effect=KeyboardInterrupt("killed")):
        with pytest.raises(KeyboardInterrupt):
            train(counting_exp(shards), run)
    assert not (run / "summary.json").exists()
    state = torch.load(run / "checkpoint.pt", weights_only=True)
    assert state["step"] == 2 and state["data_counts"]["skipped_samples"] == whole["skipped_samples"]
    resumed = train(counting_exp(shards), run, resume="strict")
    for key in ("skipped_samples", "dropped_samples"):
        assert resumed[key] == whole[key], key  # before: {} (the resumed stream read nothing)
        assert json.loads((run / "summary.json").read_text())[key] == whole[key]


# ---- argent restamp ------------------------------------------------------------------------------------

SETS = ["train.steps=2", "train.batch_size=8", "train.checkpoint_every=2", "train.log_every=1",
        "optim.warmup_steps=1", "tracking.enabled=false"]
COUNTS = {"skipped_samples": {"missing_image": 3}, "dropped_samples": {"no_box_kept": 2}}


def small_stream(start: int):
    """Batches for the default config's tiny model (32 px, context 24)."""
    for batch in stream(start):
        yield {**batch, "image": batch["image"][:, :, :32, :32], "crop": batch["crop"][:, :, :32, :32],
               "text": batch["text"][:, :24], "phrase": batch["phrase"][:, :24]}


def trained_legacy_run(results: Path):
    """A real 2-step run of the workflow's main/clip/tiny/0, then stamped as before run identity (the
    legacy hash, no identity version, no counts in the checkpoint) with data counts in its summary."""
    cfg = merged_config(Path("config/config.yaml"), SETS, ROOT)
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    exp = run_experiment(plan.configs["main"], RunKey("main", "clip", "tiny", 0), ROOT)
    folder = run_dir(results, "main", "clip", "tiny", 0)
    torch.set_num_threads(1)
    train(exp, folder, batches=small_stream)
    old = legacy_hash(yaml.safe_load((folder / "config.yaml").read_text()))
    state = torch.load(folder / "checkpoint.pt", weights_only=True)
    for key in ("identity_version", "data_counts"):
        state.pop(key, None)
    torch.save({**state, "config_hash": old}, folder / "checkpoint.pt")
    summary = json.loads((folder / "summary.json").read_text())
    summary.pop("identity_version")
    (folder / "summary.json").write_text(json.dumps({**summary, "config_hash": old, **COUNTS}))
    return folder, exp, cfg, plan


def test_a_restamp_whose_summary_write_fails_says_so_and_no_count_is_lost(tmp_path):
    folder, exp, cfg, plan = trained_legacy_run(tmp_path / "results")
    full = OSError(errno.ENOSPC, "No space left on device")
    with mock.patch("argent.restamp.stamp.atomic_write_json", side_effect=full):
        outcome = restamp_run(folder, cfg, plan, ROOT)
    assert outcome.status == "refused"  # before: the OSError escaped (a traceback, the other folders skipped)
    assert "summary.json" in outcome.message and "checkpoint was re-stamped" in outcome.message
    assert "was not changed" in outcome.message and "argent restamp again" in outcome.message
    after_failure = tmp_path / "copy"
    shutil.copytree(folder, after_failure)

    # The next restamp finishes the summary (before: "already stamped", the summary left stale).
    again = restamp_run(folder, cfg, plan, ROOT)
    assert again.status == "restamped" and "summary.json" in again.message, again.message
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["config_hash"] == exp.result_hash() and {k: summary[k] for k in COUNTS} == COUNTS
    assert restamp_run(folder, cfg, plan, ROOT).status == "current"

    # Or the next train job runs first: it re-writes the summary with the run's counts (before: zeroed).
    summary = train(exp, after_failure, resume="auto", batches=small_stream)
    assert {k: summary[k] for k in COUNTS} == COUNTS and summary["config_hash"] == exp.result_hash()


def test_a_train_job_after_a_half_restamp_of_before_this_fix_keeps_the_counts(tmp_path):
    """The state an earlier restamp left when its summary write failed: the checkpoint current but
    without counts, summary.json of the old hash. The next train job (finished, nothing to train)
    writes the summary anew with the counts of that summary (before: zeroed)."""
    folder, exp, cfg, plan = trained_legacy_run(tmp_path / "results")
    state = torch.load(folder / "checkpoint.pt", weights_only=True)
    torch.save({**state, "config_hash": exp.result_hash(), "identity_version": IDENTITY_VERSION}, folder / "checkpoint.pt")
    summary = train(exp, folder, resume="auto", batches=small_stream)
    assert {k: summary[k] for k in COUNTS} == COUNTS and summary["config_hash"] == exp.result_hash()


def test_restamp_refuses_a_folder_a_trainer_is_writing(tmp_path):
    folder, exp, cfg, plan = trained_legacy_run(tmp_path / "results")
    before = checksums(folder)
    with hold_writer(RunFolder(folder), "argent train"):
        outcome = restamp_run(folder, cfg, plan, ROOT)
    assert outcome.status == "refused" and f"pid {os.getpid()}" in outcome.message and str(folder) in outcome.message
    assert run_files(folder) == {k: v for k, v in before.items() if k != ".writer.lock"}


@pytest.mark.parametrize("text, expected", [
    ("variant:\n  entailment_weight: [0.1,\n", "not valid YAML"),
    ("- entailment_weight\n- 0.2\n", "found list"),
    ("variant: [0.1, 0.2]\n", "found variant: list"),
    ("variant: {entailment_weight: 0.1}\nvariant: {}\n", "duplicate key 'variant'"),
])
def test_a_torn_or_misshapen_best_yaml_is_one_error_naming_it(tmp_path, text, expected):
    cfg = merged_config(Path("config/config.yaml"), [], ROOT)
    best = tmp_path / "results" / "tune" / cfg["tune"]["study"] / "best.yaml"
    best.parent.mkdir(parents=True)
    best.write_text(text)
    with pytest.raises(ArgentError) as info:  # before: a yaml or attribute error (a traceback)
        _tuned_overrides(cfg, tmp_path / "results", TUNED_VARIANT)
    assert str(best) in str(info.value) and expected in str(info.value)


def test_restamp_of_a_folder_not_named_seed_k_is_one_message(tmp_path, capsys):
    from argent.cli import main as argent_main

    exp = run_experiment(*_main())
    folder = tmp_path / "results" / "runs" / "main" / "clip-tiny" / "latest"
    folder.mkdir(parents=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(exp.to_dict(), sort_keys=False))
    old = legacy_hash(yaml.safe_load((folder / "config.yaml").read_text()))
    torch.save({"model": build_model(exp.model, exp.variant.geometry).state_dict(), "config_hash": old},
               folder / "checkpoint.pt")
    code = argent_main(["restamp", "--run", str(folder), "--base-dir", str(ROOT)])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert str(folder) in err and "seed<k>" in err


def _main():
    cfg = merged_config(Path("config/config.yaml"), [], ROOT)
    return build_plan(WorkflowConfig(cfg), ROOT).configs["main"], RunKey("main", "clip", "tiny", 0), ROOT
