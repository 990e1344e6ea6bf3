"""bench/gpu_check.py has never run on a GPU here: its whole code path runs on the CPU at a tiny size,
its no-CUDA exit is one line, and a part that fails or runs past its time box is recorded while the
others go on."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
import time

import pytest
import torch

from tests.fixtures import ROOT

SCRIPT = ROOT / "bench" / "gpu_check.py"
CPU_ARGS = ["--device", "cpu", "--size", "tiny", "--batch", "8", "--steps", "3", "--warmup", "1",
            "--train-steps", "3", "--train-batch", "8", "--scenes", "40", "--precision", "fp32",
            "--peak-tflops", "0.05", "--workers", "0", "--jobs", "1"]


@pytest.fixture(scope="module")
def gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module
    spec.loader.exec_module(module)
    yield module
    sys.modules.pop("gpu_check", None)


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=300)


def test_without_cuda_one_line_and_exit_0():
    out = _run([], CUDA_VISIBLE_DEVICES="")
    assert out.returncode == 0, out.stderr
    assert len(out.stdout.splitlines()) == 1 and "no CUDA device" in out.stdout


def _finite_numbers(node, where=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _finite_numbers(v, f"{where}.{k}")
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _finite_numbers(v, f"{where}[{i}]")
    elif isinstance(node, float):
        yield where, node


def test_the_whole_check_on_cpu(tmp_path):
    out_file = tmp_path / "gpu_check.json"
    out = _run([*CPU_ARGS, "--compile", "off", "--out", str(out_file)])
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out_file.read_text())
    assert report["failed"] == [] and set(report) >= {"device", "settings", "steps", "train", "evaluate", "wall_s"}
    assert report["device"]["type"] == "cpu" and report["device"]["peak_tflops"] == 0.05
    assert [(r["variant"], r["compile"]) for r in report["steps"]] == [
        ("clip", False), ("meru", False), ("hycoclip", False), ("argent", False)]
    for row in report["steps"]:
        assert row["ok"] and row["steps_timed"] == 3
        for key in ("samples_per_s", "step_s_median", "first_step_s", "tflop_per_step", "mfu", "peak_memory_gib"):
            assert math.isfinite(row[key]) and row[key] > 0, (row["variant"], key)
    by = {r["variant"]: r for r in report["steps"]}
    # the box variants encode two images and two texts per sample: twice the FLOP model's count
    assert by["argent"]["tflop_per_step"] == pytest.approx(2 * by["clip"]["tflop_per_step"])
    assert report["train"]["ok"] and report["train"]["summary"]["steps"] == 3
    assert report["train"]["data_counts"]["train"] == 40
    assert report["evaluate"]["ok"] and 0 <= report["evaluate"]["metrics"]["top1"] <= 1
    bad = [(where, v) for where, v in _finite_numbers(report) if not math.isfinite(v)]
    assert not bad


def test_the_compiled_branch_and_its_fallback_are_recorded(gpu_check, tmp_path, monkeypatch):
    """torch.compile is too slow to run here on 2 cores: make it unavailable, and the compiled branch
    runs the trainer's eager fallback, whose warning the check keeps."""
    def unavailable(*_args, **_kwargs):
        raise RuntimeError("no compiler in this test")

    monkeypatch.setattr(torch, "compile", unavailable)
    args = gpu_check.parse_args([*CPU_ARGS, "--out", str(tmp_path / "x.json")])
    row = gpu_check.step_part(args, "clip", True, 0.05, tmp_path)
    assert row["compile"] is True and row["steps_timed"] == 3 and math.isfinite(row["mfu"])
    assert any("torch.compile unavailable" in m for m in row["compile_warnings"])


def test_a_failed_or_late_part_is_recorded_and_the_next_runs(gpu_check, tmp_path):
    report = {"_start": time.monotonic(), "failed": []}
    check = gpu_check.Check(tmp_path / "r.json", 60, report)
    late = check.run("late", 0.3, lambda: time.sleep(5) or {})
    broken = check.run("broken", 5, lambda: {}["missing"])
    fine = check.run("fine", 5, lambda: {"value": 1.0})
    assert not late["ok"] and "PartTimeout: timed out after 0.3 s" in late["error"] and late["elapsed_s"] < 3
    assert not broken["ok"] and broken["error"].startswith("KeyError")
    assert fine["ok"] and fine["value"] == 1.0
    assert report["failed"] == ["late", "broken"]
    assert json.loads((tmp_path / "r.json").read_text())["failed"] == ["late", "broken"]
    spent = gpu_check.Check(tmp_path / "s.json", 0, {"_start": time.monotonic(), "failed": []})
    assert "budget-s was spent" in spent.run("any", 5, lambda: {})["error"]


def test_device_peaks_by_name(gpu_check):
    assert gpu_check.device_peak("NVIDIA H200", None)[0] == 989
    assert gpu_check.device_peak("NVIDIA H100 PCIe", None)[0] == 756
    assert gpu_check.device_peak("NVIDIA A100-SXM4-80GB", None)[0] == 312
    assert gpu_check.device_peak("NVIDIA L40S", None)[0] == 362 and gpu_check.device_peak("NVIDIA L4", None)[0] == 121
    assert gpu_check.device_peak("NVIDIA A10G", None)[0] is None  # not guessed
    assert gpu_check.device_peak("NVIDIA A10G", 70.0) == (70.0, "--peak-tflops")
