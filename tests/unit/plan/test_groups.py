"""Experiment groups (argent/plan/groups.py) and the cost before launch (argent/plan/cost.py)."""

import json

import pytest
import yaml

from argent.cli import main as argent_main
from argent.config import ConfigError, WorkflowConfig, deep_merge
from argent.config.groups import RunKey, groups_section
from argent.plan.cost import group_costs
from argent.plan.cost_report import summary_line
from argent.plan.groups import build_plan
from tests.fixtures import ROOT


def _cfg(**groups) -> dict:
    return {"variants_file": str(ROOT / "config" / "variants.yaml"), "runs": {"sizes": ["tiny"], "seeds": [0, 1]},
            "train": {"steps": 100, "batch_size": 8, "device": "cpu"}, "optim": {"warmup_steps": 10},
            "negatives": {"wordnet_zip": ""},
            "groups": groups}


def test_identical_runs_are_borrowed_and_a_changed_budget_is_trained_again():
    cfg = _cfg(main={"variants": ["clip", "argent"]},
               abl={"variants": ["argent", "argent_noreg"], "from": "main"},
               longer={"variants": ["argent"], "from": "main", "overrides": {"train": {"steps": 200}}})
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    assert plan.home[RunKey("abl", "argent", "tiny", 1)] == RunKey("main", "argent", "tiny", 1)
    assert plan.home[RunKey("abl", "argent_noreg", "tiny", 0)] == RunKey("abl", "argent_noreg", "tiny", 0)
    assert plan.home[RunKey("longer", "argent", "tiny", 0)] == RunKey("longer", "argent", "tiny", 0)
    assert len(plan.trained) == 2 * 2 + 2 + 2  # main 4, abl's noreg 2, longer 2
    assert plan.configs["longer"]["train"]["steps"] == 200 and plan.configs["main"]["train"]["steps"] == 100
    assert plan.configs["abl"]["tracking"]["tags"]["experiment_group"] == "abl"


def test_negatives_without_wordnet_are_an_error_unless_the_group_is_optional():
    cfg = _cfg(main={"variants": ["argent"]}, negs={"variants": ["argent_negs_random"]})
    with pytest.raises(ConfigError, match="groups.negs: argent_negs_random .*WordNet.*optional: true"):
        build_plan(WorkflowConfig(cfg), ROOT)
    cfg["groups"]["negs"]["optional"] = True
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    assert plan.left_out == [("negs", plan.left_out[0][1])] and "wordnet_zip" in plan.left_out[0][1]
    assert all(k.group == "main" for k in plan.trained)


@pytest.mark.parametrize("groups, message", [
    ({"main": {"variants": ["clip"], "sizes": "tiny"}}, r"groups.main.sizes: expected a list"),
    ({"main": {"variants": ["clip"], "seed": [0]}}, r"groups.main: unknown key\(s\) \['seed'\]; allowed: \["),
    ({"main": {"variants": ["clip"], "overrides": {"trian": {}}}},
     r"groups\.main\.overrides: unknown key\(s\) \['trian'\]; allowed: \['train', 'train_by_size', 'optim'"),
    ({"main": {"variants": ["clip"], "overrides": {"train": {"stepz": 1}}}},
     r"groups\.main\.overrides\.train: unknown key\(s\) \['stepz'\]; allowed: \[.*'steps'"),
    ({"main": {"variants": ["clip"], "overrides": {"runs": {"sizes": ["S"]}}}},
     r"groups\.main\.overrides\.runs: unknown key\(s\) \['sizes'\]; allowed: \['gpus'"),
    ({"main": {"variants": ["clip"], "overrides": {"model": {"huge": {}}}}},
     r"groups\.main\.overrides\.model: unknown key\(s\) \['huge'\]"),
    ({"main": {"variants": []}}, r"groups\.main\.variants: empty; list at least one"),
    ({"main": {"sizes": ["tiny"]}}, r"groups\.main\.variants: empty; list at least one"),
    ({"main": {"variants": ["a/b"]}}, r"groups\.main\.variants\[0\] variant: 'a/b' is not a valid name"),
    ({"main": {"variants": ["clip"], "seeds": [-1]}}, r"groups\.main\.seeds\[0\]: -1 is out of range"),
    ({"main": {"variants": ["clip"], "from": "x"}}, r"groups.main.from: 'x' is not a group"),
    ({"a": {"variants": ["clip"], "from": "b"}, "b": {"variants": ["clip"], "from": "a"}}, r"cycle"),
    ({"main": {"variants": ["clip"], "tables": ["main"]}}, r"groups\.main\.tables: removed; it was read by nothing"),
    ({"main": {"variants": ["clip"], "note": "x"}}, r"groups\.main\.note: removed"),
])
def test_group_errors_name_the_key(groups, message):
    with pytest.raises(ConfigError, match=message):
        groups_section(_cfg(**groups))


