"""End to end on a small generated hiershapes set and on slices of the real data.

A randomly initialised tiny model runs every protocol through ``argent evaluate`` (config entry,
run folder, atomic JSON) so the embedded benchmark and the real data share one path. The
numbers of a random model mean nothing; the checks are on counts, ranges and the JSON layout.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from argent.config import experiment_from_dict
from argent.evaluation.benchmarks import parse_benchmark
from argent.evaluation.cli import main as evaluate_main
from argent.evaluation.runner import evaluate
from tests.fixtures import HS_BENCHMARKS, ROOT

SHARED = ROOT.parent / "shared" / "data"
HIERARCAPS = SHARED / "hierarcaps"
SUGARCREPE = SHARED / "sugarcrepe"


def _run_folder(root: Path, variant: str) -> Path:
    """A run folder as ``argent train`` leaves it: resolved config.yaml + checkpoint.pt."""
    cfg = experiment_from_dict({}, variant, "tiny", 0, base_dir=ROOT)
    torch.manual_seed(0)
    from argent.models import build_model

    model = build_model(cfg.model, cfg.variant.geometry)
    run = root / f"{variant}-tiny" / "seed0"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    torch.save({"model": model.state_dict(), "config_hash": cfg.result_hash()}, run / "checkpoint.pt")
    return run


@pytest.mark.parametrize("variant", ["argent", "clip"])
def test_cli_every_protocol_on_hiershapes(hiershapes: Path, tmp_path: Path, variant: str) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"benchmarks": HS_BENCHMARKS}))
    run = _run_folder(tmp_path / "runs", variant)
    manifest = json.loads((hiershapes / "manifest.json").read_text())["counts"]
    for name in HS_BENCHMARKS:
        out = tmp_path / "eval" / f"{name}.json"
        argv = ["--run", str(run), "--benchmark", name, "--config", str(config), "--out", str(out),
                "--base-dir", str(hiershapes.parent), "--threads", "1"]
        assert evaluate_main(argv) == 0, name
        result = json.loads(out.read_text())
        assert result["benchmark"] == name and result["protocol"] == HS_BENCHMARKS[name]["protocol"]
        assert result["run"] == str(run) and len(result["config_hash"]) == 16
        assert result["variant"] == variant and result["counts"]["skipped"] == {}
        m = result["metrics"]
        protocol = result["protocol"]
        if protocol == "zeroshot":
            assert result["counts"]["n_items"] == manifest["classification"]
            assert 0 <= m["top1"] <= 1 and m["tie"] >= 0 and m["lca"] >= 1 and 0 <= m["jaccard"] <= 1
        elif protocol == "retrieval":
            assert set(m) == {"i2t_R@1", "i2t_R@5", "t2i_R@1", "t2i_R@5"}
            assert m["i2t_R@1"] <= m["i2t_R@5"]
        elif protocol == "pep" and variant == "clip":
            assert result["status"] == "n/a" and m["auc"] is None
        elif protocol == "pep":
            assert m["n_positive"] == 4 * manifest["test"] and 0 <= m["auc"] <= 1
        elif protocol == "hierarcaps":
            assert -1 <= m["kendall_tau"] <= 1 and 0 <= m["threshold_recall"] <= 1
        elif protocol == "compositional":
            assert result["counts"]["n_items"] == sum(manifest["sugarcrepe"].values())
            assert {f"acc_{c}" for c in manifest["sugarcrepe"]} <= set(m)
        elif protocol == "analysis":
            key = "radius" if variant == "argent" else "unnormalised_norm"
            assert {"image", "caption", "crop", "phrase", "caption_L1", "caption_L4"} <= set(m[key])
            # images of both sources (HierarCaps split + val shards) pooled under one type
            assert result["counts"]["n_image"] == manifest["test"] + manifest["val"]
            assert result["counts"]["n_crop"] == result["counts"]["n_phrase"] > 0
            for figure in result["figures"].values():
                assert Path(figure).is_file() and Path(figure).read_bytes()[:4] == b"\x89PNG"
    assert sorted(p.name for p in (tmp_path / "eval").iterdir() if p.name.startswith(".")) == []  # no temp files left


def test_cli_reports_bad_config(hiershapes: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"benchmarks": {"bad": {"protocol": "retrieval", "annotations": "a", "image_dir": "b", "kz": [1]}}}))
    run = _run_folder(tmp_path / "runs", "meru")
    out = tmp_path / "bad.json"
    assert evaluate_main(["--run", str(run), "--benchmark", "bad", "--config", str(config), "--out", str(out)]) == 2
    assert "benchmarks.bad.kz: unknown key" in capsys.readouterr().err
    assert not out.exists()


# ------------------------------------------------------------------ real data slices
needs_hierarcaps = pytest.mark.skipif(
    not (HIERARCAPS / "hierarcaps_test.csv").is_file(), reason=f"real HierarCaps not found at {HIERARCAPS}"
)


@pytest.fixture(scope="module")
def tiny_lorentz():
    from argent.config import model_from
    from argent.models import build_model

    torch.manual_seed(0)
    return build_model(model_from("tiny"), "lorentz")


@needs_hierarcaps
@pytest.mark.shared_data
def test_real_hierarcaps_slice(tiny_lorentz) -> None:
    common = {"hierarcaps_csv": str(HIERARCAPS / "hierarcaps_test.csv"), "image_dir": str(HIERARCAPS / "images"), "limit": 20}
    pep = evaluate(tiny_lorentz, "hc_pep", parse_benchmark("hc_pep", {"protocol": "pep", **common}))
    # 20 rows with distinct level-4 captions: 80 positives, 20 × 19 negatives.
    assert (pep["metrics"]["n_positive"], pep["metrics"]["n_negative"]) == (80, 380)
    assert pep["counts"]["skipped"] == {}
    hc = evaluate(tiny_lorentz, "hc", parse_benchmark("hc", {"protocol": "hierarcaps", **common}))
    assert hc["counts"]["n_images"] == 20 and hc["metrics"]["kendall_tau_rows"] == 20


@pytest.mark.skipif(not SUGARCREPE.is_dir() or not (HIERARCAPS / "images").is_dir(), reason="real SugarCrepe or COCO images absent")
@pytest.mark.shared_data
def test_real_sugarcrepe_slice(tiny_lorentz) -> None:
    # The shared images hold 1,544 of the 7,511 SugarCrepe images; the rest are skipped and counted.
    entry = parse_benchmark("sc", {"protocol": "compositional", "json_dir": str(SUGARCREPE), "image_dir": str(HIERARCAPS / "images"), "limit": 3})
    result = evaluate(tiny_lorentz, "sc", entry)
    assert result["counts"]["n_items"] == 7 * 3
    assert result["counts"]["skipped"]["missing_image"] == 7511 - 1544
    assert {"mean_replace", "mean_swap", "mean_add", "mean"} <= set(result["metrics"])


def test_evaluate_reads_a_partial_config_merged_over_the_default(tmp_path, capsys, monkeypatch):
    # config/quick.yaml has no benchmarks: section; merged over config/config.yaml it has the default's
    monkeypatch.chdir(Path(__file__).resolve().parents[3])
    argv = ["--run", str(tmp_path / "no-run"), "--config", "config/quick.yaml", "--benchmark", "hs_zeroshot",
            "--out-dir", str(tmp_path)]
    assert evaluate_main(argv) == 2
    err = capsys.readouterr().err
    assert "no-run" in err and "benchmarks" not in err
    assert evaluate_main([*argv, "--no-default"]) == 2
    assert "benchmarks" in capsys.readouterr().err  # the file alone, as before
