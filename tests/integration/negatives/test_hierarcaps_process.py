"""Mining is deterministic across processes: another interpreter with another string-hash salt (NLTK
keeps WordNet pointers in sets) writes the same parquet bytes as this one
(tests/unit/negatives/test_hierarcaps.py: the same bytes whatever the row order, in one process)."""

import os
import subprocess
import sys

import polars as pl
import pytest

from argent.negatives.cli import main
from tests.fixtures import ROOT

pytestmark = pytest.mark.shared_data


def test_another_process_with_another_hash_salt_writes_the_same_bytes(hierarcaps_captions, nltk_data, tmp_path):
    source = tmp_path / "caps.csv"
    items = list(hierarcaps_captions.items())[:60]
    pl.DataFrame({"key": [k for k, _ in items], "caption": [c for _, c in items]}).write_csv(source)
    here = tmp_path / "here.parquet"
    assert main([str(source), "--out", str(here), "--nltk-data", str(nltk_data), "--set", "negatives.seed=7"]) == 0
    again = tmp_path / "again.parquet"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-m", "argent.negatives.cli", str(source), "--out", str(again), "--nltk-data",
                    str(nltk_data), "--set", "negatives.seed=7"], check=True, env=env, cwd=ROOT,
                   capture_output=True)
    assert here.read_bytes() == again.read_bytes()
