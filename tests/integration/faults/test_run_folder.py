"""A failed re-run never destroys a finished run; strict resume needs a checkpoint; weights are
checked against their config; corrupt checkpoints are named, and moved aside by --resume auto."""

from __future__ import annotations

import shutil

import pytest
import torch

from argent.engine.step import TrainingDiverged
from argent.engine.trainer import train
from argent.models.trained import load_model
from argent.runs import CheckpointError, read_metrics
from tests.fixtures import checksums, nan_at, stream, tiny_exp, train_tiny, write_config


def test_failed_rerun_keeps_the_finished_run(finished_run, tmp_path, argent):
    before = checksums(finished_run)
    config = write_config(tmp_path / "config.yaml")  # data.train_shards points nowhere
    code, err = argent("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out", finished_run)
    assert code == 2
    assert "no-such-data" in err and "Traceback" not in err
    assert checksums(finished_run) == before
    assert not (finished_run / ".staging").exists()


def test_failed_rerun_with_another_variant_keeps_the_finished_run(finished_run, tmp_path, argent):
    before = checksums(finished_run)
    config = write_config(tmp_path / "config.yaml")
    code, err = argent("train", "--config", config, "--variant", "clip", "--size", "tiny", "--out", finished_run,
                       "--resume", "auto")
    assert code == 2 and "no-such-data" in err
    assert checksums(finished_run) == before
    model, cfg = load_model(finished_run)  # still the meru run, loadable
    assert cfg.variant_name == "meru"


def test_strict_resume_without_checkpoint_is_an_error(tmp_path, argent):
    config = write_config(tmp_path / "config.yaml")
    out = tmp_path / "run"
    code, err = argent("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out", out,
                       "--resume", "strict")
    assert code == 2
    assert str(out / "checkpoint.pt") in err and "--resume strict" in err
    assert not (out / "config.yaml").exists()


def test_checkpoint_of_another_config_is_refused_naming_both_hashes(finished_run, tmp_path):
    other = tmp_path / "other"
    train_tiny(other, variant="clip")
    shutil.copy(other / "checkpoint.pt", finished_run / "checkpoint.pt")  # a mixed folder
    want = load_model.__globals__["read_run_config"](finished_run).result_hash()
    got = torch.load(other / "checkpoint.pt", weights_only=True)["config_hash"]
    with pytest.raises(CheckpointError) as info:
        load_model(finished_run)
    assert want in str(info.value) and got in str(info.value) and "Retrain" in str(info.value)


