"""Released-checkpoint adapters (argent/models/pretrained), offline: random weights, no download.

- the published MERU key/shape table, written out here for ViT-S and checked against timm's ViT;
- a random MERU-layout state dict loads strictly; the towers match independent references
  (timm's ``VisionTransformer``, torch's ``TransformerEncoder``) on a tiny configuration in the same layout;
- the lift uses the checkpoint's curv and alphas; a hand-computed embedding and distance match;
- wrong layouts (missing, unexpected key, wrong shape, wrong family, pickled objects) are refused;
- open_clip: argent's adapter equals open_clip's own forward, for two architectures;
- ``argent evaluate --pretrained`` writes the result JSON where the tables read it.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import mlflow
import pytest
import torch
import yaml
from PIL import Image
from torch import nn

from argent import geometry
from argent.config import ConfigError
from argent.evaluation.cli import main as evaluate_main
from argent.evaluation.encoding import encode_pil_images, encode_texts, image_transform
from argent.models.pretrained import PretrainedError, load_pretrained
from argent.models.pretrained.base import load_strict, read_state_dict
from argent.models.pretrained.meru_layout import MERU_ARCHS, adapter_from_state_dict, meru_layout
from argent.models.pretrained.meru_towers import MeruArch
from argent.models.pretrained.section import LAYOUTS, available_entries, parse_pretrained_section
from argent.tables.collect import collect
from argent.tables.pretrained import pretrained_table
from argent.tablespec.section import Column

# A tiny configuration in the released layout (the forward checks); the vocabulary and context stay
# the release's so the real tokenizer's ids fit.
TINY = MeruArch(vision_width=32, vision_layers=2, vision_heads=2, image_size=32, patch_size=8, text_width=32,
                text_layers=2, text_heads=2, embed_dim=16)
FLOAT32_TOL = 1e-5  # float32, summation order only (the adapters run the same operations)

# ---- the published ViT-S table (configs/train_meru_vit_s.py, timm vit_small_mocov3_patch16_224) ----
VIT_S_HEAD = {
    "logit_scale": (), "curv": (), "visual_alpha": (), "textual_alpha": (),
    "pixel_mean": (3, 1, 1), "pixel_std": (3, 1, 1),
    "visual.cls_token": (1, 1, 384), "visual.pos_embed": (1, 197, 384),
    "visual.patch_embed.proj.weight": (384, 3, 16, 16), "visual.patch_embed.proj.bias": (384,),
    "visual.norm.weight": (384,), "visual.norm.bias": (384,),
    "textual.posit_embed": (77, 512), "textual.attn_mask": (77, 77), "textual.token_embed.weight": (49408, 512),
    "textual.ln_final.weight": (512,), "textual.ln_final.bias": (512,),
    "visual_proj.weight": (512, 384), "textual_proj.weight": (512, 512),
}
VIT_S_BLOCK = {  # visual.blocks.0..11.
    "norm1.weight": (384,), "norm1.bias": (384,), "attn.qkv.weight": (1152, 384), "attn.qkv.bias": (1152,),
    "attn.proj.weight": (384, 384), "attn.proj.bias": (384,), "norm2.weight": (384,), "norm2.bias": (384,),
    "mlp.fc1.weight": (1536, 384), "mlp.fc1.bias": (1536,), "mlp.fc2.weight": (384, 1536), "mlp.fc2.bias": (384,),
}
TEXT_BLOCK = {  # textual.resblocks.0..11.
    "attn.in_proj_weight": (1536, 512), "attn.in_proj_bias": (1536,), "attn.out_proj.weight": (512, 512),
    "attn.out_proj.bias": (512,), "ln_1.weight": (512,), "ln_1.bias": (512,), "mlp.c_fc.weight": (2048, 512),
    "mlp.c_fc.bias": (2048,), "mlp.c_proj.weight": (512, 2048), "mlp.c_proj.bias": (512,), "ln_2.weight": (512,),
    "ln_2.bias": (512,),
}


def vit_s_table() -> dict[str, tuple[int, ...]]:
    table = dict(VIT_S_HEAD)
    table.update({f"visual.blocks.{i}.{k}": s for i in range(12) for k, s in VIT_S_BLOCK.items()})
    table.update({f"textual.resblocks.{i}.{k}": s for i in range(12) for k, s in TEXT_BLOCK.items()})
    return table


class Pickled:
    """An arbitrary object: ``weights_only`` loading must refuse to unpickle it."""


def random_state(arch: MeruArch, family: str = "meru", seed: int = 0, fill: str = "randn") -> dict[str, torch.Tensor]:
    """A state dict with the published keys and shapes, random values (zeros with fill='zeros')."""
    gen = torch.Generator().manual_seed(seed)
    state = {}
    for key, shape in meru_layout(arch, family).items():
        state[key] = torch.zeros(shape) if fill == "zeros" else torch.randn(shape, generator=gen) * 0.05
    state["textual.attn_mask"] = torch.ones(arch.context_length, arch.context_length, dtype=torch.bool).triu(1)
    state["pixel_mean"] = torch.tensor([0.485, 0.456, 0.406]).view(3, 1, 1)
    state["pixel_std"] = torch.tensor([0.229, 0.224, 0.225]).view(3, 1, 1)
    state["logit_scale"] = torch.tensor(math.log(1 / 0.07))
    if family == "meru":
        state["curv"] = torch.tensor(math.log(0.7))
        state["visual_alpha"] = torch.tensor(math.log(0.3))
        state["textual_alpha"] = torch.tensor(math.log(0.4))
    return state


def pixels(n: int = 3, size: int = 32, seed: int = 0) -> torch.Tensor:
    return torch.rand(n, 3, size, size, generator=torch.Generator().manual_seed(seed))


# ---- the published table --------------------------------------------------------------------------
def test_published_vit_s_table_is_the_layout() -> None:
    table = vit_s_table()
    assert meru_layout(MERU_ARCHS["vit_s"], "meru") == table
    assert meru_layout(MERU_ARCHS["vit_s"], "clip") == {k: s for k, s in table.items()
                                                        if k not in ("curv", "visual_alpha", "textual_alpha")}
    vit_b, vit_l = meru_layout(MERU_ARCHS["vit_b"], "meru"), meru_layout(MERU_ARCHS["vit_l"], "meru")
    assert len(table) == 307 and len(vit_b) == 307 and len(vit_l) == 451
    assert vit_b["visual.blocks.11.mlp.fc1.weight"] == (3072, 768) and "visual.blocks.12.norm1.weight" not in vit_b
    assert vit_l["visual.blocks.23.attn.qkv.weight"] == (3072, 1024) and vit_l["visual_proj.weight"] == (512, 1024)


@pytest.mark.parametrize("name", ["vit_s", "vit_b", "vit_l"])
def test_visual_keys_are_timms(name: str) -> None:
    timm = pytest.importorskip("timm")
    arch = MERU_ARCHS[name]
    with torch.device("meta"):  # shapes only: nothing allocated
        vit = timm.models.vision_transformer.VisionTransformer(
            img_size=224, patch_size=16, embed_dim=arch.vision_width, depth=arch.vision_layers,
            num_heads=arch.vision_heads, num_classes=0, global_pool="token", class_token=True, norm_layer=nn.LayerNorm)
    theirs = {f"visual.{k}": tuple(v.shape) for k, v in vit.state_dict().items()}
    ours = {k: s for k, s in meru_layout(arch, "meru").items() if k.startswith("visual.")}
    assert ours == theirs


def test_vit_s_state_dict_loads_strictly() -> None:
    state = random_state(MERU_ARCHS["vit_s"], fill="zeros")
    state["visual.blocks.11.mlp.fc2.bias"] = torch.arange(384.0)
    model = adapter_from_state_dict(state, MERU_ARCHS["vit_s"], "meru", "vit_s.pth", "meru:vit_s")
    assert torch.equal(model.visual.blocks[11].mlp.fc2.bias, torch.arange(384.0))
    assert model.curv().item() == pytest.approx(0.7) and model.geometry == "lorentz"
    assert torch.equal(model.textual.attn_mask, state["textual.attn_mask"])
    with pytest.raises(PretrainedError, match=r"does not fit layout meru:vit_b .*It fits meru:vit_s"):
        adapter_from_state_dict(state, MERU_ARCHS["vit_b"], "meru", "vit_s.pth", "meru:vit_b")


# ---- towers against independent references (tiny configuration, same layout) ----------------------
def test_image_tower_matches_timm() -> None:
    timm = pytest.importorskip("timm")
    state = random_state(TINY)
    model = adapter_from_state_dict(state, TINY, "meru", "tiny")
    vit = timm.models.vision_transformer.VisionTransformer(
        img_size=32, patch_size=8, embed_dim=32, depth=2, num_heads=2, num_classes=0, global_pool="token",
        class_token=True, norm_layer=nn.LayerNorm).eval()
    vit.load_state_dict({k.removeprefix("visual."): v for k, v in state.items() if k.startswith("visual.")})
    images = pixels()
    normalised = (images - state["pixel_mean"]) / state["pixel_std"]
    with torch.no_grad():
        torch.testing.assert_close(model.visual(normalised), vit(normalised), atol=FLOAT32_TOL, rtol=0)
        expected = vit(normalised) @ state["visual_proj.weight"].T
        torch.testing.assert_close(model.encode_image(images, project=False), expected, atol=FLOAT32_TOL, rtol=0)


def test_text_tower_matches_torch_transformer() -> None:
    # MERU's block is nn.TransformerEncoderLayer(norm_first=True, gelu, no dropout) under other names.
    state = random_state(TINY)
    model = adapter_from_state_dict(state, TINY, "meru", "tiny")
    layer = nn.TransformerEncoderLayer(32, 2, dim_feedforward=128, dropout=0.0, activation="gelu", batch_first=True,
                                       norm_first=True)
    ref = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    names = {"attn.": "self_attn.", "ln_1.": "norm1.", "ln_2.": "norm2.", "mlp.c_fc.": "linear1.",
             "mlp.c_proj.": "linear2."}
    mapped = {}
    for key, value in state.items():
        if key.startswith("textual.resblocks."):
            rest = key.removeprefix("textual.resblocks.")
            index, _, name = rest.partition(".")
            for old, new in names.items():
                name = name.replace(old, new, 1) if name.startswith(old) else name
            mapped[f"layers.{index}.{name}"] = value
    ref.load_state_dict(mapped)
    tokens = model.tokenize(["a red square", "two blue circles above a green triangle", ""])
    with torch.no_grad():
        x = state["textual.token_embed.weight"][tokens] + state["textual.posit_embed"]
        mask = nn.Transformer.generate_square_subsequent_mask(77)
        x = nn.functional.layer_norm(ref(x, mask=mask, is_causal=True), (32,), state["textual.ln_final.weight"],
                                     state["textual.ln_final.bias"])
        expected = x[torch.arange(3), tokens.argmax(-1)] @ state["textual_proj.weight"].T
        torch.testing.assert_close(model.encode_text(tokens, project=False), expected, atol=FLOAT32_TOL, rtol=0)


# ---- the lift ----------------------------------------------------------------------------------------
def test_lift_uses_the_checkpoint_curvature_and_alphas() -> None:
    state = random_state(TINY)
    images, tokens = pixels(), adapter_from_state_dict(state, TINY, "meru", "t").tokenize(["a cat", "a dog"])

    def embed(curv: float, a_img: float, a_txt: float) -> tuple[torch.Tensor, ...]:
        changed = {**state, "curv": torch.tensor(math.log(curv)), "visual_alpha": torch.tensor(math.log(a_img)),
                   "textual_alpha": torch.tensor(math.log(a_txt))}
        model = adapter_from_state_dict(changed, TINY, "meru", "t")
        with torch.no_grad():
            return (model.encode_image(images), model.encode_text(tokens), model.encode_image(images, project=False),
                    model.encode_text(tokens, project=False))

    for curv, a_img, a_txt in [(0.7, 0.3, 0.4), (2.5, 0.05, 0.9)]:
        img, txt, v_img, v_txt = embed(curv, a_img, a_txt)
        torch.testing.assert_close(img, geometry.exp_map0(v_img * a_img, curv), atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(txt, geometry.exp_map0(v_txt * a_txt, curv), atol=1e-6, rtol=1e-6)
    assert not torch.allclose(embed(0.7, 0.3, 0.4)[0], embed(2.5, 0.05, 0.9)[0])


def test_hand_computed_embedding_and_distance() -> None:
    # Final norms with weight 0 make each tower output its norm's bias, whatever the input: the
    # projection then gives v_img = (3, 4, 0, ...), v_txt = (0, 0, 5, 0, ...).
    state = random_state(TINY)
    for tower, key in (("visual.norm", "visual_proj.weight"), ("textual.ln_final", "textual_proj.weight")):
        state[f"{tower}.weight"] = torch.zeros(32)
        state[f"{tower}.bias"] = torch.zeros(32)
        state[key] = torch.zeros(16, 32)
    state["visual.norm.bias"][:2] = torch.tensor([1.0, 2.0])
    state["visual_proj.weight"][0, 0], state["visual_proj.weight"][1, 1] = 3.0, 2.0
    state["textual.ln_final.bias"][0] = 1.0
    state["textual_proj.weight"][2, 0] = 5.0
    state.update(curv=torch.tensor(math.log(4.0)), visual_alpha=torch.tensor(math.log(0.2)),
                 textual_alpha=torch.tensor(math.log(0.1)))
    model = adapter_from_state_dict(state, TINY, "meru", "t")
    with torch.no_grad():
        img, txt = model.encode_image(pixels(1)), model.encode_text(model.tokenize(["anything"]))
    # α v = (0.6, 0.8): |α v| = 1, √c = 2, so x̃ = sinh(2) (0.6, 0.8) / 2;
    # the text: α v = (0, 0, 0.5), √c |α v| = 1, so x̃ = sinh(1) · 0.5.
    expected_img = torch.zeros(1, 16)
    expected_img[0, :2] = torch.tensor([0.6, 0.8]) * math.sinh(2) / 2
    expected_txt = torch.zeros(1, 16)
    expected_txt[0, 2] = math.sinh(1) * 0.5
    torch.testing.assert_close(img, expected_img, atol=1e-6, rtol=1e-6)
    torch.testing.assert_close(txt, expected_txt, atol=1e-6, rtol=1e-6)
    # Orthogonal directions from the origin: cosh(√c d) = cosh(√c r1) cosh(√c r2) = cosh(2) cosh(1).
    assert model.similarity(img, txt).item() == pytest.approx(-math.acosh(math.cosh(2) * math.cosh(1)) / 2, abs=1e-5)


# ---- refusals ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("change, message", [
    (lambda s: s.pop("curv"), r"missing key 'curv' \(shape \[\]\)"),
    (lambda s: s.__setitem__("visual.head.weight", torch.zeros(10, 32)),
     r"unexpected key 'visual.head.weight' \(shape \[10, 32\]\)"),
    (lambda s: s.__setitem__("visual_proj.weight", torch.zeros(32, 16)),
     r"key 'visual_proj.weight' has shape \[32, 16\], the layout expects \[16, 32\]"),
])
def test_wrong_layout_is_refused_by_name(change, message: str) -> None:
    state = random_state(TINY)
    change(state)
    with pytest.raises(PretrainedError, match=rf"t.pth: does not fit layout meru:tiny \(\d+ keys\): {message}; "
                                              r"nothing was loaded"):
        adapter_from_state_dict(state, TINY, "meru", "t.pth", "meru:tiny")


def test_family_is_declared_not_guessed() -> None:
    with pytest.raises(PretrainedError, match=r"meru_clip:tiny .*unexpected key 'curv'"):
        adapter_from_state_dict(random_state(TINY), TINY, "clip", "t.pth", "meru_clip:tiny")
    with pytest.raises(PretrainedError, match=r"missing key 'curv'"):
        adapter_from_state_dict(random_state(TINY, "clip"), TINY, "meru", "t.pth", "meru:tiny")
    clip = adapter_from_state_dict(random_state(TINY, "clip"), TINY, "clip", "t.pth")
    with torch.no_grad():
        emb = clip.encode_image(pixels())
    assert clip.geometry == "euclidean" and torch.allclose(emb.norm(dim=-1), torch.ones(3))


def test_checkpoint_files_wrapped_prefixed_and_unsafe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(MERU_ARCHS, "tiny", TINY)
    state = random_state(TINY)
    wrapped = tmp_path / "meru_tiny.pth"  # what MERU's CheckpointManager writes
    torch.save({"model": state, "iteration": 120000, "optimizer": {"state": {}, "param_groups": []}}, wrapped)
    model = load_pretrained(f"meru:{wrapped}", "tiny")
    assert torch.equal(model.visual_proj.weight, state["visual_proj.weight"])
    ddp = tmp_path / "ddp.pth"
    torch.save({f"module.{k}": v for k, v in state.items()}, ddp)
    assert read_state_dict(ddp).keys() == state.keys()
    unsafe = tmp_path / "pickled.pth"
    torch.save({"model": state, "extra": Pickled()}, unsafe)
    with pytest.raises(PretrainedError, match=r"refused by weights_only loading"):
        load_pretrained(f"meru:{unsafe}", "tiny")
    with pytest.raises(PretrainedError, match=r"checkpoint not found"):
        load_pretrained(f"meru:{tmp_path / 'absent.pth'}", "tiny")
    with pytest.raises(PretrainedError, match=r"expected <layout>:<path>"):
        load_pretrained(f"meru2:{wrapped}", "tiny")
    with pytest.raises(PretrainedError, match=r"arch 'vit_xl' unknown"):
        load_pretrained(f"meru:{wrapped}", "vit_xl")


# ---- open_clip: the adapter against open_clip's own forward ----------------------------------------
def photos() -> list[Image.Image]:
    gen = torch.Generator().manual_seed(1)
    return [Image.fromarray((torch.rand(h, w, 3, generator=gen) * 255).to(torch.uint8).numpy())
            for h, w in ((240, 320), (300, 200))]


@pytest.mark.parametrize("arch", ["ViT-S-32-alt", "ViT-S-32"])
def test_open_clip_adapter_equals_open_clip(arch: str, tmp_path: Path) -> None:
    open_clip = pytest.importorskip("open_clip")
    torch.manual_seed(0)
    ref, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=None)
    ref.eval()
    path = tmp_path / f"{arch}.pt"
    torch.save({"state_dict": {f"module.{k}": v for k, v in ref.state_dict().items()}, "epoch": 32}, path)
    texts = ["a photo of a dog.", "two red squares", ""]
    images = photos()
    with torch.no_grad():
        ref_img = ref.encode_image(torch.stack([preprocess(im) for im in images]), normalize=True)
        ref_txt = ref.encode_text(open_clip.get_tokenizer(arch)(texts), normalize=True)
    del ref
    model = load_pretrained(f"open_clip:{path}", arch)  # a fresh module: every weight comes from the file
    assert model.geometry == "euclidean" and model.config.context_length == 77
    # Through the evaluation's own encoding path (its transform, its tokenizer, batches of 1).
    ours_img = encode_pil_images(model, images, image_transform(model), batch_size=1, project=True)
    ours_txt = encode_texts(model, texts, batch_size=2)
    torch.testing.assert_close(ours_img, ref_img, atol=FLOAT32_TOL, rtol=0)
    torch.testing.assert_close(ours_txt, ref_txt, atol=FLOAT32_TOL, rtol=0)
    torch.testing.assert_close(model.similarity(ours_img, ours_txt), ref_img @ ref_txt.T, atol=FLOAT32_TOL, rtol=0)
    assert model.logit_scale().item() == pytest.approx(1 / 0.07, rel=1e-5)
    # A file that does not fit is refused before anything is copied: the loaded weights stay as they were.
    state = {k: v.clone() for k, v in model.model.state_dict().items()}
    bad = {**{k: torch.zeros_like(v) for k, v in state.items()}, "text_projection": torch.zeros(3, 3)}
    with pytest.raises(PretrainedError, match=rf"does not fit layout open_clip:{arch} .*'text_projection' has shape"):
        load_strict(model.model, bad, model.layout_name, "bad.pt")
    assert torch.equal(model.model.ln_final.weight, state["ln_final.weight"])


# ---- argent evaluate --pretrained ------------------------------------------------------------------
def test_evaluate_cli_writes_where_the_tables_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture) -> None:
    monkeypatch.setitem(MERU_ARCHS, "tiny", TINY)
    checkpoint = tmp_path / "hycoclip_tiny.pth"
    torch.save({"model": random_state(TINY)}, checkpoint)
    root = tmp_path / "classification"
    for wnid, colour in (("n001", (220, 20, 20)), ("n002", (20, 20, 220))):
        (root / wnid).mkdir(parents=True)
        for i in range(2):
            Image.new("RGB", (40, 30), colour).save(root / wnid / f"{i}.png")
    (root / "class_names.tsv").write_text("n001\tred\nn002\tblue\n")
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"benchmarks": {"zs": {"protocol": "zeroshot", "root": str(root)}}}))
    results = tmp_path / "results"
    argv = ["--pretrained", f"meru:{checkpoint}", "--arch", "tiny", "--name", "hycoclip-T", "--results",
            str(results), "--benchmark", "zs", "--config", str(config), "--no-default"]  # the file alone
    assert evaluate_main(argv) == 0
    out = results / "eval" / "pretrained" / "hycoclip-T" / "seed0" / "zs.json"
    data = json.loads(out.read_text())
    assert data["geometry"] == "lorentz" and data["counts"]["n_items"] == 4
    assert data["pretrained"]["layout"] == "meru" and data["pretrained"]["curv"] == pytest.approx(0.7)
    assert data["config_hash"] == f"sha256:{data['pretrained']['sha256']}"
    rows = collect(results / "eval")
    assert set(rows["group"]) == {"pretrained"} and set(rows["variant"]) == {"hycoclip"} and set(rows["size"]) == {"T"}
    md, records = pretrained_table(results / "eval", [Column("Cls", "zs", "top1", 100), Column("PEP", "pep", "auc")])
    assert records[0]["model"] == "hycoclip-T" and records[0]["Cls"] == pytest.approx(100 * data["metrics"]["top1"])
    assert "released checkpoints, not trained here" in md and "| hycoclip-T | meru:tiny | " in md and "not evaluated |" in md
    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{results / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("argent").experiment_id], "tags.kind = 'pretrained'")
    assert [r.data.tags["variant"] for r in runs] == ["hycoclip"] and "eval/zs/top1" in runs[0].data.metrics
    # Expected failures: one line each, exit status 2, nothing written.
    assert evaluate_main(argv[:4] + ["--name", "bad name"] + argv[6:]) == 2
    assert evaluate_main(["--pretrained", f"meru:{checkpoint}", "--arch", "vit_s"] + argv[4:]) == 2
    err = capsys.readouterr().err
    assert "released-model name 'bad name'" in err and "does not fit layout meru:vit_s" in err


# ---- the workflow config's pretrained: section --------------------------------------------------------
def test_pretrained_section_entries_and_their_errors(tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "hycoclip_vit_s.pth").write_bytes(b"x")
    raw = {"hycoclip-S": {"layout": "meru", "arch": "vit_s", "path": "ckpt/hycoclip_vit_s.pth", "family": "HyCoCLIP"},
           "meru-L": {"layout": "meru", "arch": "vit_l", "path": "ckpt/meru_vit_l.pth", "optional": True}}
    entries = parse_pretrained_section(raw, tmp_path)
    assert entries["hycoclip-S"].spec == f"meru:{tmp_path / 'ckpt' / 'hycoclip_vit_s.pth'}"
    kept, skipped = available_entries(entries, ["argent"])
    assert [e.name for e in kept] == ["hycoclip-S"]
    assert skipped == [f"skipping optional released model meru-L: {tmp_path / 'ckpt' / 'meru_vit_l.pth'} not found"]
    with pytest.raises(ConfigError, match=r"pretrained.meru-L.path: .* not found; .*optional: true"):
        available_entries(parse_pretrained_section({"meru-L": {**raw["meru-L"], "optional": False}}, tmp_path), [])
    with pytest.raises(ConfigError, match=r"groups.pretrained: the name is reserved"):
        available_entries(entries, ["pretrained"])
    for bad, message in [({"hycoclip": raw["hycoclip-S"]}, r"pretrained.hycoclip: released-model name"),
                         ({"a-S": {"layout": "meru", "arch": "vit_s"}}, r"pretrained.a-S.path: required"),
                         ({"a-S": {**raw["hycoclip-S"], "layout": "timm"}},
                          r"pretrained.a-S.layout: 'timm' is not allowed"),
                         ({"a-S": {**raw["hycoclip-S"], "pth": "x"}}, r"pretrained.a-S: unknown key\(s\) \['pth'\]")]:
        with pytest.raises(ConfigError, match=message):
            parse_pretrained_section(bad, tmp_path)


def test_the_workflow_side_layout_list_names_every_meru_arch():
    """LAYOUTS lives torch-free in argent.models.pretrained.section (the Snakefile reads it); its --arch hint
    must list what the loader accepts."""
    for layout in ("meru", "meru_clip"):
        hinted = LAYOUTS[layout].split("--arch ")[1].split(" | ")
        assert hinted == list(MERU_ARCHS), (layout, hinted)
