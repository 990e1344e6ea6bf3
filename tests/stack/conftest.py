"""Session fixtures of the `-m stack` tests: PostgreSQL + `mlflow server` (scripts/stack.sh) and a
small hiershapes set."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from stackutil import STACK, child_env, script


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory):
    """PostgreSQL + MLflow server, up for the session, down (and purged) after."""
    folder = tmp_path_factory.mktemp("stack") / "stack"
    try:
        script(STACK, "up", str(folder))
        env = dict(line.split("=", 1) for line in (folder / "stack.env").read_text().split())
        yield {"dir": folder, "pg": env["PG_URI"], "optuna": env["OPTUNA_STORAGE"], "mlflow": env["MLFLOW_URI"],
               "pg_port": int(env["PG_PORT"])}
    finally:
        subprocess.run(["bash", str(STACK), "purge", str(folder)], capture_output=True, timeout=120, env=child_env())


@pytest.fixture(scope="session")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small hiershapes draw for training and a second one (another seed) for validation."""
    from argent.data.hiershapes.cli import main as synth

    root = tmp_path_factory.mktemp("stack_data")
    small = ["--test-scenes", "6", "--per-class", "1", "--shard-size", "16", "--jobs", "1"]
    assert synth(["--out", str(root / "train"), "--seed", "0", "--train-scenes", "32", "--val-scenes", "0", *small]) == 0
    assert synth(["--out", str(root / "val"), "--seed", "1", "--train-scenes", "0", "--val-scenes", "0", *small]) == 0
    return root
