"""argent/config/derived_paths.py: every path the workflow makes is derived from ``results:`` and
``hiershapes.out`` where the config is read, to the strings the configs spelled before (run,
evaluation and job hashes do not move); a path spelled into a results folder is refused; the
shipped configs spell none."""

from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest
import yaml

from argent.config import ConfigError, deep_merge, derive_paths, load_config
from argent.runs import is_under
from tests.fixtures import ROOT


def _load(name: str, *sets: str) -> dict:
    return load_config(ROOT / "config" / name, list(sets), base_dir=ROOT).raw


def _expected(results: str, hs: str) -> dict[str, str]:
    """Every derived key of the default's entries, spelled out as the configs spelled them by hand."""
    return {
        "benchmarks.hs_zeroshot.root": f"{hs}/classification",
        "benchmarks.hs_zeroshot.taxonomy": f"{hs}/classification/taxonomy.txt",
        "benchmarks.hs_zeroshot_val.root": f"{hs}/classification_val",
        "benchmarks.hs_zeroshot_val.taxonomy": f"{hs}/classification_val/taxonomy.txt",
        "benchmarks.hs_pep_val.hierarcaps_csv": f"{hs}/hierarcaps_val/hierarcaps_test.csv",
        "benchmarks.hs_pep_val.image_dir": f"{hs}/hierarcaps_val/images",
        "benchmarks.hs_pep_val.clean_csv": f"{results}/data/hiershapes_val/hierarcaps_clean.csv",
        "benchmarks.hs_pep_val.negative_pool": f"{results}/data/hiershapes_val/negative_pool.csv",
        "benchmarks.hs_retrieval.annotations": f"{hs}/retrieval/dataset_hiershapes.json",
        "benchmarks.hs_retrieval.image_dir": f"{hs}/retrieval/images",
        "benchmarks.hs_pep.hierarcaps_csv": f"{hs}/hierarcaps/hierarcaps_test.csv",
        "benchmarks.hs_pep.image_dir": f"{hs}/hierarcaps/images",
        "benchmarks.hs_pep.clean_csv": f"{results}/data/hiershapes/hierarcaps_clean.csv",
        "benchmarks.hs_pep.negative_pool": f"{results}/data/hiershapes/negative_pool.csv",
        "benchmarks.hs_hierarcaps.hierarcaps_csv": f"{hs}/hierarcaps/hierarcaps_test.csv",
        "benchmarks.hs_hierarcaps.image_dir": f"{hs}/hierarcaps/images",
        "benchmarks.hs_sugarcrepe.json_dir": f"{hs}/sugarcrepe",
        "benchmarks.hs_sugarcrepe.image_dir": f"{hs}/sugarcrepe/images",
        "benchmarks.hs_analysis.hierarcaps_csv": f"{hs}/hierarcaps/hierarcaps_test.csv",
        "benchmarks.hs_analysis.image_dir": f"{hs}/hierarcaps/images",
        "benchmarks.hs_analysis.shards": f"{hs}/val/shard-000000.tar",
        "benchmarks.hierarcaps_pep.hierarcaps_csv": "../shared/data/hierarcaps/hierarcaps_test.csv",  # user data: kept
        "benchmarks.hierarcaps_pep.clean_csv": f"{results}/data/hierarcaps/hierarcaps_clean.csv",
        "benchmarks.hierarcaps_pep.negative_pool": f"{results}/data/hierarcaps/negative_pool.csv",
        "clean.datasets.hiershapes.csv": f"{hs}/hierarcaps/hierarcaps_test.csv",
        "clean.datasets.hiershapes.images": f"{hs}/hierarcaps/images",
        "clean.datasets.hiershapes_val.csv": f"{hs}/hierarcaps_val/hierarcaps_test.csv",
        "clean.datasets.hiershapes_val.images": f"{hs}/hierarcaps_val/images",
        "clean.datasets.hierarcaps.csv": "../shared/data/hierarcaps/hierarcaps_test.csv",
        "data.train_shards": f"{hs}/train/shard-*.tar",
        "data.negatives": f"{results}/data/negatives/hiershapes_train.parquet",
        "data.image_cache": f"{results}/data/image_cache/hiershapes_train",
        "probe.data": f"{hs}/classification",
    }


def _get(cfg: dict, dotted: str):
    for part in dotted.split("."):
        cfg = cfg[part]
    return cfg


@pytest.mark.parametrize("name, results, hs", [("config.yaml", "results", "data/hiershapes"),
                                               ("quick.yaml", "results/quick", "data/hiershapes"),
                                               ("smoke.yaml", "results/smoke", "data/smoke/hiershapes")])
