"""argent/plan/cost.py before anything is measured: a GPU size without a step time shows the FLOP-model
estimate (argent/models/flops.py) labelled as one, apart from the measured total, which stays what it was."""

import pytest

from argent.cli import main as argent_main
from argent.config import ConfigError, WorkflowConfig
from argent.plan.cost import PUBLISHED_MFU, PUBLISHED_MFU_SOURCE, cost_section, group_costs
from argent.plan.cost_report import summary_line, table
from argent.plan.groups import build_plan
from tests.fixtures import ROOT


def _cfg(cost: dict | None = None, **groups) -> dict:
    return {"variants_file": str(ROOT / "config" / "variants.yaml"),
            "runs": {"sizes": ["S"], "seeds": [0], "gpus": 8},
            "train": {"steps": 1000, "batch_size": 768, "device": "cuda", "precision": "bf16"},
            "optim": {"warmup_steps": 10}, "negatives": {"wordnet_zip": ""}, "cost": cost or {},
            "groups": groups or {"main": {"variants": ["clip", "argent"]}}}


def _plan(cfg: dict) -> tuple[str, str, list]:
    plan = build_plan(WorkflowConfig(cfg), ROOT)
    costs = group_costs(WorkflowConfig(cfg), plan, ROOT)
    return table(costs), summary_line(costs, plan), costs


# clip + argent at S, 1000 steps, batch 768, 8 GPUs: (34.65 + 69.31) TFLOP per step each at the published
# 13 % of 312 TFLOP/s (open_clip's ViT-B/16 on A100: docs/scaling.md §4)
CLIP_S, ARGENT_S = 34.653e12 / (8 * 0.13 * 312e12), 69.306e12 / (8 * 0.13 * 312e12)
HOURS = 1000 * (CLIP_S + ARGENT_S) * 8 / 3600


def test_a_size_without_a_step_time_shows_the_estimate_labelled_and_no_total():
    text, line, (cost,) = _plan(_cfg())
    assert cost.hours() is None and cost.estimated_hours() == pytest.approx(HOURS, rel=1e-3)
    assert cost.estimate["S"].seconds == pytest.approx({"clip": CLIP_S, "argent": ARGENT_S}, rel=1e-3)
    # the main table still says unknown; the estimate has its own heading, table and group label
    assert "?       unknown GPU-h  unknown: set cost.step_seconds.S" in text
    assert f"main: 2 runs trained, unknown GPU-h; estimate (FLOP model at 13 % MFU, not measured) ≈ {HOURS:,.1f} GPU-h" \
        in text
    # the MFU it assumes, and its source, beside the estimate: published until one is set
    assert "Estimate, not measured," in text
    assert f"cost.estimate_mfu 0.13 ({PUBLISHED_MFU_SOURCE}) × cost.gpu_peak_tflops 312 TFLOP/s" in text
    assert "34.7–69.3" in text
    assert "no measured step time" in line and "no estimate" not in line
    assert (f"FLOP-model estimate at 13 % MFU ({PUBLISHED_MFU_SOURCE}) for the 1 group(s) not measured, not in the "
            f"total: ≈ {HOURS:,.1f} GPU-h") in line


def test_the_default_mfu_is_the_published_one_and_a_set_one_is_named_as_the_configs():
    assert PUBLISHED_MFU == 0.13 and cost_section({}).estimate_mfu == PUBLISHED_MFU
    assert PUBLISHED_MFU_SOURCE.startswith("published: open_clip") and "docs/scaling.md" in PUBLISHED_MFU_SOURCE
    text, line, (cost,) = _plan(_cfg({"estimate_mfu": 0.2}))
    assert cost.estimate["S"].mfu_source == "config cost.estimate_mfu"
    assert "cost.estimate_mfu 0.2 (config cost.estimate_mfu)" in text and "20 % MFU (config cost.estimate_mfu)" in line
    assert "published" not in text + line


