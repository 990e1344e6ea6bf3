"""A real file size limit (``ulimit -f``: RLIMIT_FSIZE, SIGXFSZ ignored as a shell's ``ulimit`` user
sees EFBIG) under ``argent train``'s checkpoint write and ``argent tables``' writes: one message naming
the file and the fix, exit 2 (before: ``OSError: [Errno 27] File too large`` tracebacks)."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import yaml

from tests.fixtures import MARGINS, ROOT, bad_shard, checksums, claims_config, write_config, write_eval_results


def argent_under_limit(limit: int, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    def limited() -> None:  # in the child, before exec: the limit and the ignored signal carry over
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
           "MPLCONFIGDIR": str(tmp_path / "mpl"), "MLFLOW_DISABLE_TELEMETRY": "true"}
    return subprocess.run([sys.executable, "-m", "argent", *args], preexec_fn=limited, capture_output=True, text=True,
                          timeout=600, env=env, cwd=ROOT)


def assert_one_message(proc: subprocess.CompletedProcess, path: Path) -> None:
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "[Errno 27]" not in proc.stderr, proc.stderr[-3000:]
    assert f"{path}: file too large" in proc.stderr and "ulimit -f unlimited" in proc.stderr, proc.stderr[-3000:]


def test_a_checkpoint_over_the_file_size_limit_is_one_message(tmp_path):
    """A tiny run's checkpoint is ~19 MB (the token table and Adam's moments), its other files a few kB."""
    shards = tmp_path / "shards"
    shards.mkdir()
    bad_shard(shards / "shard-000000.tar", good=8)
    config = write_config(tmp_path / "config.yaml", train={"steps": 2, "batch_size": 4, "shuffle_buffer": 1},
                          data={"train_shards": str(shards / "shard-*.tar"), "format": "plain", "augment": False})
    run = tmp_path / "run"
    proc = argent_under_limit(1 << 20, tmp_path, "train", "--config", str(config), "--no-default", "--variant", "meru",
                              "--size", "tiny", "--out", str(run))
    assert_one_message(proc, run / "checkpoint.pt")
    assert not (run / "checkpoint.pt").exists() and not list(run.glob(".checkpoint.*")), "no torn or temp file"


def test_argent_tables_over_the_file_size_limit_is_one_message(tmp_path):
    claims = tmp_path / "claims.yaml"
    claims.write_text(yaml.safe_dump({"margins": MARGINS, "claims": [
        {"id": "up", "source": "T", "a": "argent", "b": "hycoclip", "primary": "pep_auc",
         "metrics": {"pep_auc": {"expect": "better"}}}]}))
    results = tmp_path / "results"
    write_eval_results(results)
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(claims_config(claims)))
    before = checksums(results)
    proc = argent_under_limit(1000, tmp_path, "tables", "--config", str(config), "--results", str(results))
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "ulimit -f unlimited" in proc.stderr, proc.stderr[-3000:]
    refused = proc.stderr.split("argent tables: ", 1)[1].split(": file too large", 1)[0]
    assert Path(refused).parent == results / "tables", proc.stderr[-3000:]
    after = checksums(results)
    assert not Path(refused).exists() and {k: after.get(k) for k in before} == before  # the inputs untouched
