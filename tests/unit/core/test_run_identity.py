"""A run's identity survives upgrades (issue 27 item 1): a neutral new field changes no hash of the
default config's runs, a changed default changes exactly the runs that take it, an identity version
bump changes all, and run folders stamped before the scheme are re-stamped after a check."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch
import yaml

import argent.config.experiment as config_module
from argent.cli import main as argent_main
from argent.config import IDENTITY_VERSION, ExperimentConfig, TrainConfig, VariantConfig, WorkflowConfig
from argent.config.groups import RunKey, run_experiment, run_identity
from argent.models import build_model
from argent.models.trained import load_model
from argent.plan.cli import merged_config
from argent.plan.groups import build_plan
from argent.restamp.stamp import restamp_run
from argent.runs import (
    EXCLUDED,
    CheckpointError,
    canonical_json,
    current_defaults,
    first_difference,
    identity_hash,
    legacy_hash,
    load_pinned,
    missing_pins,
    run_dir,
)
from tests.fixtures import ROOT


def default_plan(cfg=None):
    cfg = cfg or merged_config(Path("config/config.yaml"), [], ROOT)
    return cfg, build_plan(WorkflowConfig(cfg), ROOT)


def hashes(plan) -> dict[RunKey, str]:
    """The train rule's `hash` param (argent/plan/dag.py: Dag.run_hash, i.e. run_identity) of every run the plan trains."""
    return {key: run_identity(plan.configs[key.group], key, ROOT) for key in plan.trained}


@pytest.fixture(scope="module")
def before():
    cfg, plan = default_plan()
    if not plan.left_out:
        assert len(plan.trained) == 77  # the default config's runs (with WordNet staged: every group)
    return hashes(plan)


def with_field(monkeypatch, cls, name, tp, default):
    """Really add (or re-default) a field: a subclass of the config dataclass, put where the loader
    builds it from (argent.config's module globals)."""
    new = dataclasses.make_dataclass(cls.__name__, [(name, tp, dataclasses.field(default=default))], bases=(cls,))
    monkeypatch.setattr(config_module, cls.__name__, new)
    return new


def test_a_new_field_with_a_neutral_default_changes_no_hash(monkeypatch, before):
    with_field(monkeypatch, TrainConfig, "loss_scale_warmup", int, 0)
    with_field(monkeypatch, VariantConfig, "margin_schedule", str, "constant")
    _, plan = default_plan()
    key = plan.trained[0]
    exp = run_experiment(plan.configs[key.group], key, ROOT)
    assert exp.train.loss_scale_warmup == 0 and exp.variant.margin_schedule == "constant"  # the field is there
    assert hashes(plan) == before
    # ...and it is part of the identity once set: a run that uses it is another run
    cfg = merged_config(Path("config/config.yaml"), ["train.loss_scale_warmup=5"], ROOT)
    assert run_identity(build_plan(WorkflowConfig(cfg), ROOT).configs[key.group], key, ROOT) != before[key]


def test_a_changed_default_changes_exactly_the_runs_that_take_it(monkeypatch, before):
    cfg, plan = default_plan()
    old = {k: run_experiment(plan.configs[k.group], k, ROOT).variant.huber_beta for k in plan.trained}
    with_field(monkeypatch, VariantConfig, "huber_beta", float, 0.5)
    _, plan = default_plan()
    new = {k: run_experiment(plan.configs[k.group], k, ROOT).variant.huber_beta for k in plan.trained}
    affected = {k for k in plan.trained if old[k] != new[k]}
    changed = {k for k, h in hashes(plan).items() if h != before[k]}
    assert changed == affected
    # argent sets huber_beta: 1.0 itself (and so its ablations); meru_adaent takes the default
    assert RunKey("main", "argent", "tiny", 0) not in changed
    assert RunKey("ablations", "meru_adaent", "tiny", 0) in changed


def test_a_changed_training_default_spares_the_group_that_overrides_it(monkeypatch, before):
    cfg, _ = default_plan()
    cfg = json.loads(json.dumps(cfg))
    cfg["groups"]["tuning"]["overrides"] = {"train": {"max_skipped_steps": 10}}  # explicit, = today's default
    _, plan = default_plan(cfg)
    assert hashes(plan) == before  # a value equal to the default adds nothing
    with_field(monkeypatch, TrainConfig, "max_skipped_steps", int, 20)
    changed = {k for k, h in hashes(build_plan(WorkflowConfig(cfg), ROOT)).items() if h != before[k]}
    assert changed == {k for k in plan.trained if k.group != "tuning"} and changed


def test_an_identity_version_bump_changes_every_hash(monkeypatch, before):
    monkeypatch.setattr(config_module, "IDENTITY_VERSION", IDENTITY_VERSION + 1)
    after = hashes(default_plan()[1])
    assert all(after[k] != before[k] for k in before)