def test_each_derived_key_of_a_shipped_config(name, results, hs):
    cfg = _load(name)
    got = {key: _get(cfg, key) for key in _expected(results, hs)}
    assert got == _expected(results, hs)
    # the names are gone: the effective config and every hash see what the configs spelled before
    assert all("dataset" not in entry for entry in cfg["benchmarks"].values())
    assert all(set(entry) <= {"csv", "images", "keep"} for entry in cfg["clean"]["datasets"].values())


def test_the_papers_groups_mine_into_their_own_results_folder_and_its_data_is_kept():
    cfg = _load("paper.yaml")
    groups = cfg["groups"]
    main = groups["main"]["overrides"]["data"]
    assert main == {"train_shards": "/datasets/grit/shards/{00000..02047}.tar", "dataset_hash": "",
                    "negatives": "results/paper/data/negatives/grit_train.parquet", "negatives_id": main["negatives_id"]}
    assert main["negatives_id"].startswith("mined-")  # the table's identity, not its path, enters the runs' hash
    assert groups["ablations"]["overrides"]["data"]["negatives"] == "results/paper/data/negatives/cc3m_train.parquet"
    assert groups["tuning"]["overrides"]["data"]["negatives"] == "results/paper/data/negatives/cc3m_train.parquet"
    assert cfg["data"]["negatives"] == "results/paper/data/negatives/grit_train.parquet" and cfg["data"]["image_cache"] == ""
    pep = cfg["benchmarks"]["hierarcaps_pep"]
    assert (pep["hierarcaps_csv"], pep["clean_csv"]) == ("/datasets/hierarcaps/hierarcaps_test.csv",
                                                         "results/paper/data/hierarcaps/hierarcaps_clean.csv")
    assert cfg["probe"]["data"] == "/datasets/things/images"


def test_a_changed_results_folder_moves_every_path_under_it():
    cfg = _load("config.yaml", "results=elsewhere/run7")
    for key, value in _expected("elsewhere/run7", "data/hiershapes").items():
        assert _get(cfg, key) == value, key
    moved = _load("config.yaml", "hiershapes.out=/scratch/hs")
    assert moved["data"]["train_shards"] == "/scratch/hs/train/shard-*.tar"
    assert moved["benchmarks"]["hs_pep"]["hierarcaps_csv"] == "/scratch/hs/hierarcaps/hierarcaps_test.csv"


@pytest.mark.parametrize("setting, named", [
    # the bug class: results moved, a cleaned file spelled for the old folder
    ("benchmarks.hs_pep.clean_csv=results/data/hiershapes/hierarcaps_clean.csv",
     "benchmarks.hs_pep.clean_csv: 'results/data/hiershapes/hierarcaps_clean.csv' is spelled by hand, but argent "
     "clean's outputs are derived from `results:` (results/quick)"),
    ("benchmarks.hierarcaps_pep.negative_pool=/data/my_pool.csv", "Remove negative_pool"),
    ("data.negatives=results/quick/data/negatives/other/x.parquet",
     "data.negatives: 'results/quick/data/negatives/other/x.parquet': it lies in this config's results folder "
     "results/quick, and paths there are derived from `results:`. Write the name only"),
    ("data.negatives=results/data/negatives/hiershapes_train.parquet",
     "it is in the layout of another results folder (results)"),
    ("data.image_cache=results/data/image_cache/hiershapes_train",
     "data.image_cache: 'results/data/image_cache/hiershapes_train': it is in the layout of another results folder"),
    ("groups.main.overrides.data.negatives=results/quick/negs.parquet",
     "groups.main.overrides.data.negatives: 'results/quick/negs.parquet': it lies in this config's results folder"),
])
def test_a_path_spelled_into_a_results_folder_is_refused_naming_the_key(setting, named):
    with pytest.raises(ConfigError) as info:
        _load("quick.yaml", setting)
    assert named in str(info.value)
    assert str(info.value).startswith(str(ROOT / "config" / "quick.yaml"))  # the file, then the key


