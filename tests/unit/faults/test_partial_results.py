"""Results computed from fewer rows than their input holds say so: the probe's result JSON and the
cleaning's summary.json carry ``"partial": true`` and log ``PARTIAL result`` (as evaluation results
do, through the same helper); a complete input gives ``"partial": false``; strict mode fails."""

from __future__ import annotations

import json
import logging
import shutil

import pytest
import torch

from argent.config import model_from
from argent.data.hiershapes.generate import HiershapesParams, generate
from argent.data.policy import BadDataError, BadDataPolicy
from argent.models import build_model
from argent.probe.config import ProbeOptions
from argent.probe.run import probe_model
from tests.fixtures import COCO_URL, args_for, chain, write_fixture

PROBE = dict(seeds=[0], levels=[0, 100], ablations=["random"], shuffles=["none"], epochs=1, batch_size=32,
             encode_batch_size=64)


@pytest.fixture(scope="module")
def classification(tmp_path_factory):
    out = tmp_path_factory.mktemp("hiershapes") / "hs"
    generate(HiershapesParams(per_class=6, train_scenes=4, val_scenes=4, test_scenes=4, shard_size=4), out, jobs=1)
    return out / "classification"


def test_probe_from_fewer_images_says_partial(classification, tmp_path, caplog):
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = build_model(model_from("tiny"), "lorentz")
    whole = probe_model(model, classification, cfg=ProbeOptions(**PROBE))
    assert whole["partial"] is False and whole["data"]["skipped"] == {}
    json.dumps(whole, allow_nan=False)

    broken = tmp_path / "classification"
    shutil.copytree(classification, broken)
    victim = sorted(broken.rglob("*.jpg"))[5]
    victim.write_bytes(b"not a jpeg")
    caplog.set_level(logging.WARNING)
    result = probe_model(model, broken, cfg=ProbeOptions(**PROBE), policy=BadDataPolicy("skip"))
    assert result["partial"] is True
    assert result["data"]["n_images"] == whole["data"]["n_images"] - 1 and sum(result["data"]["skipped"].values()) == 1
    assert "PARTIAL result" in caplog.text and str(broken) in caplog.text
    with pytest.raises(BadDataError, match=victim.name):
        probe_model(model, broken, cfg=ProbeOptions(**PROBE), policy=BadDataPolicy("strict"))


def test_cleaning_from_fewer_rows_says_partial(tmp_path, caplog):
    from argent.cleaning.run import run

    csv_path, images, scorer = write_fixture(tmp_path / "whole")
    summary = run(args_for(csv_path, images, tmp_path / "out-whole"), scorer=scorer)
    assert summary["partial"] is False
    assert json.loads((tmp_path / "out-whole" / "summary.json").read_text())["partial"] is False

    extra = [["15", chain("a lighthouse on a cliff"), COCO_URL.format(99999)]]  # its image is missing (row 16)
    csv_path, images, scorer = write_fixture(tmp_path / "broken", extra)
    caplog.set_level(logging.WARNING)
    summary = run(args_for(csv_path, images, tmp_path / "out"), scorer=scorer)
    written = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["partial"] is True and written["partial"] is True
    assert written["bad_data"]["counts"] == {"missing_image": 1}
    assert "PARTIAL result" in caplog.text and str(csv_path) in caplog.text
