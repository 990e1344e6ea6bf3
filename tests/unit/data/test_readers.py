"""Format readers and the bad-data policy: each bad case, injected into a small fixture, is skipped
and counted (default) or stops with file and row (strict); nothing else is lost."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from argent.data.formats.coco_karpathy import read_coco_captions, read_karpathy
from argent.data.formats.grounded import iter_captions, iter_records, read_grounded, read_plain, select_regions
from argent.data.formats.imagefolder import read_image_folder
from argent.data.formats.sugarcrepe import read_sugarcrepe
from argent.data.policy import BadDataError, BadDataPolicy
from argent.data.shards import ShardWriter, expand_shards

CAPTION = "a red square next to a blue circle"


def jpeg(size: tuple[int, int] = (64, 48), colour: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    """A reddish noisy image (noise makes the entropy-coded data large, so truncation hits pixels)."""
    noise = np.random.default_rng(0).integers(-40, 40, size=(size[1], size[0], 3))
    pixels = np.clip(np.array(colour) + noise, 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def span(phrase: str, box: list[float], caption: str = CAPTION) -> list[float]:
    start = caption.index(phrase)
    return [start, start + len(phrase), *box, 0.9]


def good_meta() -> dict:
    return {
        "caption": CAPTION, "width": 64, "height": 48,
        "noun_chunks": [span("a red square", [0.0, 0.0, 0.75, 1.0]), span("a blue circle", [0.5, 0.25, 1.0, 1.0])],
        "ref_exps": [span("a red square", [0.0, 0.0, 0.2, 0.2]), span(CAPTION, [0.0, 0.0, 1.0, 1.0])],
    }


def good_sample() -> dict[str, bytes]:
    return {"jpg": jpeg(), "json": json.dumps(good_meta()).encode()}


def _meta_with(**changes) -> bytes:
    meta = good_meta()
    meta.update(changes)
    return json.dumps(meta).encode()


BAD_CASES = {
    "missing_image": lambda: {"json": json.dumps(good_meta()).encode()},
    "corrupt_image": lambda: {"jpg": b"this is not a jpeg", "json": json.dumps(good_meta()).encode()},
    "truncated_image": lambda: {"jpg": jpeg()[: len(jpeg()) * 2 // 3], "json": json.dumps(good_meta()).encode()},
    "malformed_json": lambda: {"jpg": jpeg(), "json": b'{"caption": "a red square", '},
    "empty_caption": lambda: {"jpg": jpeg(), "json": _meta_with(caption="   ", noun_chunks=[], ref_exps=[])},
    "box_outside_image": lambda: {"jpg": jpeg(), "json": _meta_with(
        noun_chunks=[span("a red square", [0.1, 0.1, 1.4, 0.9])])},
    "span_outside_caption": lambda: {"jpg": jpeg(), "json": _meta_with(
        noun_chunks=[[20, len(CAPTION) + 5, 0.1, 0.1, 0.9, 0.9, 0.9]])},
}
REASON = {"truncated_image": "corrupt_image"}  # header reads, pixels do not


def write_shard(path: Path, samples: list[dict[str, bytes]], prefix: str = "s") -> list[str]:
    keys = []
    with ShardWriter(path) as writer:
        for i, members in enumerate(samples):
            key = f"{prefix}{i:04d}"
            writer.write(key, members)
            keys.append(key)
    return keys


# ------------------------------------------------------------------------------------------------
# Crop rule
# ------------------------------------------------------------------------------------------------


def test_crop_rule_dedups_by_phrase_first_wins_and_filters_by_area():
    meta = good_meta()
    regions = select_regions(CAPTION, meta["noun_chunks"], meta["ref_exps"], 64, 48, min_box_area=1024)
    # "a red square" in ref_exps is a duplicate phrase (its small box is ignored); the whole-caption
    # ref_exp is kept; "a blue circle" is 32×36 = 1152 px > 1024.
    assert [r.phrase for r in regions] == ["a red square", "a blue circle", CAPTION]
    assert regions[0].box == (0, 0, 48, 48)
    assert regions[1].box == (32, 12, 64, 48)
    # First occurrence wins even when rejected: a tiny first box hides the later big one.
    tiny_first = [span("a red square", [0, 0, 0.1, 0.1]), span("a red square", [0, 0, 1, 1])]
    assert select_regions(CAPTION, tiny_first, [], 64, 48, 1024) == []
    # Area must be strictly above the minimum: 32×32 = 1024 is rejected.
    exact = [span("a red square", [0, 0, 0.5, 32 / 48])]
    assert select_regions(CAPTION, exact, [], 64, 48, 1024) == []
    assert len(select_regions(CAPTION, exact, [], 64, 48, 1023)) == 1


def test_crop_is_padded_square_of_the_box(tmp_path):
    write_shard(tmp_path / "a.tar", [good_sample()])
    (sample,) = read_grounded(str(tmp_path / "a.tar"), min_box_area=100)
    assert sample.image.size == (64, 64)  # 64×48 padded to a square
    assert [c.size for c in sample.crops] == [(48, 48), (36, 36), (64, 64)]
    # Padding is white, content is the image's colour.
    crop = sample.crops[1]  # 32 wide × 36 high box -> padded left and right by 2
    assert crop.getpixel((0, 18)) == (255, 255, 255)
    r, g, b = crop.getpixel((18, 18))
    assert r > 150 and g < 80 and b < 80


# ------------------------------------------------------------------------------------------------
# Bad data, grounded shards
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_grounded_sample_skipped_and_counted(tmp_path, case):
    samples = [good_sample() for _ in range(5)]
    samples.insert(2, BAD_CASES[case]())
    keys = write_shard(tmp_path / "shard-000000.tar", samples)
    policy = BadDataPolicy("skip")
    read = read_grounded(str(tmp_path / "*.tar"), min_box_area=100, policy=policy)
    assert [s.key for s in read] == keys[:2] + keys[3:]  # nothing else lost
    assert policy.counts == {REASON.get(case, case): 1}
    assert "row 2" in policy.report()


@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_bad_grounded_sample_strict_names_file_and_row(tmp_path, case):
    samples = [good_sample() for _ in range(3)]
    samples.insert(1, BAD_CASES[case]())
    write_shard(tmp_path / "shard-000007.tar", samples)
    with pytest.raises(BadDataError) as err:
        read_grounded(str(tmp_path / "*.tar"), min_box_area=100, policy=BadDataPolicy("strict"))
    message = str(err.value)
    assert "shard-000007.tar" in message and "row 1" in message and "s0001" in message


def test_rule_drop_is_counted_but_not_an_error_in_strict(tmp_path):
    small = {"jpg": jpeg(), "json": _meta_with(noun_chunks=[span("a red square", [0, 0, 0.1, 0.1])], ref_exps=[])}
    write_shard(tmp_path / "a.tar", [good_sample(), small, good_sample()])
    policy = BadDataPolicy("strict")
    assert len(read_grounded(str(tmp_path / "a.tar"), min_box_area=100, policy=policy)) == 2
    assert policy.dropped == {"no_box_kept": 1} and policy.counts == {}


def test_nothing_usable_is_an_error_even_when_skipping(tmp_path):
    write_shard(tmp_path / "a.tar", [BAD_CASES["malformed_json"](), BAD_CASES["empty_caption"]()])
    policy = BadDataPolicy("skip")
    with pytest.raises(BadDataError, match="nothing usable"):
        read_grounded(str(tmp_path / "a.tar"), policy=policy)
    assert policy.counts == {"empty_caption": 1, "malformed_json": 1}


def test_truncated_tar_keeps_the_samples_before_the_damage(tmp_path):
    write_shard(tmp_path / "a.tar", [good_sample() for _ in range(4)])
    data = (tmp_path / "a.tar").read_bytes()
    (tmp_path / "a.tar").write_bytes(data[: len(data) // 2 + 700])
    policy = BadDataPolicy("skip")
    read = read_grounded(str(tmp_path / "a.tar"), min_box_area=100, policy=policy)
    assert 1 <= len(read) < 4
    assert policy.counts == {"corrupt_shard": 1}


def test_expand_shards_brace_and_glob(tmp_path):
    for i in range(3):
        write_shard(tmp_path / f"shard-{i:06d}.tar", [good_sample()])
    assert len(expand_shards(str(tmp_path / "shard-{000000..000002}.tar"))) == 3
    assert len(expand_shards(str(tmp_path / "*.tar"))) == 3
    with pytest.raises(BadDataError, match="no shard"):
        expand_shards(str(tmp_path / "nothing-*.tar"))


def test_plain_shards_and_captions(tmp_path):
    samples = [{"jpg": jpeg(), "txt": f"caption {i}".encode()} for i in range(3)]
    samples.insert(1, {"jpg": jpeg(), "txt": b""})
    keys = write_shard(tmp_path / "p.tar", samples)
    policy = BadDataPolicy()
    plain = read_plain(str(tmp_path / "p.tar"), policy=policy)
    assert [s.caption for s in plain] == ["caption 0", "caption 1", "caption 2"]
    assert plain[0].regions == () and plain[0].image.size == (64, 48)  # plain images are not padded
    assert policy.counts == {"empty_caption": 1}
    write_shard(tmp_path / "g.tar", [good_sample()], prefix="g")
    captions = list(iter_captions([str(tmp_path / "p.tar"), str(tmp_path / "g.tar")]))
    # Shards are read in sorted order: g.tar, then p.tar.
    assert captions == [("g0000", CAPTION), (keys[0], "caption 0"), (keys[2], "caption 1"), (keys[3], "caption 2")]


def test_records_do_not_decode_images(tmp_path):
    # A truncated image passes the raw stage (header only); decoding is what catches it.
    write_shard(tmp_path / "a.tar", [good_sample(), BAD_CASES["truncated_image"]()])
    policy = BadDataPolicy()
    assert len(list(iter_records(str(tmp_path / "a.tar"), min_box_area=100, policy=policy))) == 2
    assert policy.counts == {}


# ------------------------------------------------------------------------------------------------
# Image folder
# ------------------------------------------------------------------------------------------------


def _image_folder(root: Path) -> None:
    for wnid, n in (("n02", 2), ("n01", 3)):
        (root / wnid).mkdir(parents=True)
        for i in range(n):
            (root / wnid / f"{i}.jpg").write_bytes(jpeg())
    (root / "n01" / "notes.txt").write_text("not an image")


def test_image_folder_labels_names_and_bad_images(tmp_path):
    root = tmp_path / "val"
    _image_folder(root)
    (root / "n02" / "broken.jpg").write_bytes(b"\xff\xd8 broken")
    (tmp_path / "class_names.tsv").write_text("n01\tgoldfish\nn02\tgreat white shark\nn99\tunused\n")
    policy = BadDataPolicy()
    data = read_image_folder(root, policy)
    assert data.class_ids == ["n01", "n02"] and data.class_names == ["goldfish", "great white shark"]
    assert data.targets == [0, 0, 0, 1, 1]
    assert policy.counts == {"corrupt_image": 1}
    with pytest.raises(BadDataError, match="broken.jpg"):
        read_image_folder(root, BadDataPolicy("strict"))


def test_image_folder_names_default_to_ids_and_missing_names_fail(tmp_path):
    root = tmp_path / "val"
    _image_folder(root)
    assert read_image_folder(root).class_names == ["n01", "n02"]
    (root / "class_names.tsv").write_text("n01\tgoldfish\n")
    with pytest.raises(BadDataError, match="n02"):
        read_image_folder(root)


# ------------------------------------------------------------------------------------------------
# Retrieval
# ------------------------------------------------------------------------------------------------


def test_coco_captions(tmp_path):
    images = tmp_path / "val2017"
    images.mkdir()
    for i in (1, 2, 3):
        (images / f"{i:012d}.jpg").write_bytes(jpeg())
    data = {
        "images": [{"id": i, "file_name": f"{i:012d}.jpg"} for i in (3, 1, 2, 4)],  # 4 has no file
        "annotations": [
            {"id": 10, "image_id": 1, "caption": "one b"}, {"id": 5, "image_id": 1, "caption": "one  a "},
            {"id": 11, "image_id": 2, "caption": ""}, {"id": 12, "image_id": 3, "caption": "three"},
            {"id": 13, "image_id": 4, "caption": "four"}, {"id": 14, "image_id": 9, "caption": "nine"},
        ],
    }
    (tmp_path / "captions_val2017.json").write_text(json.dumps(data))
    policy = BadDataPolicy()
    rs = read_coco_captions(tmp_path / "captions_val2017.json", images, policy=policy)
    assert [p.name for p in rs.image_paths] == ["000000000001.jpg", "000000000003.jpg"]
    assert rs.captions == ["one a", "one b", "three"] and rs.caption_image == [0, 0, 1]
    assert policy.counts == {"empty_caption": 1, "missing_image": 1, "no_caption": 1, "unknown_image_id": 1}
    with pytest.raises(BadDataError, match="annotations\\[2\\]"):
        read_coco_captions(tmp_path / "captions_val2017.json", images, policy=BadDataPolicy("strict"))


def test_karpathy_split(tmp_path):
    (tmp_path / "img" / "val2014").mkdir(parents=True)
    (tmp_path / "img" / "val2014" / "a.jpg").write_bytes(jpeg())
    (tmp_path / "img" / "b.jpg").write_bytes(jpeg())
    images = [
        {"filename": "a.jpg", "filepath": "val2014", "split": "test", "sentences": [{"raw": "A."}, {"raw": "A two."}]},
        {"filename": "b.jpg", "split": "test", "sentences": [{"raw": "B."}]},
        {"filename": "c.jpg", "split": "train", "sentences": [{"raw": "C."}]},
    ]
    (tmp_path / "k.json").write_text(json.dumps({"images": images}))
    rs = read_karpathy(tmp_path / "k.json", tmp_path / "img")
    assert rs.captions == ["A.", "A two.", "B."] and rs.caption_image == [0, 0, 1]
    assert rs.captions_of(0) == [0, 1]
    with pytest.raises(BadDataError, match="split 'val'"):
        read_karpathy(tmp_path / "k.json", tmp_path / "img", split="val")


# ------------------------------------------------------------------------------------------------
# SugarCrepe
# ------------------------------------------------------------------------------------------------


def test_sugarcrepe_matches_coco_ids_across_name_patterns(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    for i in (85329, 7):
        (images / f"COCO_val2014_{i:012d}.jpg").write_bytes(jpeg())
    items = {
        "0": {"filename": "000000085329.jpg", "caption": "a cat", "negative_caption": "a dog"},
        "1": {"filename": "000000000008.jpg", "caption": "x", "negative_caption": "y"},  # absent image
        "2": {"filename": "000000000007.jpg", "caption": "", "negative_caption": "y"},
        "10": {"filename": "000000000007.jpg", "caption": "two cats", "negative_caption": "two dogs"},
    }
    (tmp_path / "swap_obj.json").write_text(json.dumps(items))
    (tmp_path / "add_att.json").write_text(json.dumps({"0": items["0"]}))
    policy = BadDataPolicy()
    read = read_sugarcrepe(tmp_path, images, policy)
    assert [(i.category, i.idx) for i in read] == [("add_att", "0"), ("swap_obj", "0"), ("swap_obj", "10")]
    assert read[1].image_path.name == "COCO_val2014_000000085329.jpg"
    assert policy.counts == {"empty_caption": 1, "missing_image": 1}
    with pytest.raises(BadDataError, match="swap_obj.json: item 1"):
        read_sugarcrepe(tmp_path, images, BadDataPolicy("strict"))


def test_policy_report_and_modes():
    policy = BadDataPolicy()
    assert policy.report() == "no sample skipped"
    policy.bad("empty_caption", "f.tar: row 3 (key k)")
    policy.bad("empty_caption", "f.tar: row 9 (key z)")
    policy.drop("no_box_kept")
    assert policy.counts == {"empty_caption": 2} and policy.total == 2
    assert "empty_caption 2 (first: f.tar: row 3 (key k))" in policy.report() and "no_box_kept 1" in policy.report()
    other = BadDataPolicy()
    other.bad("missing_image", "g.tar: row 0")
    policy.merge(other)
    assert policy.counts == {"empty_caption": 2, "missing_image": 1}
    with pytest.raises(ValueError):
        BadDataPolicy("lenient")  # type: ignore[arg-type]
