"""Losses that used to pass without a word now leave a count in the result JSON and one log line, and
a partial flag where the number is degraded: captions cut to the model's context, and a PEP whose every
pair is scored 0 (AUC 0.5 by construction, not a measurement)."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

import pytest
import torch

from argent.config import model_from
from argent.data.hiershapes import cli as synth
from argent.evaluation.benchmarks import parse_benchmark
from argent.evaluation.runner import evaluate
from argent.models import build_model


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("hs") / "hiershapes"
    args = ["--out", str(out), "--train-scenes", "4", "--val-scenes", "0", "--test-scenes", "8", "--per-class", "1",
            "--shard-size", "8"]
    assert synth.main(args) == 0
    return out


def model(context_length: int, geometry: str = "lorentz") -> torch.nn.Module:
    torch.manual_seed(0)
    return build_model(dataclasses.replace(model_from("tiny"), context_length=context_length), geometry)


def retrieval(shapes: Path):
    return parse_benchmark("hs_retrieval", {"protocol": "retrieval", "format": "karpathy", "ks": [1],
                                            "annotations": str(shapes / "retrieval" / "dataset_hiershapes.json"),
                                            "image_dir": str(shapes / "retrieval" / "images")})


def test_captions_cut_to_the_context_are_counted_and_logged(shapes, caplog):
    with caplog.at_level(logging.WARNING):
        cut = evaluate(model(6), "hs_retrieval", retrieval(shapes))
    assert cut["counts"]["truncated_texts"] > 0
    assert any("cut to fit" in r.getMessage() and "context_length" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        whole = evaluate(model(77), "hs_retrieval", retrieval(shapes))
    assert whole["counts"]["truncated_texts"] == 0 and not any("cut to fit" in r.getMessage() for r in caplog.records)


def test_a_pep_with_every_score_zero_is_flagged_partial(shapes, caplog):
    entry = parse_benchmark("hs_pep", {"protocol": "pep", "hierarcaps_csv": str(shapes / "hierarcaps" / "hierarcaps_test.csv"),
                                       "image_dir": str(shapes / "hierarcaps" / "images")})
    # A cone's half-aperture shrinks as its text moves away from the origin: texts near it have wide
    # cones that hold some images; texts far from it (as an untrained model's are) hold none.
    near, far = model(32), model(32)
    with torch.no_grad():
        near.textual_proj.weight.mul_(1e-3)
        far.textual_proj.weight.mul_(1e3)
        far.textual_alpha.zero_()
    healthy = evaluate(near, "hs_pep", entry)
    assert healthy["metrics"]["zero_score_share"] < 1.0 and healthy["partial"] is False and "degraded" not in healthy
    with caplog.at_level(logging.WARNING):
        flat = evaluate(far, "hs_pep", entry)
    assert flat["metrics"]["zero_score_share"] == 1.0 and flat["metrics"]["auc"] == 0.5
    assert flat["partial"] is True and "all ties" in flat["degraded"][0]
    assert any("PARTIAL result, degraded" in r.getMessage() for r in caplog.records)
