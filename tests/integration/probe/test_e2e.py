"""End to end: the probe on a tiny hiershapes classification split with randomly initialised tiny
models, through ``probe_model`` (a model object) and ``argent probe`` (a run folder), and the figure."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml

from argent.config import experiment_from_dict, model_from
from argent.data.hiershapes.generate import HiershapesParams, generate
from argent.models import build_model
from argent.probe import cli, figure
from argent.probe import run as probe_run
from argent.probe.config import ProbeOptions
from tests.fixtures import ROOT

SMALL = dict(seeds=[0], levels=[0, 50, 100], ablations=["random", "systematic"], shuffles=["none", "within"],
             epochs=1, batch_size=32, encode_batch_size=64)


@pytest.fixture(scope="module")
def classification(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hiershapes") / "hs"
    params = HiershapesParams(per_class=10, train_scenes=4, val_scenes=4, test_scenes=4, shard_size=4)
    generate(params, out, jobs=1)
    return out / "classification"


@pytest.fixture(scope="module")
def lorentz_result(classification) -> dict:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = build_model(model_from("tiny"), "lorentz")
    flags = [p.requires_grad for p in model.parameters()]
    before = {k: v.clone() for k, v in model.state_dict().items()}
    result = probe_run.probe_model(model, classification, cfg=ProbeOptions(**SMALL))
    # The towers stay frozen (weights unchanged, no gradient left behind) and the caller's flags come back.
    assert [p.requires_grad for p in model.parameters()] == flags and model.training
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())
    return result


def test_result_schema(lorentz_result):
    r = lorentz_result
    json.dumps(r, allow_nan=False)
    assert r["protocol"] == "taxgen_probe" and r["schema_version"] == 1
    assert {"model", "data", "options", "method", "conditions", "seconds"} <= set(r)
    assert r["model"]["geometry"] == "lorentz"
    data = r["data"]
    assert data["n_images"] == 120 and len(data["leaves"]) == 12
    # hiershapes: shape, figure, plane figure are above every class; 7 hypernyms are asked.
    assert len(data["trivial_hypernyms"]) == 3
    assert sorted(h["name"] for h in data["hypernyms"].values()) == [
        "conic section", "ellipse", "isogon", "parallelogram", "polygon", "quadrilateral", "regular polygon"]
    assert "Is there an isogon in the image?" in data["questions"].values()
    names = [c["name"] for c in r["conditions"]]
    assert names == ["full/none", "random-50/none", "leaf_only/none", "systematic-50/none", "leaf_only/within"]


def test_condition_contents(lorentz_result):
    by_name = {c["name"]: c for c in lorentz_result["conditions"]}
    for cond in by_name.values():
        (record,) = cond["seeds"]
        counts = record["counts"]
        # 12 classes × 10 images: 7 train, 1 val, 2 test each; two leaf questions per image.
        assert counts["train"]["leaf"] == 2 * 12 * 7 and counts["test"]["leaf"] == 2 * 12 * 2
        assert counts["test"]["hypernym"] == counts["test"]["seen"] + counts["test"]["unseen"]
        for split in ("leaf", "seen", "unseen", "hypernym"):
            entry = record["metrics"]["test"][split]
            assert (entry is None) == (counts["test"][split] == 0)
            if entry:
                assert 0.0 <= entry["macro_f1"] <= 1.0
        assert all(v is None or -1.0 <= v <= 1.0 for v in record["coherence"].values())
    assert by_name["full/none"]["seeds"][0]["counts"]["train"]["withheld"] == 0
    assert by_name["full/none"]["summary"]["test"]["unseen"] is None
    assert by_name["leaf_only/none"]["seeds"][0]["counts"]["train"]["hypernym"] == 0
    assert by_name["leaf_only/none"]["summary"]["test"]["seen"] is None
    assert by_name["random-50/none"]["seeds"][0]["removed_leaves"]
    assert len(by_name["systematic-50/none"]["seeds"][0]["removed_hypernyms"]) == 3  # ⌊50 %·7⌋
    within = by_name["leaf_only/within"]
    assert len(within["within_groups"]) == 3 and "shuffle_mapping" in within["seeds"][0]


def _run_folder(root: Path) -> Path:
    """A run folder as ``argent train`` writes it, with an untrained tiny CLIP."""
    cfg = experiment_from_dict({}, "clip", "tiny", 0, base_dir=ROOT)
    run = root / "clip-tiny" / "seed0"
    run.mkdir(parents=True)
    (run / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=False))
    torch.manual_seed(0)
    torch.save({"model": build_model(cfg.model, cfg.variant.geometry).state_dict(), "config_hash": cfg.result_hash()},
               run / "checkpoint.pt")
    return run


def test_cli_and_figure(classification, lorentz_result, tmp_path):
    run = _run_folder(tmp_path)
    out = tmp_path / "probe" / "clip.json"
    config = tmp_path / "config.yaml"  # a workflow config: the probe reads its probe: section only
    config.write_text(yaml.safe_dump({
        "train": {"steps": 5},
        "probe": {"data": str(classification),
                  "options": {"seeds": [0], "levels": [0, 50, 100], "ablations": ["random"], "shuffles": ["none"],
                              "epochs": 3, "batch_size": 32}},
    }))
    code = cli.main(["--config", str(config), "--set", "probe.options.epochs=1", "--run", str(run), "--out", str(out),
                     "--quiet", "--threads", "1"])
    assert code == 0
    result = json.loads(out.read_text())
    assert result["model"]["family"] == "clip" and result["model"]["geometry"] == "euclidean"
    assert result["run"] == str(run) and len(result["config_hash"]) == 16
    assert result["options"]["epochs"] == 1 and result["options"]["lr"] == 1e-3
    assert [c["name"] for c in result["conditions"]] == ["full/none", "random-50/none", "leaf_only/none"]
    assert sorted(p.name for p in out.parent.iterdir()) == ["clip.json"]  # no temp file left

    other = dict(lorentz_result, model={**lorentz_result["model"], "family": "meru"})
    other_path = tmp_path / "probe" / "meru.json"
    probe_run.write_json(other_path, other)
    points = figure.exposure_points([result, other])
    assert set(points) == {"clip", "meru"}
    assert set(points["clip"]["random"]) == {50.0, 100.0}  # no unseen split at 0 %
    png = tmp_path / "fig" / "exposure.png"
    assert cli.main(["--figure", str(out), str(other_path), "--out", str(png)]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_errors(classification, tmp_path, capsys):
    assert cli.main(["--out", str(tmp_path / "x.json")]) == 2
    assert "--run is required" in capsys.readouterr().err
    run = _run_folder(tmp_path)
    data = f"probe.data={classification}"
    code = cli.main(["--run", str(run), "--set", data, "--out", str(tmp_path / "x.json"),
                     "--taxonomy", str(tmp_path / "missing.txt"), "--quiet"])
    assert code == 2 and "missing.txt" in capsys.readouterr().err
    assert cli.main(["--run", str(run), "--set", data, "--out", str(tmp_path / "x.json"),
                     "--set", "probe.options.ablations=[sideways]", "--quiet"]) == 2
    assert "probe.options.ablations[0]: 'sideways' is not allowed" in capsys.readouterr().err
    config = tmp_path / "config.yaml"
    config.write_text(f"probe:\n  data: {classification}\n  options: {{epoch: 1}}\n")
    assert cli.main(["--config", str(config), "--run", str(run), "--out", str(tmp_path / "x.json"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{config}: probe.options: unknown key(s) ['epoch']; allowed: ['seeds'," in err and "'epochs'" in err
    assert not (tmp_path / "x.json").exists()
