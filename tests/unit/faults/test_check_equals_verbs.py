"""`argent check` and the verbs refuse the same things, both ways (issue 54, item 4): each refusal below is
made by ``argent check`` before the DAG starts and by the verb run by hand, each in one line (exit 2, no
traceback). Before: ``train.data_streams: 1000`` with 4 shards and ``results:`` naming a file passed the
check; a model too large for the memory, ``clean.device: cuda`` without a GPU and a folder among the shards
failed the old way in the verbs run by hand; a claim naming an unknown run passed the check;
``--threads 100000`` reached OpenMP (SIGSEGV); ``bench/gpu_check.py --device tpu`` was a traceback."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from argent.config import ConfigError, load_config, threads
from argent.data.shards import ShardWriter
from argent.plan.dag import build_dag
from tests.fixtures import ROOT, TINY, config_with, jpeg


def _shards(folder: Path, n: int = 4) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    for s in range(n):
        with ShardWriter(folder / f"shard-{s:06d}.tar") as writer:
            for i in range(4):
                writer.write(f"s{s}i{i}", {"txt": f"a red square {i}".encode(), "jpg": jpeg(10 * s + i)})
    return str(folder / "shard-*.tar")


def _refused(result: tuple[int, str], *named: str) -> str:
    code, err = result
    lines = [line for line in err.splitlines() if line.strip() and "add --debug" not in line]
    assert code == 2 and "Traceback" not in err, err
    assert all(n in err for n in named), err
    return "\n".join(lines)


def _train(config: Path, out: Path, *extra: str) -> tuple:
    return ("train", "--config", config, "--variant", "meru", "--size", "tiny", "--out", out, *extra)


def test_more_data_streams_than_shards_is_refused_by_check_and_by_the_trainer(tmp_path, argent):
    data = {"train_shards": _shards(tmp_path / "shards"), "format": "plain"}
    config = config_with(tmp_path, {}, data=data, train={**TINY["train"], "data_streams": 1000})
    _refused(argent("check", "--config", config), "train.data_streams 1000", "4 shard file(s)")
    _refused(argent(*_train(config, tmp_path / "run")), "4 shard(s)", "train.data_streams")
    assert not (tmp_path / "run" / "checkpoint.pt").exists()
    config = config_with(tmp_path, {}, data=data, train={**TINY["train"], "data_streams": 4})
    code, err = argent("check", "--config", config)
    assert "data_streams" not in err  # four streams on four shards: fine


def test_results_naming_a_file_is_refused_by_check_and_by_the_dag_build(tmp_path, argent, monkeypatch):
    (tmp_path / "taken").write_text("a file, not a results folder\n")
    config = config_with(tmp_path, {})
    text = yaml.safe_load(config.read_text())
    config.write_text(yaml.safe_dump({**text, "results": str(tmp_path / "taken")}))
    _refused(argent("check", "--config", config), f"results: {tmp_path / 'taken'} is a file, not a folder")
    monkeypatch.chdir(ROOT)
    with pytest.raises(ConfigError, match="is a file, not a folder"):  # snakemake -n: NotADirectoryError before
        build_dag(load_config(config, base_dir=ROOT).raw, ROOT)
    config.write_text(yaml.safe_dump({**text, "results": str(tmp_path / "taken" / "results")}))
    _refused(argent("check", "--config", config), f"lies in {tmp_path / 'taken'}, which is a file")


def test_a_model_too_large_for_the_memory_is_refused_by_argent_train_by_hand(tmp_path, argent):
    """Refused from the plan's lower bound before the model is built (argent check's own refusal):
    nothing is allocated."""
    tiny = {**TINY["model"]["tiny"], "embed_dim": 2**31}
    config = config_with(tmp_path, {}, model={"tiny": tiny},
                         data={"train_shards": _shards(tmp_path / "shards", 1), "format": "plain"})
    _refused(argent(*_train(config, tmp_path / "run")), "training needs at least", "model.tiny.embed_dim 2147483648")
    assert not (tmp_path / "run").exists()


def test_a_folder_among_the_shards_is_refused_by_argent_train_by_hand(tmp_path, argent):
    pattern = _shards(tmp_path / "shards", 2)
    (tmp_path / "shards" / "shard-000009.tar").mkdir()  # matched by the pattern: skipped in silence before
    config = config_with(tmp_path, {}, data={"train_shards": pattern, "format": "plain"})
    _refused(argent(*_train(config, tmp_path / "run")), f"{tmp_path / 'shards' / 'shard-000009.tar'} is a folder")
    _refused(argent("check", "--config", config), "is a folder, not a shard file")


@pytest.mark.skipif("__import__('torch').cuda.is_available()", reason="the machine has a CUDA device")
def test_clean_device_cuda_without_a_gpu_is_refused_by_argent_clean_by_hand(tmp_path, argent):
    csv = tmp_path / "hierarcaps_test.csv"
    csv.write_text("id,captions,image_url\n")
    config = config_with(tmp_path, {}, clean={"device": "cuda"})
    _refused(argent("clean", "--config", config, "--csv", csv, "--out-dir", tmp_path / "out"),
             "device 'cuda': no CUDA device is visible")
    assert not (tmp_path / "out").exists()
    _refused(argent("check", "--config", config), "clean.device")


def test_a_claim_naming_an_unknown_run_is_refused_by_argent_check(tmp_path, argent):
    claims = tmp_path / "claims.yaml"
    margins = {role: {"delta": 1.0, "why": "test"} for role in ("zeroshot",)}
    claims.write_text(yaml.safe_dump({"margins": margins, "claims": [
        {"id": "typo", "source": "T", "a": "argnet", "b": "meru", "primary": "zeroshot",
         "metrics": {"zeroshot": {"expect": "better"}}}]}))
    tables = {"claims": {"file": str(claims),
                         "metrics": {"zeroshot": [{"benchmark": "hs_zeroshot", "metric": "top1", "scale": 100}]}}}
    config = config_with(tmp_path, {}, tables=tables)
    _refused(argent("check", "--config", config), "claim typo: a: 'argnet': no variant 'argnet'")


@pytest.mark.parametrize("text, ok", [("0", True), ("1", True), (str(os.cpu_count() or 1), True),
                                      (str((os.cpu_count() or 1) + 1), False), ("100000", False), ("-3", False),
                                      ("two", False)])
def test_threads_are_validated_against_the_machine(text, ok):
    """The rule: 0 (torch's default) or 1..os.cpu_count(). Checked by the argparse type every verb's
    --threads uses; no process is started with the count."""
    if ok:
        assert threads(text) == int(text)
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=r"out of range; must be 1\.\.\d+|expected an integer"):
            threads(text)
    with pytest.raises(argparse.ArgumentTypeError, match=r"must be 1\.\.8 "):
        threads("9", cpus=8)


def test_threads_out_of_range_is_one_line_from_every_verb(argent, capsys):
    for verb in ("train", "evaluate", "tune", "probe"):
        with pytest.raises(SystemExit) as stop:
            argent(verb, "--threads", "100000")
        err = capsys.readouterr().err
        assert stop.value.code == 2 and "--threads: 100000 is out of range; must be 1.." in err, err


def test_gpu_check_with_an_unknown_device_is_one_line():
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "gpu_check.py"), "--device", "tpu"],
                          capture_output=True, text=True, timeout=300, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        "gpu_check: --device tpu: device 'tpu': not a device; pass --device cuda or cuda:<index> where CUDA is "
        "visible, or --device cpu"], proc.stderr