def test_the_hash_is_canonical_json_of_the_values_off_default():
    exp = run_experiment(*_main_run())
    identity = exp.identity()
    assert "tracking" not in identity and "log_every" not in identity.get("train", {})
    assert identity["variant"] == {"geometry": "euclidean"}  # clip: one value off the default
    text = canonical_json({"identity_version": IDENTITY_VERSION, "run": identity})
    assert " " not in text and text.index('"data"') < text.index('"model"')
    assert exp.result_hash() == identity_hash(identity, IDENTITY_VERSION) and len(exp.result_hash()) == 16
    assert first_difference(identity, {**identity, "seed": 3}) == "seed"


def test_every_config_field_has_a_pinned_default():
    """A field added to the config types must be pinned (scripts/pin_identity_defaults.py), so that
    a later change of its default changes the hash of exactly the runs that take it."""
    assert missing_pins(ExperimentConfig, load_pinned()) == {}
    pinned = load_pinned()
    for section, fields in current_defaults(ExperimentConfig).items():
        assert set(pinned[section]) == set(fields), section
    assert "tracking" not in pinned and EXCLUDED["tracking"] is True


# ---- old run folders -------------------------------------------------------------------------------


def _main_run():
    cfg, plan = default_plan()
    key = RunKey("main", "clip", "tiny", 0)
    return plan.configs["main"], key, ROOT


def legacy_run(results: Path, drop: tuple[str, str] | None = None) -> Path:
    """A run folder as argent wrote it before run identity: resolved config.yaml, a checkpoint and
    summary.json carrying the legacy hash. ``drop``: a field the old code did not have yet."""
    exp = run_experiment(*_main_run())
    folder = run_dir(results, "main", "clip", "tiny", 0)
    folder.mkdir(parents=True)
    raw = exp.to_dict()
    if drop:
        raw[drop[0]].pop(drop[1])
    (folder / "config.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    old = legacy_hash(yaml.safe_load((folder / "config.yaml").read_text()))
    torch.save({"model": build_model(exp.model, exp.variant.geometry).state_dict(), "config_hash": old},
               folder / "checkpoint.pt")
    (folder / "summary.json").write_text(json.dumps({"run": "clip-tiny/seed0", "config_hash": old}))
    return folder


def test_a_legacy_run_is_refused_with_the_restamp_line_then_restamped_and_loads(tmp_path):
    folder = legacy_run(tmp_path / "results", drop=("train", "compile"))  # trained before train.compile existed
    with pytest.raises(CheckpointError, match="argent restamp --run") as err:
        load_model(folder)
    assert str(folder) in str(err.value)
    cfg, plan = default_plan()
    outcome = restamp_run(folder, cfg, plan, ROOT)
    assert outcome.status == "restamped", outcome.message
    model, exp = load_model(folder)
    state = torch.load(folder / "checkpoint.pt", weights_only=True)
    assert state["config_hash"] == exp.result_hash() and state["identity_version"] == IDENTITY_VERSION
    assert json.loads((folder / "summary.json").read_text())["config_hash"] == exp.result_hash()
    assert exp.result_hash() == run_identity(*_main_run())  # the workflow now sees it as finished
    assert restamp_run(folder, cfg, plan, ROOT).status == "current"


def test_restamp_refuses_a_differing_config_naming_the_key(tmp_path, capsys):
    folder = legacy_run(tmp_path / "results")
    before = (folder / "checkpoint.pt").read_bytes()
    cfg = merged_config(Path("config/config.yaml"), ["train.steps=300"], ROOT)
    outcome = restamp_run(folder, cfg, build_plan(WorkflowConfig(cfg), ROOT), ROOT)
    assert outcome.status == "refused" and "train.steps" in outcome.message and str(folder) in outcome.message
    assert (folder / "checkpoint.pt").read_bytes() == before  # nothing written
    code = argent_main(["restamp", "--run", str(folder), "--config", "config/config.yaml", "--set", "train.steps=300",
                        "--base-dir", str(ROOT)])
    err = capsys.readouterr().err
    assert code == 2 and "train.steps" in err and "not re-stamped" in err
    code = argent_main(["restamp", "--results", str(tmp_path / "results"), "--base-dir", str(ROOT)])
    out = capsys.readouterr().out
    assert code == 0 and "re-stamped" in out and "snakemake --cleanup-metadata" in out
    load_model(folder)


def test_restamp_refuses_a_checkpoint_of_another_config(tmp_path):
    folder = legacy_run(tmp_path / "results")
    state = torch.load(folder / "checkpoint.pt", weights_only=True)
    torch.save({**state, "config_hash": "0123456789abcdef"}, folder / "checkpoint.pt")
    cfg, plan = default_plan()
    outcome = restamp_run(folder, cfg, plan, ROOT)
    assert outcome.status == "refused" and "another config" in outcome.message