def test_the_measured_total_stays_the_measured_total():
    cfg = _cfg({"step_seconds": {"S": 0.5}}, main={"variants": ["clip", "argent"]},
               big={"variants": ["clip"], "sizes": ["B"]})
    text, line, costs = _plan(cfg)
    main, big = costs
    measured = 2 * 1000 * 0.5 * 8 / 3600
    assert main.hours() == pytest.approx(measured) and main.estimate == {} and main.estimated_hours() is None
    assert big.hours() is None and big.estimated_hours() is not None
    assert line.startswith(f"argent plan: 3 training runs (0 borrowed, not retrained) in 2 groups, ≈ {measured:,.1f} GPU-h;")
    assert "step time unknown for size(s) B (left out of the total)" in line
    assert f"not in the total: ≈ {big.estimated_hours():,.1f} GPU-h" in line
    assert f"main: 2 runs trained, {measured:,.1f} GPU-h\n" in text  # a measured group's line, unlabelled
    # with every size measured nothing is estimated and the output has no trace of it
    cfg["cost"]["step_seconds"]["B"] = 1.0
    text, line, _ = _plan(cfg)
    assert "estimate" not in text.lower() and "estimate" not in line.lower()


def test_config_values_change_the_estimate_and_bad_ones_are_named():
    base = _plan(_cfg())[2][0].estimated_hours()
    faster = _plan(_cfg({"estimate_mfu": 2 * PUBLISHED_MFU}))[2][0].estimated_hours()
    h100 = _plan(_cfg({"gpu_peak_tflops": 989}))[2][0].estimated_hours()
    assert faster == pytest.approx(base / 2) and h100 == pytest.approx(base * 312 / 989)
    assert "cost.estimate_mfu 0.7 (config cost.estimate_mfu)" in _plan(_cfg({"estimate_mfu": 0.7}))[0]
    for cost, message in (({"estimate_mfu": 1.5}, r"cost\.estimate_mfu: 1\.5 is out of range"),
                          ({"gpu_peak_tflops": 0}, r"cost\.gpu_peak_tflops: 0(\.0)? is out of range"),
                          ({"gpu_peak_tflop": 989}, r"cost: unknown key\(s\) \['gpu_peak_tflop'\]"),
                          ({"estimate_mfu": "fast"}, r"cost\.estimate_mfu: expected a number")):
        with pytest.raises(ConfigError, match=message):
            cost_section({"cost": cost})


def test_a_cpu_config_gets_no_estimate():
    cfg = _cfg()
    cfg["train"]["device"] = "cpu"
    cfg["runs"]["gpus"] = 0
    text, line, (cost,) = _plan(cfg)
    assert cost.estimate == {} and "estimate" not in text.lower() and "no estimate" in line


def test_paper_config_main_group_matches_the_docs_gpu_hours(capsys):
    assert argent_main(["plan", "--config", "config/paper.yaml", "--base-dir", str(ROOT),
                        "--set", "groups.negatives.optional=true"]) == 0
    out = capsys.readouterr().out
    # docs/scaling.md §4: Table 2 ≈ 8,740 A100-hours, Table 3 ≈ 560 (ablations 132.9 + ablations_scale 428.2)
    assert "main: 12 runs trained, unknown GPU-h; estimate (FLOP model at 13 % MFU, not measured) ≈ 8,740.9 GPU-h" in out
    assert "ablations: 9 runs trained, unknown GPU-h; estimate (FLOP model at 13 % MFU, not measured) ≈ 132.9 GPU-h" \
        in out
    assert ("ablations_scale: 4 runs trained, unknown GPU-h; estimate (FLOP model at 13 % MFU, not measured) "
            "≈ 428.2 GPU-h") in out
    assert "no measured step time" in out.splitlines()[-1]


def test_the_step_seconds_note_is_printed_as_their_source():
    text, _, _ = _plan(_cfg({"step_seconds": {"S": 0.5}, "batch_size": 384, "note": "8xA100 bf16, 2026-11"}))
    assert "config cost.step_seconds (8xA100 bf16, 2026-11) scaled from batch 384" in text
    text, _, _ = _plan(_cfg({"step_seconds": {"S": 0.5}}))
    assert "config cost.step_seconds" in text and "(" not in text.split("config cost.step_seconds")[1].split("\n")[0]
