"""``argent evaluate`` on a run folder of the results layout checks that the folder holds the run the workflow
trains there, without building the plan (argent/evaluation/cli.py): the workflow hands it the planned identity
hashes (``<results>/groups/planned_runs.json``, written by the DAG build beside the effective config); by hand,
with another config or before any DAG build, the hash comes from the config's own groups."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from argent.config.groups import IdentityError, RunKey, group_config, groups_section, planned_runs_text, run_identity
from argent.evaluation.cli import check_attribution
from argent.runs import Results, run_dir
from tests.fixtures import ROOT, TINY

KEY = RunKey("main", "hycoclip", "tiny", 0)


def _workflow(tmp_path: Path) -> tuple[dict, Path, Path]:
    """(config, its effective-config file under results, the run folder of KEY); ``borrow`` lends main's runs."""
    results = tmp_path / "results"
    raw = {**TINY, "results": str(results),
           "groups": {"main": {"variants": ["clip", "hycoclip"], "sizes": ["tiny"], "seeds": [0]},
                      "borrow": {"from": "main", "variants": ["hycoclip"], "sizes": ["tiny"], "seeds": [0]}}}
    effective = Results(results).effective_config
    effective.parent.mkdir(parents=True)
    Results(results).planned_runs.parent.mkdir()
    effective.write_text(yaml.safe_dump(raw))
    folder = run_dir(results, *("main", "hycoclip", "tiny", 0))
    folder.mkdir(parents=True)
    return raw, effective, folder


def _head(config_hash: str, variant: str = "hycoclip") -> dict:
    return {"config_hash": config_hash, "variant": variant, "size": "tiny", "seed": 0}


def _plan_hash(raw: dict, key: RunKey = KEY) -> str:
    return run_identity(group_config(raw, groups_section(raw)[key.group]), key, ROOT)


def test_the_workflow_s_planned_hash_is_the_one_checked(tmp_path):
    raw, effective, folder = _workflow(tmp_path)
    planned = Results(raw["results"]).planned_runs
    planned.write_text(planned_runs_text({KEY: "f" * 16}))  # the DAG build's answer, not the config's
    with pytest.raises(IdentityError, match=f"carries config hash {_plan_hash(raw)}, but the plan trains "
                                            f"main/hycoclip-tiny/seed0 into .* with hash f{{16}}"):
        check_attribution(folder, _head(_plan_hash(raw)), raw, ROOT, effective)
    check_attribution(folder, _head("f" * 16), raw, ROOT, effective)


def test_a_run_the_plan_does_not_train_there_is_not_compared(tmp_path):
    raw, effective, _ = _workflow(tmp_path)
    borrowed = run_dir(raw["results"], "borrow", "hycoclip", "tiny", 0)  # trained under main, read from there
    borrowed.mkdir(parents=True)
    Results(raw["results"]).planned_runs.write_text(planned_runs_text({KEY: "f" * 16}))
    check_attribution(borrowed, _head("0" * 16), raw, ROOT, effective)


def test_by_hand_the_hash_comes_from_the_config_s_groups(tmp_path):
    raw, effective, folder = _workflow(tmp_path)
    by_hand = tmp_path / "by_hand.yaml"  # another file than the workflow's: its planned runs do not apply
    Results(raw["results"]).planned_runs.write_text(planned_runs_text({KEY: "f" * 16}))
    for config in (by_hand, effective):
        if config == effective:
            Results(raw["results"]).planned_runs.unlink()  # no DAG build yet: the same answer
        check_attribution(folder, _head(_plan_hash(raw)), raw, ROOT, config)
        with pytest.raises(IdentityError, match=f"with hash {_plan_hash(raw)}"):
            check_attribution(folder, _head("0" * 16), raw, ROOT, config)


def test_a_tuned_run_planned_before_its_study_finished_is_checked_from_the_config(tmp_path):
    """The DAG build plans a tuned run before its study writes best.yaml (null in the file); by the time the run
    is evaluated the file is there, and the hash is the config's group with it, as ``argent train`` stamped it."""
    raw, effective, folder = _workflow(tmp_path)
    Results(raw["results"]).planned_runs.write_text(planned_runs_text({KEY: None}))
    check_attribution(folder, _head(_plan_hash(raw)), raw, ROOT, effective)
    with pytest.raises(IdentityError):
        check_attribution(folder, _head("0" * 16), raw, ROOT, effective)


def test_a_folder_that_names_another_run_than_it_records_is_refused(tmp_path):
    raw, effective, folder = _workflow(tmp_path)
    with pytest.raises(IdentityError, match="records clip-tiny seed 0, but its folder names hycoclip-tiny seed 0"):
        check_attribution(folder, _head(_plan_hash(raw), variant="clip"), raw, ROOT, effective)
