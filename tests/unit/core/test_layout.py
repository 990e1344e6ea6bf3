"""argent/runs/layout.py: the one containment helper (``is_under``) and the paths the layout derives from
``results:`` and ``hiershapes.out`` (the embedded data set's folders checked against a generated one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from argent.config import WorkflowConfig
from argent.data.hiershapes.generate import HiershapesParams, generate
from argent.data.shards import expand_shards
from argent.plan.preflight import is_produced
from argent.plan.targets import benchmark_data_inputs
from argent.runs import HiershapesFolder, Results, is_under
from argent.tables.domains import REAL, SYNTHETIC, training_domain


@pytest.mark.parametrize("path, folder, under", [
    ("results", "results", True),
    ("results/data/x.csv", "results", True),
    ("results/", "results", True),
    ("./results/data", "results", True),
    ("results2/data/x.csv", "results", False),  # a name that starts like the folder is another folder
    ("results2", "results", False),
    ("results_old/x", "results", False),
    ("data/hiershapes/train/shard-*.tar", "data/hiershapes", True),  # a glob is a plain name here
    ("data/hiershapes2/train/shard-*.tar", "data/hiershapes", False),
    ("data/hiershapes/../other/x", "data/hiershapes", False),  # normalised by its parts
    ("/abs/results/x", "/abs/results", True),
    ("results/x", "/elsewhere/results", False),
])
def test_is_under_compares_whole_path_parts(path, folder, under):
    assert is_under(path, folder) is under


def test_is_under_takes_relative_paths_from_the_base(tmp_path):
    assert is_under(tmp_path / "results" / "x", "results", base=tmp_path)
    assert is_under("results/x", tmp_path / "results", base=tmp_path)
    assert not is_under(tmp_path / "results2" / "x", "results", base=tmp_path)


def test_every_site_that_asks_the_question_uses_the_helper(tmp_path):
    """``results2/`` is not the workflow's ``results/``: the preflight, the DAG's inputs and the tables'
    data domains each answered it with a string prefix before."""
    assert not is_produced("results2/data/x.csv", ("results",)) and is_produced("results/data/x.csv", ("results",))
    cfg = {"results": "results", "benchmarks": {
        "mine": {"protocol": "pep", "hierarcaps_csv": "data/hiershapes2/t.csv", "image_dir": "data/hiershapes2/img",
                 "clean_csv": "results2/data/hierarcaps/hierarcaps_clean.csv"}}}
    assert benchmark_data_inputs(WorkflowConfig(cfg), ["mine"], "data/hiershapes", "MANIFEST") == []
    cfg["benchmarks"]["mine"].update(hierarcaps_csv="data/hiershapes/t.csv",
                                     clean_csv="results/data/hierarcaps/hierarcaps_clean.csv")
    assert benchmark_data_inputs(WorkflowConfig(cfg), ["mine"], "data/hiershapes", "MANIFEST") == [
        "MANIFEST", "results/data/hierarcaps/hierarcaps_clean.csv"]
    group = {"hiershapes": {"out": "data/hiershapes"}, "data": {"train_shards": "data/hiershapes2/train/shard-*.tar"}}
    assert training_domain(WorkflowConfig(group), tmp_path) == REAL
    group["data"]["train_shards"] = "data/hiershapes/train/shard-*.tar"
    assert training_domain(WorkflowConfig(group), tmp_path) == SYNTHETIC


def test_results_paths_of_named_outputs():
    results = Results(Path("results/quick"))
    assert str(results.negatives("hiershapes_train")) == "results/quick/data/negatives/hiershapes_train.parquet"
    assert str(results.image_cache("hiershapes_train")) == "results/quick/data/image_cache/hiershapes_train"
    assert str(results.clean("hiershapes").clean_csv) == "results/quick/data/hiershapes/hierarcaps_clean.csv"


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """A tiny hiershapes with every split the layout names (the validation PEP split included)."""
    out = tmp_path_factory.mktemp("layout") / "hs"
    generate(HiershapesParams(train_scenes=4, val_scenes=4, test_scenes=4, pep_val_scenes=2, per_class=1,
                              shard_size=4, image_size=32, supersample=1), out, jobs=1)
    return out


@pytest.mark.parametrize("split", ["test", "val"])
@pytest.mark.parametrize("protocol", ["zeroshot", "retrieval", "pep", "hierarcaps", "compositional", "analysis"])
def test_the_embedded_data_sets_paths_are_what_argent_synth_writes(generated, protocol, split):
    hs = HiershapesFolder(generated)
    paths = hs.benchmark_paths(protocol, split)
    if split == "val" and protocol in ("retrieval", "compositional", "analysis"):
        assert paths == {}  # no validation split of these: dataset: hiershapes + split: val is refused
        return
    assert paths
    for key, path in paths.items():
        assert Path(path).exists(), f"{protocol} ({split}) {key}: {path} is not what argent synth writes"
    for path in hs.clean_source(split).values():
        assert Path(path).exists()
    assert expand_shards(hs.train_shards) and hs.manifest.is_file()
