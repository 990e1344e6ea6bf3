"""Files argent reads back are checked for shape, not only syntax (issue 37, item 2).

Each case was a traceback (or a silent wrong result); each is now one ``ArgentError`` naming the
file or key and what was expected, printed by argent's one error boundary with exit 2, or, where
it says so, a flagged result. Tiny inputs built by hand; no training."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from argent.config import ConfigError, WorkflowConfig, load_config
from argent.plan.dag import build_dag
from argent.tablespec.claims import load_claims
from argent.tablespec.section import Column
from tests.fixtures import ROOT, tiny_exp

MARGINS = {"tie": {"delta": 0.05, "why": "test"}, "zeroshot": {"delta": 1.0, "why": "test"}}
CLAIM = {"id": "c1", "source": "T", "a": "argent", "b": "meru", "primary": "tie", "metrics": {"tie": {"expect": "better"}}}


def _claims(tmp_path: Path, **change) -> Path:
    path = tmp_path / "claims.yaml"
    path.write_text(yaml.safe_dump({"margins": MARGINS, "claims": [{**CLAIM, **change}]}))
    return path


def _workflow(tmp_path: Path, **sections) -> Path:
    """A config file merged over config/config.yaml by every reader (argent check, plan; the DAG)."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"results": str(tmp_path / "results"), **sections}))
    return path


# ---- 1. the claims file ---------------------------------------------------------------------------


@pytest.mark.parametrize("key, value", [("id", ["c1", "c2"]), ("primary", ["tie"]), ("a", {"x": 1})])
def test_a_claim_field_of_the_wrong_shape_names_file_and_key(tmp_path, key, value):
    path = _claims(tmp_path, **{key: value})
    with pytest.raises(ConfigError, match=rf"{path}: claims\[0\]\.{key}: expected text"):
        load_claims(path)


def test_a_claims_file_that_is_not_yaml_is_one_message(tmp_path, argent):
    bad = tmp_path / "claims.yaml"
    bad.write_text("claims: [\n  {id: x, a: [\n")
    with pytest.raises(ConfigError, match=rf"{bad}: not a YAML claims file"):
        load_claims(bad)
    code, err = argent("check", "--config", _workflow(tmp_path, tables={"claims": {"file": str(bad)}}))
    assert code == 2 and f"{bad}: not a YAML claims file" in err and "Traceback" not in err


@pytest.mark.parametrize("a, b", [("argent", "argent"), ("argent", "main/argent"), ("ablations/x", "ablations/x")])
def test_a_claim_comparing_a_run_with_itself_is_refused(tmp_path, a, b):
    path = _claims(tmp_path, a=a, b=b)
    with pytest.raises(ConfigError, match=rf"claim c1: a: '{a}' and b: '{b}' are the same run"):
        load_claims(path)


def test_a_broken_claims_file_stops_the_dag_build_and_argent_check(tmp_path, argent):
    path = _claims(tmp_path, primary=["tie"])
    config = _workflow(tmp_path, tables={"claims": {"file": str(path)}})
    with pytest.raises(ConfigError, match=r"claims\[0\]\.primary: expected text"):
        build_dag(load_config(config, base_dir=ROOT).raw, ROOT)  # snakemake -n's DAG build
    code, err = argent("check", "--config", config)
    assert code == 2 and "claims[0].primary: expected text" in err and "Traceback" not in err
    # a missing file too, and the role map's values
    from argent.tablespec.claims import check_claims

    with pytest.raises(ConfigError, match=r"tables.claims.file: .*absent.yaml: claims file not found"):
        check_claims(WorkflowConfig({"tables": {"claims": {"file": "absent.yaml"}}}), tmp_path)
    with pytest.raises(ConfigError, match=r"tables.claims.metrics.tie\[0\].scale: expected a number"):
        check_claims(WorkflowConfig({"tables": {"claims": {"file": str(_claims(tmp_path)), "metrics": {
            "tie": [{"benchmark": "b", "metric": "m", "scale": "x"}]}}}}), tmp_path)
    assert check_claims(WorkflowConfig(load_config(ROOT / "config" / "config.yaml", base_dir=ROOT).raw), ROOT).claims  # shipped file


# ---- 2. the plan's cost: job records, the step-time record, a group's overrides -----------------