def test_the_users_own_paths_are_kept():
    cfg = _load("quick.yaml", "data.negatives=/scratch/negs.parquet", "data.image_cache=/fast/cache/hs",
                "data.train_shards=/datasets/cc3m/{0..3}.tar", "benchmarks.hs_zeroshot.root=/mine/classes",
                "probe.data=/mine/things")
    assert cfg["data"] == {**cfg["data"], "negatives": "/scratch/negs.parquet", "image_cache": "/fast/cache/hs",
                           "train_shards": "/datasets/cc3m/{0..3}.tar"}
    assert cfg["benchmarks"]["hs_zeroshot"]["root"] == "/mine/classes"  # spelled: kept; the rest derived
    assert cfg["benchmarks"]["hs_zeroshot"]["taxonomy"] == "data/hiershapes/classification/taxonomy.txt"
    assert cfg["probe"]["data"] == "/mine/things"
    # spelled as derived (a derived config read back): kept
    same = _load("quick.yaml", "benchmarks.hs_pep.clean_csv=results/quick/data/hiershapes/hierarcaps_clean.csv",
                 "data.negatives=results/quick/data/negatives/hiershapes_train.parquet")
    assert same == _load("quick.yaml")


@pytest.mark.parametrize("name", ["config.yaml", "quick.yaml", "smoke.yaml", "paper.yaml"])
def test_a_derived_config_reads_back_unchanged(name, tmp_path):
    """The workflow's verbs read <results>/workflow_config.yaml (derived) merged over config/config.yaml
    (named): nothing moves, nothing is refused."""
    derived = _load(name)
    assert derive_paths(derived) == derived
    default = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    assert derive_paths(deep_merge(default, derived)) == derived
    effective = tmp_path / "workflow_config.yaml"
    effective.write_text(yaml.safe_dump(derived))
    assert load_config(effective, base_dir=ROOT).raw == derived


@pytest.mark.parametrize("change, named", [
    ({"benchmarks": {"hs_pep": {"dataset": "imagenet"}}},
     "benchmarks.hs_pep.dataset: 'imagenet'; the workflow generates one data set, 'hiershapes'"),
    ({"benchmarks": {"hs_retrieval": {"split": "val"}}},
     "benchmarks.hs_retrieval: the hiershapes data set has no val split for protocol 'retrieval'"),
    ({"clean": {"datasets": {"hiershapes_val": {"split": "train"}}}},
     "clean.datasets.hiershapes_val.split: 'train'"),
    ({"clean": {"datasets": {"negatives": {"dataset": "hiershapes"}}}},
     "clean.datasets.negatives: 'negatives' is a folder of the results layout"),
    ({"clean": {"datasets": {"again": {"dataset": "hiershapes"}}}},
     "benchmarks.hs_pep: clean.datasets ['hiershapes', 'again'] all clean its hierarcaps_csv"),
])
def test_a_name_the_layout_cannot_derive_is_refused(change, named):
    raw = deep_merge(yaml.safe_load((ROOT / "config" / "config.yaml").read_text()), change)
    with pytest.raises(ConfigError, match=re.escape(named)):
        derive_paths(raw)


def test_derive_paths_copies_and_fills_only_what_is_named():
    raw = {"groups": {"a": {"overrides": {"data": {"negatives": "x"}}}}}
    raw["groups"]["b"] = {"overrides": raw["groups"]["a"]["overrides"]}  # a YAML anchor: one shared mapping
    before = copy.deepcopy(raw)
    out = derive_paths(raw)
    assert raw == before  # the input is not modified
    assert out["groups"]["a"]["overrides"]["data"]["negatives"] == "results/data/negatives/x.parquet"
    assert out["groups"]["b"]["overrides"]["data"]["negatives"] == "results/data/negatives/x.parquet"
    assert derive_paths({}) == {}  # nothing named, nothing filled in


def _values(node, key=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _values(v, f"{key}.{k}" if key else str(k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _values(v, f"{key}[{i}]")
    elif isinstance(node, str):
        yield key, node


@pytest.mark.parametrize("path", sorted((ROOT / "config").glob("*.yaml")), ids=lambda p: p.name)
def test_the_shipped_configs_spell_no_results_or_generated_data_path(path):
    """Done when: no results or cleaned-data path in config/*.yaml beyond `results:` and the user's data
    roots (the embedded data's folder is spelled once, as `hiershapes.out`)."""
    raw = yaml.safe_load(path.read_text()) or {}
    folders = {"results", str(raw.get("results", "results")), "data/hiershapes",
               str((raw.get("hiershapes") or {}).get("out", "data/hiershapes"))}
    spelled = {key: value for key, value in _values(raw) if key not in ("results", "hiershapes.out")
               and any(is_under(value, folder) for folder in folders)}
    assert not spelled, f"{path.name} spells derived paths; name them instead (docs/architecture.md): {spelled}"
    made = {key: value for key, value in _values(raw)
            if Path(value).name in ("hierarcaps_clean.csv", "negative_pool.csv") or value.endswith(".parquet")}
    assert not made, f"{path.name} spells a file the workflow makes: {made}"
