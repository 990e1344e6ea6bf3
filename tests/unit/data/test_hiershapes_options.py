"""hiershapes' options and its command line: the object-count mix, general_rate, caption_levels (each
read back through the real reader), ``argent synth`` writing and refusing to clobber, the params file
and an unknown class or key. The round trips of a generated set: test_hiershapes.py."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from PIL import Image

from argent.data.formats.grounded import read_grounded
from argent.data.hiershapes import cli
from argent.data.hiershapes.generate import HiershapesParams, generate
from argent.data.policy import BadDataPolicy
from tests.fixtures import HS_SMALL as SMALL


def test_count_weights_set_the_object_count_mix(tmp_path):
    from argent.data.hiershapes.params import context
    from argent.data.hiershapes.scene import sample_scene, scene_rng

    params = HiershapesParams(min_objects=1, max_objects=2, count_weights=[3, 1])
    ctx = context(params)
    counts = Counter(len(sample_scene(scene_rng(0, "train", i), ctx.vocab, ctx.palette, ctx.scene).objects) for i in range(400))
    assert 0.65 < counts[1] / 400 < 0.85
    with pytest.raises(ValueError, match="count_weights"):
        HiershapesParams(min_objects=1, max_objects=2, count_weights=[1]).check()


def test_general_rate_names_ancestors_in_training_captions_only():
    """general_rate 1: every object's noun in a training caption is a strict ancestor of its class
    and the spans still cut out the phrases; 0 (the default): the class name, as before."""
    from argent.data.hiershapes.params import context
    from argent.data.hiershapes.scene import general_names, grounded_json, sample_scene, scene_rng

    ctx = context(HiershapesParams(min_objects=1, max_objects=2))
    for i in range(30):
        scene = sample_scene(scene_rng(0, "train", i), ctx.vocab, ctx.palette, ctx.scene)
        assert general_names(scene, ctx.vocab, 0.0, np.random.default_rng(i)) is None
        assert grounded_json(scene, 64)["caption"] == scene.levels[3]
        names = general_names(scene, ctx.vocab, 1.0, np.random.default_rng(i))
        record = grounded_json(scene, 64, names)
        for obj, name, (start, end, *_box) in zip(scene.objects, names, record["noun_chunks"]):
            assert name in {c.name for c in ctx.vocab.path(obj.synset)[:-1]}
            assert record["caption"][start:end].endswith(f"{obj.colour_name} {name}")
        assert record["scene"]["objects"][0]["name"] == scene.objects[0].name
    with pytest.raises(ValueError, match="general_rate"):
        HiershapesParams(general_rate=1.5).check()


def test_caption_levels_caption_training_records_at_every_level(tmp_path):
    """caption_levels: training records captioned at the drawn level, read back by the real reader
    (levels 1-3: one region, the whole caption on the anchor's box); the images and every test
    split are those of the level-4-only data, and [] keeps the data byte-identical."""
    small = dict(SMALL, train_scenes=48, test_scenes=0, pep_val_scenes=0, per_class=0)
    plain = generate(HiershapesParams(seed=3, **small), tmp_path / "plain", jobs=1)
    generate(HiershapesParams(seed=3, caption_levels=[1, 1, 1, 1], **small), tmp_path / "mixed", jobs=1)
    assert plain["content_hash"] == generate(HiershapesParams(seed=3, caption_levels=[], **small), tmp_path / "p2", jobs=1)["content_hash"]
    policy = BadDataPolicy("strict")
    read = {name: {s.key: s for s in read_grounded(str(tmp_path / name / "train" / "*.tar"), min_box_area=plain["min_box_area"],
                                                   policy=policy)} for name in ("plain", "mixed")}
    assert policy.counts == {} and read["plain"].keys() == read["mixed"].keys()
    levels = Counter()
    for key, sample in read["mixed"].items():
        twin = read["plain"][key]
        assert np.array_equal(np.asarray(sample.image), np.asarray(twin.image))
        if sample.caption == twin.caption:
            levels[4] += 1
            continue
        anchor = twin.regions[0]
        level = {"a shape": 1}.get(sample.caption, 3 if sample.caption.split()[-1] == anchor.phrase.split()[-1] else 2)
        levels[level] += 1
        assert [(r.phrase, r.box) for r in sample.regions] == [(sample.caption, anchor.box)]
    assert all(levels[k] >= 4 for k in (1, 2, 3, 4)), levels  # 48 draws at 1/4 each
    with pytest.raises(ValueError, match="caption_levels"):
        HiershapesParams(caption_levels=[1, 1, 1]).check()
    with pytest.raises(ValueError, match="caption_levels"):
        HiershapesParams(caption_levels=[0, 0, 0, 0]).check()


def test_cli_writes_and_refuses_to_clobber(tmp_path, capsys):
    out = tmp_path / "hs"
    argv = ["--out", str(out), "--train-scenes", "8", "--val-scenes", "0", "--test-scenes", "4", "--per-class", "1",
            "--shard-size", "4", "--image-size", "48", "--max-objects", "2", "--jobs", "1",
            "--classes", "square.n.01", "circle.n.01", "star.n.05", "--colours", "red.n.01", "blue.n.01"]
    assert cli.main(argv) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["parameters"]["image_size"] == 48 and manifest["counts"]["train_shards"] == 2
    assert sorted(p.name for p in (out / "classification").iterdir() if p.is_dir()) == ["n13873502", "n13878634", "n13881644"]
    assert Image.open(next((out / "retrieval" / "images").iterdir())).size == (48, 48)
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["content_hash"] == manifest["content_hash"]
    assert cli.main(argv) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert cli.main(argv + ["--overwrite"]) == 0
    assert not list(tmp_path.glob(".hs.*"))  # no temp folder left behind


def test_params_file_and_bad_vocabulary(tmp_path, capsys):
    (tmp_path / "p.yaml").write_text("hiershapes:\n  classes: [square.n.01, dodecahedron.n.01]\n")
    assert cli.main(["--out", str(tmp_path / "x"), "--params", str(tmp_path / "p.yaml")]) == 2
    assert "dodecahedron" in capsys.readouterr().err and not (tmp_path / "x").exists()
    with pytest.raises(ValueError, match="dodecahedron"):
        generate(HiershapesParams(classes=["square.n.01", "dodecahedron.n.01"], **SMALL), tmp_path / "y")
    (tmp_path / "q.yaml").write_text("hiershapes:\n  train_scenez: 3\n")
    assert cli.main(["--out", str(tmp_path / "z"), "--params", str(tmp_path / "q.yaml")]) == 2
    assert "train_scenez" in capsys.readouterr().err