def _finished_job(results: Path, seconds: str = "30.0", train: dict | None = None) -> Path:
    run = results / "runs" / "main" / "clip-tiny" / "seed0"
    run.mkdir(parents=True)
    train = {"steps": 100, "batch_size": 8, "device": "cpu"} if train is None else train
    (run / "config.yaml").write_text(yaml.safe_dump({"size": "tiny", "train": train}))
    (run / "summary.json").write_text("{}")
    tsv = results / "benchmarks" / "train" / "main" / "clip-tiny-seed0.tsv"
    tsv.parent.mkdir(parents=True)
    tsv.write_text(f"s\th:m:s\n{seconds}\t0:00:30\n")
    return tsv


def test_a_job_record_whose_seconds_are_na_is_named(tmp_path, argent):
    tsv = _finished_job(tmp_path / "results", seconds="NA")
    code, err = argent("plan", "--record-from", tmp_path / "results")
    assert code == 2 and f"{tsv}: s (the job's wall seconds) is 'NA', expected a number ≥ 0" in err
    assert "Traceback" not in err


@pytest.mark.parametrize("train, said", [
    ({"batch_size": 8, "device": "cpu"}, "train.steps missing"),
    ({"steps": "many", "batch_size": 8, "device": "cpu"}, "train.steps: expected an integer, got 'many'"),
    ({"steps": 0, "batch_size": 8, "device": "cpu"}, "train.steps: 0 is out of range"),
])
def test_a_run_config_without_usable_steps_is_named(tmp_path, argent, train, said):
    _finished_job(tmp_path / "results", train=train)
    code, err = argent("plan", "--record-from", tmp_path / "results")
    config = tmp_path / "results" / "runs" / "main" / "clip-tiny" / "seed0" / "config.yaml"
    assert code == 2 and f"{config}: {said}" in err and "Traceback" not in err


@pytest.mark.parametrize("record, said", [
    ({"sizes": ["tiny"]}, "sizes: expected a mapping"),
    ({"sizes": {"tiny": {"step_seconds": 0.5, "device": "cpu"}}}, "sizes.tiny: "),
    ({"sizes": {"tiny": {"step_seconds": "fast", "batch_size": 8, "device": "cpu"}}},
     "sizes.tiny.step_seconds: expected a number"),
    ({"sizes": {"tiny": {"step_seconds": -1, "batch_size": 8, "device": "cpu"}}}, "step_seconds: -1"),
    ([1, 2], "expected a mapping"),
])
def test_a_hand_edited_step_time_record_of_the_wrong_shape_is_named(tmp_path, argent, record, said):
    path = tmp_path / "step_times.json"
    path.write_text(json.dumps(record))
    config = _workflow(tmp_path, cost={"step_times": str(path)})
    code, err = argent("plan", "--config", config, "--base-dir", ROOT)
    assert code == 2 and f"cost.step_times: {path}: " in err and said in err and "Traceback" not in err
    with pytest.raises(ConfigError, match="cost.step_times"):
        build_dag(load_config(config, base_dir=ROOT).raw, ROOT)  # snakemake -n


@pytest.mark.parametrize("overrides, said", [
    ({"train": {"steps": "x"}}, "groups.main.overrides.train.steps: expected an integer, got 'x'"),
    ({"train": {"stepz": 3}}, "groups.main.overrides.train: unknown key(s) ['stepz']"),
    ({"optim": {"lr": "fast"}}, "groups.main.overrides.optim.lr: expected a number"),
    ({"train_by_size": {"tiny": {"stepz": 3}}}, "groups.main.overrides.train_by_size.tiny: unknown key(s) ['stepz']"),
    ({"model": {"tiny": {"vision_widht": 3}}}, "groups.main.overrides.model.tiny: unknown key(s) ['vision_widht']"),
    ({"runs": {"gpus": "two"}}, "groups.main.overrides.runs.gpus: expected an integer, got 'two'"),
    ({"train": {"steps": -3}}, "groups.main.overrides.train.steps: -3 is out of range; must be >= 1"),
    ({"optim": {"warmup_steps": 10**6}}, "groups.main (the base config with its overrides), run "),  # across keys
])
def test_a_bad_key_in_a_groups_overrides_is_named_by_argent_plan(tmp_path, argent, overrides, said):
    config = _workflow(tmp_path, groups={"main": {"overrides": overrides}})
    code, err = argent("plan", "--config", config, "--base-dir", ROOT)
    assert code == 2 and said in err and "Traceback" not in err


