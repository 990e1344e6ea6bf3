"""Training throughput: argent's step (CLIP and full ARGENT objective, compile off and on) beside
open_clip's CLIP of the same dimensions, on the same batch, in one process.

    python bench/train.py                          # sizes tiny and S, CPU, compile off and on
    python bench/train.py --sizes tiny --steps 7 --no-compile --out results/bench/train.json

One step = forward of both towers, the objective (argent: the named variant's, through the trainer's
``BatchEncoder``), backward, AdamW step (argent: ``build_optimizer``, i.e. what training uses).
The machine is shared, so timings are taken *interleaved*: every round runs each contender once
(A, B, C, A, B, C, ...), after warm-up; the table reports the median of the rounds, and the ratios
are medians of per-round ratios, which cancels most of the slow drift other jobs cause. FLOPs are
counted with torch's FlopCounterMode on one eager step; the peak is the best of several 2048² fp32
matmuls at the same thread count.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Callable

import open_clip
import torch
import torch.nn.functional as F
from torch.utils.flop_counter import FlopCounterMode

from argent.config import OptimConfig, load_variants, model_from, variant_from
from argent.engine.optim import build_optimizer, param_groups
from argent.engine.step import BatchEncoder, compile_step
from argent.losses import Objective
from argent.models import build_model, tokenize
from argent.models.encoders import SelfAttention

ROOT = Path(__file__).resolve().parents[1]
Step = Callable[[dict[str, torch.Tensor]], torch.Tensor]


def matmul_peak(n: int = 2048, repeats: int = 5) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
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


def argent_step(size: str, variant_name: str, compiled: bool) -> Step:
    variant = variant_from(load_variants(ROOT / "config" / "variants.yaml"), variant_name)
    torch.manual_seed(0)
    model = build_model(model_from(size), variant.geometry)
    encoder, objective = BatchEncoder(model, variant.use_boxes), Objective(variant)
    if compiled:  # as the trainer does with train.compile: the towers, forward and backward
        encoder = compile_step(encoder, f"{variant_name} {size} towers")
    opt = build_optimizer(model, OptimConfig(lr=1e-4))

    def step(batch):
        emb, curv, scale = encoder(batch)
        loss = objective(emb, curv=curv, logit_scale=scale, geometry=variant.geometry, with_diagnostics=False).total
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def _untrimmed_text_forward(text):
    """The text tower as it was before the padding trim: every position of the context."""

    def forward(tokens):
        length = tokens.shape[1]
        x = text.token_embedding(tokens) + text.position_embedding[:length]
        x = text.transformer(x, mask=text.causal_mask[:length, :length], is_causal=True)
        x = text.ln_final(x)
        return x[torch.arange(x.shape[0]), tokens.argmax(dim=-1)]

    return forward


def argent_before_step(size: str, variant_name: str) -> Step:
    """argent's step as it was before docs/throughput.md's changes, rebuilt in this process for an
    interleaved before/after: stock ``nn.MultiheadAttention`` forward, full-context text, the
    for-loop AdamW, diagnostics on every step."""
    variant = variant_from(load_variants(ROOT / "config" / "variants.yaml"), variant_name)
    torch.manual_seed(0)
    model = build_model(model_from(size), variant.geometry)
    for module in model.modules():
        if isinstance(module, SelfAttention):
            module.__class__ = torch.nn.MultiheadAttention  # same parameters, the stock forward
    model.textual.forward = _untrimmed_text_forward(model.textual)
    encoder, objective = BatchEncoder(model, variant.use_boxes), Objective(variant)
    opt = torch.optim.AdamW(param_groups(model, OptimConfig(lr=1e-4)), lr=1e-4)

    def step(batch):
        emb, curv, scale = encoder(batch)
        loss = objective(emb, curv=curv, logit_scale=scale, geometry=variant.geometry).total
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def open_clip_step(size: str) -> Step:
    torch.manual_seed(0)
    model = open_clip_model(size)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)  # torch's default AdamW, as open_clip's training uses

    def step(batch):
        img = F.normalize(model.encode_image(batch["image"]), dim=-1)
        txt = F.normalize(model.encode_text(batch["text"]), dim=-1)
        logits = model.logit_scale.exp() * img @ txt.T
        target = torch.arange(len(img))
        loss = 0.5 * (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss

    return step


def flops_of(step: Step, batch: dict[str, torch.Tensor]) -> float:
    with FlopCounterMode(display=False) as counter:
        step(batch)
    return counter.get_total_flops()


def _compiled_flops(name: str, flops: dict[str, float]) -> float:
    """A compiled step runs the text tower on the whole context (no padding trim under compile), i.e.
    the FLOPs of the "before" step of the same objective when it was measured, else the eager one's
    (then an undercount)."""
    return flops.get(name.replace("compiled", "before")) or flops[name.replace("compiled", "eager")]


def interleaved(steps: dict[str, Step], batch: dict[str, torch.Tensor], rounds: int, warmup: int) -> dict[str, list[float]]:
    """Seconds per step for each contender, measured A, B, C, A, B, C, ... after ``warmup`` rounds."""
    times: dict[str, list[float]] = {name: [] for name in steps}
    for r in range(warmup + rounds):
        for name, step in steps.items():
            t = time.perf_counter()
            step(batch)
            if r >= warmup:
                times[name].append(time.perf_counter() - t)
    return times


def bench_size(size: str, n: int, rounds: int, warmup: int, compile_too: bool, peak: float,
               before: bool = True) -> list[dict]:
    batch = batch_for(size, n)
    contenders: dict[str, Step] = {"open_clip CLIP": open_clip_step(size)}
    if before:
        contenders["argent CLIP before"] = argent_before_step(size, "clip")
        contenders["argent ARGENT before"] = argent_before_step(size, "argent")
    modes = [False, True] if compile_too else [False]
    for compiled in modes:
        tag = "compiled" if compiled else "eager"
        contenders[f"argent CLIP {tag}"] = argent_step(size, "clip", compiled)
        contenders[f"argent ARGENT {tag}"] = argent_step(size, "argent", compiled)
    flops = {name: flops_of(step, batch) for name, step in contenders.items() if "compiled" not in name}
    times = interleaved(contenders, batch, rounds, warmup)
    ref = times["open_clip CLIP"]
    rows = []
    for name, ts in times.items():
        sec = statistics.median(ts)
        flop = flops.get(name) or _compiled_flops(name, flops)
        row = {"size": size, "model": name, "batch": n, "rounds": len(ts), "s_per_step": sec,
               "samples_per_s": n / sec, "gflop_per_step": flop / 1e9, "share_of_peak": flop / sec / peak,
               "speed_vs_open_clip": statistics.median(r / t for r, t in zip(ref, ts))}
        if name.startswith("argent ARGENT"):
            clip = times[name.replace("ARGENT", "CLIP")]
            row["time_vs_argent_clip"] = statistics.median(t / c for t, c in zip(ts, clip))
            clip_name = name.replace("ARGENT", "CLIP")
            row["flop_vs_argent_clip"] = flop / (flops.get(clip_name) or _compiled_flops(clip_name, flops))
        rows.append(row)
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", default=["tiny", "S"])
    p.add_argument("--batch", type=int, default=None, help="batch size (default: 64 for tiny, 8 for others)")
    p.add_argument("--steps", type=int, default=7, help="timed rounds (>= 5; the median is reported)")
    p.add_argument("--warmup", type=int, default=2, help="untimed rounds first (compilation happens here)")
    p.add_argument("--threads", type=int, default=0, help="torch threads (default: torch's choice)")
    p.add_argument("--no-compile", action="store_true", help="skip the torch.compile contenders")
    p.add_argument("--no-before", action="store_true", help="skip the rebuilt pre-optimisation step")
    p.add_argument("--out", type=Path, default=ROOT / "results" / "bench" / "train.json")
    args = p.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    peak = matmul_peak()
    rows = []
    for size in args.sizes:
        n = args.batch or (64 if size == "tiny" else 8)
        rows += bench_size(size, n, args.steps, args.warmup, not args.no_compile, peak, not args.no_before)
    print(f"fp32 matmul peak: {peak / 1e9:.1f} GFLOP/s, threads: {torch.get_num_threads()}; "
          f"medians of {args.steps} interleaved rounds after {args.warmup} warm-up rounds")
    print(f"{'size':<5} {'model':<22} {'batch':>5} {'s/step':>8} {'samples/s':>10} {'GFLOP/step':>11} "
          f"{'% peak':>7} {'x open_clip':>11} {'ARGENT/CLIP':>12} {'(FLOPs)':>8}")
    for r in rows:
        rel = f"{r['time_vs_argent_clip']:.2f}" if "time_vs_argent_clip" in r else ""
        frel = f"{r['flop_vs_argent_clip']:.2f}" if "flop_vs_argent_clip" in r else ""
        print(f"{r['size']:<5} {r['model']:<22} {r['batch']:>5} {r['s_per_step']:>8.3f} {r['samples_per_s']:>10.1f} "
              f"{r['gflop_per_step']:>11.2f} {100 * r['share_of_peak']:>6.1f}% {r['speed_vs_open_clip']:>11.2f} "
              f"{rel:>12} {frel:>8}")
    print("x open_clip = open_clip step time / this step time (median of per-round ratios; > 1 is faster). "
          "ARGENT/CLIP = the full objective's step time over argent's CLIP step (boxes: 2x the images and texts); "
          "(FLOPs) = the same ratio in counted FLOPs, the floor for that time ratio.")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"peak_flops": peak, "threads": torch.get_num_threads(), "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
