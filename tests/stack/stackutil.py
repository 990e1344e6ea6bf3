"""Helpers of the `-m stack` tests: run scripts and `argent` verbs as separate processes (as a cluster
would), and write small workflow configs.

A test skips, with the daemon's log, only when this machine refuses to run a daemon (the scripts'
exit code 77); any other failure of a script fails the test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
STACK = ROOT / "scripts" / "stack.sh"
REFUSED = 77  # scripts' exit code when the sandbox would not run a daemon


def child_env(**extra: str) -> dict[str, str]:
    """Environment for argent/snakemake/mlflow children: this checkout first, one thread, offline."""
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": str(ROOT), "PYTHON": sys.executable}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return {**env, **extra}


def argent(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """`argent VERB ...` in its own process."""
    return subprocess.run(argent_cmd(*args), cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=child_env())


def argent_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "argent", *args]


def script(path: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    proc = subprocess.run(["bash", str(path), *args], capture_output=True, text=True, timeout=timeout, env=child_env())
    if proc.returncode == REFUSED:
        pytest.skip(f"{path.name} {' '.join(args)}: the sandbox refused a daemon:\n{proc.stderr[-1500:]}")
    assert proc.returncode == 0, f"{path.name} {' '.join(args)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}"
    return proc


def workflow_config(tmp: Path, data: Path, tracking_uri: str, experiment: str, **tune: object) -> Path:
    """A workflow config with tiny training and a tune: section scored on validation benchmarks."""
    val = data / "val"
    cfg = {
        "results": str(tmp / "results"),
        "variants_file": str(ROOT / "config" / "variants.yaml"),
        "data": {"train_shards": str(data / "train" / "train" / "shard-*.tar"), "min_box_area": 84},
        "optim": {"warmup_steps": 1},
        "train": {"batch_size": 8, "steps": 4, "log_every": 2, "shuffle_buffer": 16},
        "tracking": {"enabled": True, "uri": tracking_uri, "experiment": experiment},
        "benchmarks": {
            "hs_zeroshot_val": {"protocol": "zeroshot", "split": "val", "root": str(val / "classification"),
                                "taxonomy": str(val / "classification" / "taxonomy.txt"), "templates": ["a {}"]},
        },
        "tune": {
            "study": "weights", "base_variant": "argent", "size": "tiny", "seed": 0, "n_trials": 4,
            "sampler": {"name": "random", "seed": 0},
            "pruner": {"name": "none"},
            # Validation data only (argent refuses a test split here): the seed-1 draw's test folder.
            "objective": [{"benchmark": "hs_zeroshot_val", "metric": "top1", "weight": 1.0}],
            "direction": "maximize",
            "train_overrides": ["train.steps=4"],
            "report_every": 2,
            "heartbeat_interval": 2,
            "grace_period": 6,
            **tune,
        },
    }
    path = tmp / "config" / "config.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg))
    return path


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def folder_metrics(run_dir: Path) -> dict[str, dict[int, float]]:
    """metrics.jsonl as {name: {step: value}} (numbers only, as the tracker sends them)."""
    out: dict[str, dict[int, float]] = {}
    for line in (run_dir / "metrics.jsonl").read_text().splitlines():
        row = json.loads(line)
        for key, value in row.items():
            if key != "step" and isinstance(value, (int, float)) and not isinstance(value, bool):
                out.setdefault(key, {})[int(row["step"])] = float(value)
    return out