# ---- 3. released models: the file, its values, its dtypes, the table ------------------------------

def _released_state(arch) -> dict:
    import torch

    from argent.models.pretrained.meru_layout import meru_layout

    gen = torch.Generator().manual_seed(0)
    state = {key: torch.randn(shape, generator=gen) * 0.05 for key, shape in meru_layout(arch, "meru").items()}
    state["textual.attn_mask"] = torch.ones(arch.context_length, arch.context_length, dtype=torch.bool).triu(1)
    return state


def _tiny_arch():
    from argent.models.pretrained.meru_towers import MeruArch

    return MeruArch(vision_width=32, vision_layers=1, vision_heads=2, image_size=32, patch_size=8, text_width=32,
                    text_layers=1, text_heads=2, embed_dim=16)


@pytest.mark.parametrize("content", [b"garbage" * 10, b"", b"\x08\x00\x00\x00\x00\x00\x00\x00{\"a\":1}"])
def test_a_garbage_safetensors_file_is_one_message(tmp_path, argent, content):
    from argent.models.pretrained.base import PretrainedError, read_state_dict

    bad = tmp_path / "hycoclip_vit_s.safetensors"
    bad.write_bytes(content)
    with pytest.raises(PretrainedError, match=rf"{bad}: not a readable .safetensors file"):
        read_state_dict(bad)
    config = _workflow(tmp_path, benchmarks={"zs": {"protocol": "zeroshot", "root": str(tmp_path)}})
    code, err = argent("evaluate", "--pretrained", f"meru:{bad}", "--arch", "vit_s", "--benchmark", "zs",
                       "--config", config, "--results", tmp_path / "results")
    assert code == 2 and "not a readable .safetensors file" in err and "Traceback" not in err


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_released_weights_are_refused_not_scored_as_chance(tmp_path, value):
    import torch

    from argent.models.pretrained.base import PretrainedError, read_state_dict

    state = _released_state(_tiny_arch())
    state["visual_proj.weight"][0, 0] = value
    path = tmp_path / "meru_tiny.pth"
    torch.save({"model": state}, path)
    with pytest.raises(PretrainedError, match=rf"{path}: key 'visual_proj.weight' holds 1 NaN/infinite value"):
        read_state_dict(path)


def test_a_causal_mask_stored_as_floats_is_refused_by_the_layout_check():
    from argent.models.pretrained.base import PretrainedError
    from argent.models.pretrained.meru_layout import adapter_from_state_dict

    arch = _tiny_arch()
    state = _released_state(arch)
    assert adapter_from_state_dict(dict(state), arch, "meru", "ok.pth").geometry == "lorentz"  # bool: loads
    state["textual.attn_mask"] = state["textual.attn_mask"].float()  # 0/1: would be *added* to the scores
    with pytest.raises(PretrainedError, match=r"float.pth: does not fit layout .*'textual.attn_mask' has dtype "
                                              r"torch.float32, the layout expects a bool tensor"):
        adapter_from_state_dict(state, arch, "meru", "float.pth")


def test_a_partial_pretrained_evaluation_is_marked_in_the_pretrained_table(tmp_path):
    from argent.tables.pretrained import pretrained_table

    folder = tmp_path / "eval" / "pretrained" / "hycoclip-S" / "seed0"
    folder.mkdir(parents=True)
    source = {"layout": "meru", "arch": "vit_s"}
    (folder / "zs.json").write_text(json.dumps({"metrics": {"top1": 0.5}, "partial": True, "pretrained": source}))
    (folder / "ret.json").write_text(json.dumps({"metrics": {"t2i_R@5": 0.25}, "partial": False, "pretrained": source}))
    md, records = pretrained_table(tmp_path / "eval", [Column("Cls", "zs", "top1", 100), Column("R@5", "ret", "t2i_R@5")])
    assert "| hycoclip-S | meru:vit_s | 50.0 † | 0.2 |" in md and "† = an evaluation marked partial" in md
    assert records[0]["Cls partial"] is True and records[0]["R@5 partial"] is False


