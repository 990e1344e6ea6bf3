"""Training throughput: samples/s and achieved FLOP/s as a share of this machine's fp32 matmul peak,
for argent's dual encoder beside open_clip's CLIP of the same dimensions on the same batch.

    python bench/train.py                     # sizes tiny and S, CPU
    python bench/train.py --sizes tiny --steps 5 --out results/bench/train.json

Both models train one step = forward of both towers, the symmetric CLIP loss (argent: the named
variant's full objective), backward, AdamW step. FLOPs are counted with torch's FlopCounterMode on
one step; the peak is the best of several large fp32 matmuls.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import open_clip
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from argent.config import load_variants, model_from, variant_from
from argent.engine.trainer import BatchEncoder
from argent.losses import Objective
from argent.models import build_model, tokenize

ROOT = Path(__file__).resolve().parents[1]


def matmul_peak(n: int = 2048, repeats: int = 5, device: str = "cpu") -> float:
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        if device == "cuda":
            torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best


def open_clip_model(size: str) -> torch.nn.Module:
    cfg = model_from(size)
    vision = open_clip.model.CLIPVisionCfg(
        layers=cfg.vision_layers, width=cfg.vision_width, head_width=cfg.vision_width // cfg.vision_heads,
        mlp_ratio=cfg.vision_mlp_ratio, patch_size=cfg.patch_size, image_size=cfg.image_size)
    text = open_clip.model.CLIPTextCfg(
        context_length=cfg.context_length, vocab_size=cfg.vocab_size, width=cfg.text_width,
        heads=cfg.text_heads, layers=cfg.text_layers)
    return open_clip.CLIP(embed_dim=cfg.embed_dim, vision_cfg=vision, text_cfg=text)


def batch_for(size: str, n: int) -> dict[str, torch.Tensor]:
    cfg = model_from(size)
    g = torch.Generator().manual_seed(0)
    words = ["a red square", "a small blue circle left of a star", "a polygon", "a striped green hexagon"]
    return {
        "image": torch.rand(n, 3, cfg.image_size, cfg.image_size, generator=g),
        "crop": torch.rand(n, 3, cfg.image_size, cfg.image_size, generator=g),
        "text": tokenize([words[i % 4] for i in range(n)], cfg.context_length),
        "phrase": tokenize([words[(i + 1) % 4] for i in range(n)], cfg.context_length),
    }


def argent_step(size: str, variant_name: str):
    variant = variant_from(load_variants(ROOT / "config" / "variants.yaml"), variant_name)
    model = build_model(model_from(size), variant.geometry)
    encoder, objective = BatchEncoder(model, variant.use_boxes), Objective(variant)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(batch):
        emb, curv, scale = encoder(batch)
        loss = objective(emb, curv=curv, logit_scale=scale, geometry=variant.geometry).total
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def open_clip_step(size: str):
    model = open_clip_model(size)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step(batch):
        img = F.normalize(model.encode_image(batch["image"]), dim=-1)
        txt = F.normalize(model.encode_text(batch["text"]), dim=-1)
        logits = model.logit_scale.exp() * img @ txt.T
        target = torch.arange(len(img))
        loss = 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def measure(step, batch, steps: int) -> tuple[float, float]:
    """(seconds per step, FLOPs per step)."""
    step(batch)  # warm-up
    with FlopCounterMode(display=False) as counter:
        step(batch)
    flops = counter.get_total_flops()
    t = time.perf_counter()
    for _ in range(steps):
        step(batch)
    return (time.perf_counter() - t) / steps, flops


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", default=["tiny", "S"])
    p.add_argument("--batch", type=int, default=None, help="batch size (default: 64 for tiny, 8 for others)")
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "train.json")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    peak = matmul_peak()
    rows = []
    for size in args.sizes:
        n = args.batch or (64 if size == "tiny" else 8)
        batch = batch_for(size, n)
        for name, step in (("argent clip", argent_step(size, "clip")), ("open_clip CLIP", open_clip_step(size)),
                           ("argent argent", argent_step(size, "argent"))):
            torch.manual_seed(0)
            sec, flops = measure(step, batch, args.steps)
            rows.append({"size": size, "model": name, "batch": n, "s_per_step": sec, "samples_per_s": n / sec,
                         "gflop_per_step": flops / 1e9, "flops_share_of_peak": flops / sec / peak})
        ours, ref = rows[-3], rows[-2]
        rows[-3]["time_ratio_vs_open_clip"] = ours["s_per_step"] / ref["s_per_step"]
    print(f"fp32 matmul peak: {peak / 1e9:.1f} GFLOP/s, threads: {torch.get_num_threads()}")
    print(f"{'size':<5} {'model':<16} {'batch':>5} {'s/step':>8} {'samples/s':>10} {'GFLOP/step':>11} {'% peak':>7} {'ratio':>6}")
    for r in rows:
        ratio = f"{r['time_ratio_vs_open_clip']:.2f}" if "time_ratio_vs_open_clip" in r else ""
        print(f"{r['size']:<5} {r['model']:<16} {r['batch']:>5} {r['s_per_step']:>8.3f} {r['samples_per_s']:>10.1f} "
              f"{r['gflop_per_step']:>11.2f} {100 * r['flops_share_of_peak']:>6.1f}% {ratio:>6}")
    print("ratio = argent (CLIP objective) time / open_clip time on the same batch; the argent row adds boxes "
          "(2x the images and texts) and the full ARGENT objective.")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"peak_flops": peak, "threads": torch.get_num_threads(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
