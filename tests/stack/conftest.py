"""Session fixtures of the `-m stack` tests: PostgreSQL + `mlflow server` (scripts/stack.sh) and a
small hiershapes set."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from stackutil import STACK, child_env, script

from tests.fixtures import train_and_validation_draws


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
    return train_and_validation_draws(tmp_path_factory.mktemp("stack_data"), train_scenes=32)
