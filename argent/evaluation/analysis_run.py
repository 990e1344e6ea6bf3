"""The embedding analysis protocol: norms (or hyperbolic radii) per item type and a 2-D projection.

Item types are images and captions per HierarCaps level, and, from grounded shards, images,
captions, box crops and their phrases. ``run_analysis`` has the signature of every protocol run
(``argent.evaluation.protocol_runs``); the arithmetic and the figures are in
``argent.evaluation.analysis``.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from argent import geometry
from argent.data.formats.grounded import decode_record, iter_records
from argent.data.formats.hierarcaps import read_hierarcaps
from argent.data.manifest import check_named_shards
from argent.data.policy import BadDataPolicy
from argent.evaluation import analysis
from argent.evaluation.benchmarks import AnalysisEntry
from argent.evaluation.encoding import encode_images, encode_pil_images, encode_texts, image_transform
from argent.evaluation.protocol_runs import first_n

__all__ = ["run_analysis"]


def _projection(embeddings: dict[str, Tensor], entry: AnalysisEntry, curv: float | None) -> dict[str, np.ndarray]:
    """{item type: its 2-D points}: the projection (``curv``: Lorentz, into the Poincaré disk; None: Euclidean
    PCA) fitted on an equal-size sample of every item type."""
    rng = np.random.default_rng(entry.seed)
    picked = {k: v[np.sort(rng.permutation(len(v))[: entry.max_points])] for k, v in embeddings.items() if len(v)}
    stacked = torch.cat(list(picked.values()))
    if curv is not None:
        xy = analysis.poincare_projection(stacked, curv, seed=entry.seed)
    else:
        xy = analysis.euclidean_projection(stacked, seed=entry.seed)
    points, start = {}, 0
    for k, v in picked.items():
        points[k] = xy[start : start + len(v)]
        start += len(v)
    return points


def _figures(out_path: Path, norms: dict[str, Tensor], points: dict[str, np.ndarray], xlabel: str,
             lorentz: bool) -> dict[str, str]:
    """The norms' and the projection's figures beside the result JSON; returns their paths."""
    stem = out_path.with_suffix("")
    figures = {"norms": f"{stem}_norms.png", "projection": f"{stem}_projection.png"}
    run = "/".join(p.name for p in out_path.parents[2::-1] if p.name)  # group/variant-size/seed<k>: the run
    analysis.plot_norms({k: v.numpy() for k, v in norms.items()}, Path(figures["norms"]), xlabel, title=run)
    title = ("log₀ → PCA → Poincaré disk (radius kept)" if lorentz else "PCA of normalised embeddings")
    analysis.plot_projection(points, Path(figures["projection"]), disk=lorentz, title=f"{run}: {title}")
    return figures


def run_analysis(model: Any, entry: AnalysisEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    lorentz = model.geometry == "lorentz"
    curv = model.curv().item()
    embeddings: dict[str, Tensor] = {}  # lifted (projected) embeddings per item type
    raw_norms: dict[str, Tensor] = {}  # Euclidean: ‖W f‖ before normalisation
    transform = image_transform(model)

    def add(kind: str, lifted: Tensor, unprojected: Tensor | None) -> None:
        # Both sources give images: pool them under one item type.
        embeddings[kind] = torch.cat([embeddings[kind], lifted]) if kind in embeddings else lifted
        if unprojected is not None:
            norms = unprojected.double().norm(dim=-1)
            raw_norms[kind] = torch.cat([raw_norms[kind], norms]) if kind in raw_norms else norms

    def images(paths: list[Path]) -> tuple[Tensor, Tensor | None]:
        emb, _ = encode_images(model, paths, transform, entry.batch_size, policy, entry.num_workers, project=lorentz)
        return _lifted_and_raw(emb, lorentz)

    def texts(items: list[str]) -> tuple[Tensor, Tensor | None]:
        return _lifted_and_raw(encode_texts(model, items, entry.batch_size, project=lorentz), lorentz)

    n_items = 0
    if entry.hierarcaps_csv:
        samples = first_n(read_hierarcaps(entry.hierarcaps_csv, entry.image_dir, policy=policy), entry.limit)
        n_items += len(samples)
        add("image", *images([s.image_path for s in samples]))
        for k in range(len(samples[0].levels) if samples else 0):
            add(f"caption_L{k + 1}", *texts([s.levels[k] for s in samples]))
    if entry.shards:
        n_items += _add_grounded(model, entry, policy, add, texts)
    policy.require_usable(sum(len(v) for v in embeddings.values()), "analysis sources")

    if lorentz:
        norms = {k: geometry.dist0(v.double(), curv) for k, v in embeddings.items()}
        space = {k: v.double().norm(dim=-1) for k, v in embeddings.items()}
        metrics = {"radius": {k: analysis.norm_summary(v) for k, v in norms.items()},
                   "space_norm": {k: analysis.norm_summary(v) for k, v in space.items()}}
        xlabel = "hyperbolic radius d(O, x)"
    else:
        norms = raw_norms
        metrics = {"unnormalised_norm": {k: analysis.norm_summary(v) for k, v in norms.items()}}
        xlabel = "‖W f‖ before normalisation"
    points = _projection(embeddings, entry, curv if lorentz else None)
    metrics["projection_mean_disk_radius" if lorentz else "projection_mean_norm"] = {
        k: float(np.linalg.norm(p, axis=1).mean()) for k, p in points.items()
    }
    figures = {}
    if out_path is not None:
        figures = _figures(out_path, norms, points, xlabel, lorentz)
    counts = {"n_items": n_items, **{f"n_{k}": len(v) for k, v in embeddings.items()}}
    return {"metrics": metrics, "counts": counts, "figures": figures}


def _lifted_and_raw(emb: Tensor, lorentz: bool) -> tuple[Tensor, Tensor | None]:
    """(lifted embeddings, W f or None). Euclidean models are encoded once with project=False:
    their lifted embedding is W f/‖W f‖ by the model contract, and ‖W f‖ is the norm reported."""
    if lorentz:
        return emb, None
    return torch.nn.functional.normalize(emb, dim=-1), emb


def _add_grounded(model: Any, entry: AnalysisEntry, policy: BadDataPolicy, add, texts) -> int:
    """Images, captions, crops and phrases of grounded shards, via the grounded reader.

    Every kept region of a sample contributes one crop and one phrase (HyCoCLIP's crop rule);
    the full image gets the same white square padding as in training. The shards are compared with
    their data set's manifest first (a missing or short val shard: module argent/data/manifest.py).
    Returns the sample count.
    """
    check_named_shards(entry.shards, policy)
    records = iter_records(entry.shards, min_box_area=entry.min_box_area, policy=policy)
    samples = [s for r in islice(records, entry.limit or None) if (s := decode_record(r, policy)) is not None]
    policy.require_usable(len(samples), entry.shards)
    transform = image_transform(model)
    lorentz = model.geometry == "lorentz"

    def pil(images: list) -> tuple[Tensor, Tensor | None]:
        return _lifted_and_raw(encode_pil_images(model, images, transform, entry.batch_size, project=lorentz), lorentz)

    add("image", *pil([s.image for s in samples]))
    add("caption", *texts([s.caption for s in samples]))
    crops = [c for s in samples for c in s.crops]
    if crops:
        add("crop", *pil(crops))
        add("phrase", *texts([r.phrase for s in samples for r in s.regions]))
    return len(samples)