@pytest.mark.parametrize("damage", ["empty", "truncated"])
def test_corrupt_checkpoint_is_named_by_every_loader(finished_run, tmp_path, argent, damage):
    ckpt = finished_run / "checkpoint.pt"
    data = ckpt.read_bytes()
    ckpt.write_bytes(b"" if damage == "empty" else data[: len(data) // 2])
    before = checksums(finished_run)
    with pytest.raises(CheckpointError, match="checkpoint.pt"):
        load_model(finished_run)
    config = write_config(tmp_path / "config.yaml")
    code, err = argent("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out", finished_run,
                       "--resume", "strict")
    assert code == 2 and str(ckpt) in err and "Traceback" not in err
    bench = tmp_path / "bench.yaml"
    bench.write_text("benchmarks: {zs: {protocol: zeroshot, root: nowhere, taxonomy: nowhere.txt}}\n")
    code, err = argent("evaluate", "--run", finished_run, "--benchmark", "zs", "--config", bench,
                       "--out", tmp_path / "zs.json")
    assert code == 2 and str(ckpt) in err and "Traceback" not in err
    assert checksums(finished_run) == before and not (tmp_path / "zs.json").exists()


def test_resume_auto_moves_a_corrupt_checkpoint_aside_and_starts_fresh(finished_run, caplog):
    ckpt = finished_run / "checkpoint.pt"
    ckpt.write_bytes(ckpt.read_bytes()[:100])
    torn = ckpt.read_bytes()
    train_tiny(finished_run, resume="auto")
    aside = list(finished_run.glob("checkpoint.pt.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == torn  # kept, not deleted
    assert "training from scratch" in caplog.text and str(aside[0]) in caplog.text
    load_model(finished_run)  # the fresh run's checkpoint matches its config
    assert (finished_run / "summary.json").exists()


def interrupted_run(out):
    """A 4-step run stopped at step 3: checkpoint at step 2, metrics for steps 1-3."""
    def stop(step, batch):
        if step == 3:
            raise KeyboardInterrupt
        return batch
    with pytest.raises(KeyboardInterrupt):
        train(tiny_exp(steps=4), out, batches=stream, batch_hook=stop)
    return out


def test_stale_temp_files_and_staging_are_cleaned_on_the_next_start(tmp_path):
    run = interrupted_run(tmp_path / "run")
    stale = [run / ".checkpoint.k1ll3d.pt", run / ".metrics.x.jsonl"]
    for path in stale:
        path.write_bytes(b"")
    (run / ".staging").mkdir()
    (run / ".staging" / "config.yaml").write_text("half")
    train_tiny(run, resume="strict", steps=4)
    assert not any(p.exists() for p in stale) and not (run / ".staging").exists()
    assert [r["step"] for r in read_metrics(run / "metrics.jsonl")] == [1, 2, 3, 4]


def test_torn_last_metrics_line_does_not_block_a_resume(tmp_path):
    run = interrupted_run(tmp_path / "run")
    metrics = run / "metrics.jsonl"
    metrics.write_text(metrics.read_text() + '{"step": 4, "lo')
    train_tiny(run, resume="strict", steps=4)
    assert [r["step"] for r in read_metrics(metrics)] == [1, 2, 3, 4]


def test_malformed_metrics_line_in_the_middle_names_file_and_line(finished_run, argent):
    metrics = finished_run / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    metrics.write_text("\n".join(["{bad", *lines]) + "\n")
    code, err = argent("track", "--run", finished_run, "--uri", "sqlite:///" + str(finished_run.parent / "m.db"))
    assert code == 2 and f"{metrics}: line 1" in err and "Traceback" not in err


def test_track_on_a_torn_config_names_the_file(finished_run, argent):
    config = finished_run / "config.yaml"
    config.write_text(config.read_text()[:-40] + "\n  bad: [")
    code, err = argent("track", "--run", finished_run, "--uri", "sqlite:///" + str(finished_run.parent / "m.db"))
    assert code == 2 and str(config) in err and "Traceback" not in err


def test_default_tracking_store_is_in_the_results_folder(tmp_path):
    from argent.runs import default_tracking_uri, run_dir

    run = run_dir(tmp_path / "results", "main", "meru", "tiny", 0)
    assert default_tracking_uri(run) == f"sqlite:///{(tmp_path / 'results' / 'mlflow.db').resolve()}"
    assert default_tracking_uri(tmp_path / "elsewhere") == f"sqlite:///{(tmp_path / 'elsewhere' / 'mlflow.db').resolve()}"


def test_a_rerun_that_fails_after_its_first_checkpoint_keeps_the_finished_run(finished_run):
    """The issue's case: a finished run re-run with a changed config (6 steps, checkpoints every 2)
    that diverges at step 3, after its first checkpoint. The finished run stays whole and loadable;
    the staged re-run keeps its checkpoint and, once the cause is gone, resumes and replaces it."""
    before = checksums(finished_run)
    with pytest.raises(TrainingDiverged) as info:
        train(tiny_exp(steps=6, checkpoint_every=2), finished_run, resume="auto", batches=stream, batch_hook=nan_at(3))
    assert "untouched" in str(info.value) and ".staging/checkpoint.pt (step 2)" in str(info.value)
    assert {k: v for k, v in checksums(finished_run).items() if not k.startswith(".staging/")} == before
    model, cfg = load_model(finished_run)
    assert cfg.train.steps == 2  # still the finished run
    assert (finished_run / ".staging" / "checkpoint.pt").is_file()

    summary = train(tiny_exp(steps=6, checkpoint_every=2), finished_run, resume="auto", batches=stream)
    assert summary["steps"] == 6 and not (finished_run / ".staging").exists()
    assert load_model(finished_run)[1].train.steps == 6
    assert [r["step"] for r in read_metrics(finished_run / "metrics.jsonl")] == [1, 2, 3, 4, 5, 6]


def test_a_staged_rerun_of_another_config_is_discarded_not_resumed(finished_run):
    with pytest.raises(TrainingDiverged):
        train(tiny_exp(steps=6, checkpoint_every=2), finished_run, resume="auto", batches=stream, batch_hook=nan_at(3))
    summary = train(tiny_exp(steps=4, checkpoint_every=2), finished_run, resume="auto", batches=stream)
    assert summary["steps"] == 4 and load_model(finished_run)[1].train.steps == 4
    assert [r["step"] for r in read_metrics(finished_run / "metrics.jsonl")] == [1, 2, 3, 4]