# ---- 4. a trained run's checkpoint with a non-finite scalar ----------------------------------------

@pytest.mark.parametrize("name, value", [("log_curv", float("inf")), ("visual_proj.weight", float("nan"))])
def test_a_checkpoint_with_non_finite_values_is_refused_when_loaded(tmp_path, argent, name, value):
    import torch

    from argent.models import build_model
    from argent.runs import RunFolder

    exp = tiny_exp()
    run = RunFolder(tmp_path / "runs" / "meru-tiny" / "seed0")
    run.root.mkdir(parents=True)
    run.config.write_text(yaml.safe_dump(exp.to_dict(), sort_keys=False))
    model = build_model(exp.model, exp.variant.geometry)
    state = model.state_dict()
    state[name] = torch.full_like(state[name], value)
    torch.save({"model": state, "config_hash": exp.result_hash(), "step": 2}, run.checkpoint)
    run.summary.write_text("{}")
    config = _workflow(tmp_path, benchmarks={"zs": {"protocol": "zeroshot", "root": str(tmp_path / "none")}})
    code, err = argent("evaluate", "--run", run.root, "--benchmark", "zs", "--config", config,
                       "--out-dir", tmp_path / "eval")
    assert code == 2 and f"{run.checkpoint}: model entry {name!r} holds NaN or infinite values" in err
    assert "Traceback" not in err and not (tmp_path / "eval").exists()


# ---- 5. stage sections: clean.device, the tuning objective, the analysis' max_points ---------------

def test_an_unknown_cleaning_device_fails_argent_check(tmp_path, argent):
    code, err = argent("check", "--config", _workflow(tmp_path, clean={"device": "tpu"}))
    assert code == 2 and "clean.device: 'tpu' is not a device" in err and "Traceback" not in err


def test_a_misspelt_objective_metric_is_refused_before_any_trial(tmp_path):
    from argent.tuning import parse_tune, validation_benchmarks

    benchmarks = {"zs_val": {"protocol": "zeroshot", "split": "val", "root": "data/zs_val"},
                  "pep_val": {"protocol": "pep", "split": "val", "hierarcaps_csv": "data/p.csv", "image_dir": "data/i"},
                  "ret_val": {"protocol": "retrieval", "split": "val", "annotations": "data/a.json", "image_dir": "i"}}
    for metric, benchmark in (("top1", "zs_val"), ("auc", "pep_val"), ("auc_L3", "pep_val"), ("t2i_R@10", "ret_val")):
        tune = parse_tune({"study": "s", "objective": [{"benchmark": benchmark, "metric": metric, "weight": 1.0}]})
        assert validation_benchmarks(tune, {"benchmarks": benchmarks}, base_dir=tmp_path)  # produced: accepted
    for metric, benchmark, listed in (("top_1", "zs_val", "'mean_per_class'"), ("aucc", "pep_val", "'raw_auc'"),
                                      ("t2i_R@1", "ret_val", "'t2i_R@5'"), ("tie", "zs_val", "'top1'")):
        tune = parse_tune({"study": "s", "objective": [{"benchmark": benchmark, "metric": metric, "weight": 1.0}]})
        with pytest.raises(ConfigError, match=rf"tune.objective\[0\].metric: '{metric}' is not a metric of "
                                              rf"benchmarks.{benchmark} .*{listed}"):
            validation_benchmarks(tune, {"benchmarks": benchmarks}, base_dir=tmp_path)


@pytest.mark.parametrize("value", [0, -1])
def test_analysis_max_points_below_one_is_refused_where_the_entry_is_parsed(tmp_path, argent, value):
    from argent.evaluation.benchmarks import parse_benchmark

    raw = {"protocol": "analysis", "shards": "data/x/shard-*.tar", "max_points": value}
    with pytest.raises(ConfigError, match=rf"benchmarks.hs_analysis.max_points: {value} is out of range; must be >= 1"):
        parse_benchmark("hs_analysis", raw)
    code, err = argent("check", "--config", _workflow(tmp_path, benchmarks={"hs_analysis": {"max_points": value}}))
    assert code == 2 and f"benchmarks.hs_analysis.max_points: {value} is out of range" in err
