"""The DAG build refuses a misspelt tuning objective before any job runs (snakemake -n passed it)."""

import copy

import pytest

from argent.config import ConfigError, derive_paths, load_yaml
from argent.plan.dag import build_dag
from tests.fixtures import ROOT


def test_a_misspelt_objective_metric_stops_the_dag_build(tmp_path):
    cfg = load_yaml(ROOT / "config" / "config.yaml")
    cfg["results"] = str(tmp_path / "results")
    build_dag(derive_paths(copy.deepcopy(cfg)), ROOT)  # the shipped objective builds (paths derived as the Snakefile does)
    cfg["tune"]["objective"][0]["metric"] = "top_1"
    with pytest.raises(ConfigError, match=r"tune.objective\[0\].metric: 'top_1' is not a metric"):
        build_dag(derive_paths(cfg), ROOT)