def test_cost_from_the_config_override_and_unknown_sizes_said(tmp_path):
    # a results folder of its own: the plan would read the step times of a finished run in results/
    cfg = {**_cfg(main={"variants": ["clip", "argent"], "sizes": ["tiny", "S"]}), "results": str(tmp_path / "results")}
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    line = summary_line(group_costs(WorkflowConfig(cfg), plan, ROOT), plan)
    assert "8 training runs" in line and "step time unknown for size(s) S, tiny" in line and "no estimate" in line
    cfg["cost"] = {"step_seconds": {"tiny": 0.9, "S": 3.6}, "batch_size": 16}
    (cost,) = group_costs(WorkflowConfig(cfg), plan, ROOT)
    # 4 runs × 100 steps × (0.9 s at batch 16 → 0.45 s at batch 8) + 4 × 100 × 1.8 s, one core each
    assert cost.hours() == pytest.approx((4 * 100 * 0.45 + 4 * 100 * 1.8) / 3600)
    assert "scaled from batch 16" in cost.step_time["tiny"].source


def test_record_from_finished_jobs_feeds_the_plan(tmp_path):
    results = tmp_path / "results"
    for seed, seconds in ((0, 30.0), (1, 50.0)):
        run = results / "runs" / "main" / "clip-tiny" / f"seed{seed}"
        run.mkdir(parents=True)
        (run / "config.yaml").write_text(yaml.safe_dump({"size": "tiny", "train": {"steps": 100, "batch_size": 8,
                                                                                   "device": "cpu"}}))
        (run / "summary.json").write_text("{}")
        tsv = results / "benchmarks" / "train" / "main" / f"clip-tiny-seed{seed}.tsv"
        tsv.parent.mkdir(parents=True, exist_ok=True)
        tsv.write_text(f"s\th:m:s\n{seconds}\t0:00:30\n")
    assert argent_main(["plan", "--record-from", str(results)]) == 0
    record = json.loads((results / "bench" / "step_times.json").read_text())
    assert record["sizes"]["tiny"]["step_seconds"] == pytest.approx(0.4) and record["machine"]
    cfg = deep_merge(_cfg(main={"variants": ["clip"]}), {"results": str(results)})
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    (cost,) = group_costs(WorkflowConfig(cfg), plan, ROOT)
    assert cost.step_time["tiny"].seconds == pytest.approx(0.4) and "measured on" in cost.step_time["tiny"].source
    # a record measured on another device kind is not used for a GPU config
    cfg["train"]["device"] = "cuda"
    (cost,) = group_costs(WorkflowConfig(cfg), build_plan(WorkflowConfig(cfg), ROOT), ROOT)
    assert cost.step_time["tiny"].seconds is None


def test_plan_verb_on_the_shipped_default(capsys, tmp_path):
    wordnet = tmp_path / "wordnet.zip"
    wordnet.touch()
    base = ["plan", "--config", "config/config.yaml", "--base-dir", str(ROOT)]
    assert argent_main([*base, "--set", f"negatives.wordnet_zip={wordnet}"]) == 0
    out = capsys.readouterr().out
    # 77 training jobs: main 32 (4 variants x 8 seeds), ablations 30 (13 x 3, 9 borrowed from main), negatives 9,
    # tuning 6 (argent-tuned, meru_adaent-tuned x 3)
    assert "argent plan: 77 training runs (9 borrowed, not retrained) in 4 groups" in out
    assert argent_main([*base, "--set", f"negatives.wordnet_zip={tmp_path / 'absent.zip'}"]) == 0
    out = capsys.readouterr().out
    assert "argent: group negatives left out: argent_negs_random" in out and "68 training runs" in out
