"""Evaluation: inside reuse_image_embeddings, each image is embedded once and reused exactly."""

import shutil

import numpy as np
import torch
from PIL import Image

from argent.config import ModelConfig
from argent.data.images import eval_transform, squeeze_transform
from argent.data.policy import BadDataPolicy
from argent.evaluation.encoding import encode_images, reuse_image_embeddings
from argent.models import build_model

SMALL = ModelConfig(image_size=16, patch_size=8, vision_width=32, vision_layers=1, vision_heads=2, text_width=32,
                    text_layers=1, text_heads=2, context_length=16, embed_dim=16)


def picture(i: int, size: tuple[int, int]) -> Image.Image:
    """A distinct image with structure (a flat colour would look the same under every resize)."""
    rng = np.random.default_rng(i)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def images(tmp_path, n=5, size=(20, 24)):
    paths = []
    for i in range(n):
        path = tmp_path / f"{i}.png"
        picture(i, size).save(path)
        paths.append(path)
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"not an image")
    return paths[:2] + [bad] + paths[2:]


class Counting(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.inner, self.calls = model, 0
        self.config = model.config

    def encode_image(self, x, project=True):
        self.calls += len(x)
        return self.inner.encode_image(x, project=project)


def test_reuse_is_exact_and_counts_skipped_images_again(tmp_path):
    torch.manual_seed(0)
    model = Counting(build_model(SMALL, "lorentz").eval())
    paths, tf = images(tmp_path), eval_transform(16)
    plain_policy = BadDataPolicy("skip")
    plain, plain_kept = encode_images(model, paths, tf, 4, plain_policy)
    assert model.calls == 5
    with reuse_image_embeddings() as memo:
        first_policy, second_policy = BadDataPolicy("skip"), BadDataPolicy("skip")
        first, kept1 = encode_images(model, paths, tf, 4, first_policy)
        second, kept2 = encode_images(model, paths, tf, 4, second_policy)
        assert model.calls == 10  # the second request encoded nothing
        other, _ = encode_images(model, paths, squeeze_transform(16), 4, BadDataPolicy("skip"))
        assert model.calls == 15  # another transform is another embedding
        lifted, _ = encode_images(model, paths, tf, 4, BadDataPolicy("skip"), project=False)
        assert model.calls == 20
    assert memo.hits == 1 and memo.images_reused == 5 and memo.encoded == 15
    assert torch.equal(first, plain) and torch.equal(second, plain) and kept1 == kept2 == plain_kept == [0, 1, 3, 4, 5]
    assert first_policy.counts == second_policy.counts == plain_policy.counts == {"bad_image": 1}
    second.zero_()  # a protocol writing into its tensor cannot change what the next one gets
    with reuse_image_embeddings():
        encode_images(model, paths, tf, 4, BadDataPolicy("skip"))
        again, _ = encode_images(model, paths, tf, 4, BadDataPolicy("skip"))
        again.zero_()
        third, _ = encode_images(model, paths, tf, 4, BadDataPolicy("skip"))
    assert torch.equal(third, plain)
    # Outside the block nothing is remembered.
    encode_images(model, paths, tf, 4, BadDataPolicy("skip"))
    assert model.calls == 30


def test_byte_copies_and_equal_pixels_are_encoded_once(tmp_path):
    torch.manual_seed(0)
    model = Counting(build_model(SMALL, "lorentz").eval())
    first_dir, copy_dir = tmp_path / "a", tmp_path / "b"
    first_dir.mkdir()
    paths = images(first_dir, size=(16, 16))
    shutil.copytree(first_dir, copy_dir)  # the embedded data set's retrieval/, hierarcaps/, sugarcrepe/ folders
    copies = [copy_dir / p.name for p in paths]
    alone, _ = encode_images(model, copies, squeeze_transform(16), 4, BadDataPolicy("skip"))
    model.calls = 0
    with reuse_image_embeddings() as memo:
        by_eval, kept = encode_images(model, paths, eval_transform(16), 4, BadDataPolicy("skip"))
        by_copy, kept_copy = encode_images(model, copies, eval_transform(16), 4, BadDataPolicy("skip"))
        # a square image gives the same pixels under both transforms: no second pass through the tower
        squeezed, _ = encode_images(model, copies, squeeze_transform(16), 4, BadDataPolicy("skip"))
    assert model.calls == 5 and memo.encoded == 5
    assert kept == kept_copy == [0, 1, 3, 4, 5]
    assert torch.equal(by_eval, by_copy) and torch.equal(by_eval, squeezed)
    torch.testing.assert_close(squeezed, alone, rtol=0, atol=1e-6)  # batch composition: rounding only


def test_duplicates_inside_one_request_are_encoded_once(tmp_path):
    torch.manual_seed(0)
    model = Counting(build_model(SMALL, "lorentz").eval())
    paths = images(tmp_path)
    good = [p for p in paths if p.name != "bad.png"]
    emb, kept = encode_images(model, good + good[:2], eval_transform(16), 4, BadDataPolicy("skip"))
    assert model.calls == 5 and kept == list(range(7))
    assert torch.equal(emb[5], emb[0]) and torch.equal(emb[6], emb[1])
