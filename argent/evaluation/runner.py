"""Model-running glue: read a benchmark's data, encode it with a model, call the pure metrics.

``evaluate(model, name, entry)`` returns the result dict that ``argent evaluate`` writes as JSON.
Each protocol has one ``_run_<protocol>`` function here; the metric arithmetic lives in the
protocol modules (zeroshot, retrieval, pep, hierarcaps_protocol, compositional, analysis) and
never sees the model. Data comes only through the format readers (``argent.data.formats``), so
the embedded hiershapes benchmark and the real data sets share this code path.

Model API used (the project contract): ``encode_image``, ``encode_text`` (``project=False`` for
prompt averaging), ``lift_text``, ``similarity``, ``curv``, ``geometry``, ``config.image_size``,
``config.context_length``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from argent import geometry
from argent.data.policy import BadDataError, BadDataPolicy
from argent.evaluation import analysis, compositional, hierarcaps_protocol, hierarchy, pep, retrieval, zeroshot
from argent.evaluation.benchmarks import (
    AnalysisEntry,
    CommonOptions,
    CompositionalEntry,
    HierarCapsEntry,
    PepEntry,
    RetrievalEntry,
    ZeroShotEntry,
    entry_hash,
)
from argent.evaluation.chunked_similarity import paired_scores

__all__ = ["evaluate", "encode_images", "encode_texts", "reuse_image_embeddings"]

log = logging.getLogger(__name__)

UNITS = (
    "accuracies, recalls, AUC, AP, Jaccard, hierarchical precision/recall and threshold precision/recall "
    "are fractions in [0, 1]; tie and lca are tree edges; kendall_tau is in [-1, 1]; norms in embedding units"
)


# ------------------------------------------------------------------------------------------------
# Encoding
# ------------------------------------------------------------------------------------------------


class _ImageFiles(torch.utils.data.Dataset):
    """Decoded, transformed images; a bad file yields its error message instead of a tensor."""

    def __init__(self, paths: Sequence[Path], transform: Callable) -> None:
        self.paths = list(paths)
        self.transform = transform

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> tuple[int, Tensor | None, str]:
        from argent.data.images import load_image

        try:
            return i, self.transform(load_image(self.paths[i])), ""
        except BadDataError as err:
            return i, None, str(err)


def _collate(batch: list) -> list:
    return batch


def _device_of(model: torch.nn.Module) -> torch.device:
    return next(model.parameters()).device


@dataclasses.dataclass
class ImageEmbeddingMemo:
    """Image embeddings already computed in this block, and how often they were reused."""

    entries: dict[tuple, tuple[Tensor, list[int], list[tuple[str, str]]]] = dataclasses.field(default_factory=dict)
    hits: int = 0
    images_reused: int = 0


_MEMO: ImageEmbeddingMemo | None = None


@contextlib.contextmanager
def reuse_image_embeddings() -> Iterator[ImageEmbeddingMemo]:
    """Within this block ``encode_images`` embeds each image list once per (model, transform,
    batch size, projection) and hands the same tensor to every later protocol that asks for it
    (e.g. PEP, HierarCaps and the analysis read the same image folder). Reused results are the very
    tensors the first call computed, so every metric is unchanged; the skipped images of that
    call are counted again in each later caller's policy. The caller promises that the model's
    weights do not change inside the block (``argent evaluate``: one checkpoint per process)."""
    global _MEMO
    outer = _MEMO
    _MEMO = outer if outer is not None else ImageEmbeddingMemo()
    try:
        yield _MEMO
    finally:
        _MEMO = outer


@torch.no_grad()
def encode_images(
    model: Any,
    paths: Sequence[Path],
    transform: Callable,
    batch_size: int,
    policy: BadDataPolicy,
    num_workers: int = 0,
    project: bool = True,
) -> tuple[Tensor, list[int]]:
    """Embed image files: -> (embeddings (K, D) float32 on CPU, indices of the K usable paths).

    A missing or corrupt image goes through ``policy`` (reason ``bad_image``): counted and left
    out (skip) or a ``BadDataError`` naming the file (strict). Inside ``reuse_image_embeddings`` a
    repeated request is answered from memory.
    """
    key = (id(model), tuple(str(p) for p in paths), repr(transform), batch_size, project)
    if _MEMO is not None and key in _MEMO.entries:
        emb, kept, bad = _MEMO.entries[key]
        for reason, error in bad:
            policy.bad(reason, error)
        _MEMO.hits += 1
        _MEMO.images_reused += len(kept)
        return emb.clone(), list(kept)  # a copy: a protocol may work in place on its tensor
    bad_seen: list[tuple[str, str]] = []
    device = _device_of(model)
    loader = torch.utils.data.DataLoader(
        _ImageFiles(paths, transform), batch_size=batch_size, num_workers=num_workers, collate_fn=_collate
    )
    chunks, kept = [], []
    for batch in loader:
        good = []
        for i, tensor, error in batch:
            if tensor is None:
                policy.bad("bad_image", error)
                bad_seen.append(("bad_image", error))
            else:
                good.append((i, tensor))
        if good:
            images = torch.stack([t for _, t in good]).to(device)
            chunks.append(model.encode_image(images, project=project).float().cpu())
            kept.extend(i for i, _ in good)
    dim = model.config.embed_dim
    emb = torch.cat(chunks) if chunks else torch.empty(0, dim)
    if _MEMO is not None:
        _MEMO.entries[key] = (emb, list(kept), bad_seen)
    return emb, kept


@torch.no_grad()
def encode_texts(model: Any, texts: Sequence[str], batch_size: int, project: bool = True) -> Tensor:
    """Embed texts: (N,) strings -> (N, D) float32 on CPU."""
    from argent.models.tokenizer import tokenize

    device = _device_of(model)
    out = []
    for s in range(0, len(texts), batch_size):
        tokens = tokenize(list(texts[s : s + batch_size]), model.config.context_length).to(device)
        out.append(model.encode_text(tokens, project=project).float().cpu())
    return torch.cat(out) if out else torch.empty(0, model.config.embed_dim)


def _similarity(model: Any) -> Callable[[Tensor, Tensor], Tensor]:
    """``model.similarity`` on the model's device, results back on the CPU."""
    device = _device_of(model)
    return lambda x, y: model.similarity(x.to(device), y.to(device)).cpu()


def _limit(items: list, limit: int) -> list:
    return items[:limit] if limit else items


def _limit_per_group(items: list, limit: int, key: Callable[[Any], Any]) -> list:
    """The first ``limit`` items of every group (class, category), in order; all when 0."""
    if not limit:
        return items
    seen: dict[Any, int] = {}
    out = []
    for item in items:
        group = key(item)
        seen[group] = seen.get(group, 0) + 1
        if seen[group] <= limit:
            out.append(item)
    return out


# ------------------------------------------------------------------------------------------------
# Protocols
# ------------------------------------------------------------------------------------------------


def _run_zeroshot(model: Any, entry: ZeroShotEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    from argent.data.formats.imagefolder import read_image_folder
    from argent.data.images import eval_transform

    data = read_image_folder(entry.root, policy=policy)
    samples = _limit_per_group(list(data.samples), entry.limit, key=lambda s: s[1])
    templates = zeroshot.resolve_templates(entry.templates)
    taxonomy = None
    if entry.taxonomy:
        from argent.data.taxonomy import Taxonomy

        taxonomy = Taxonomy.from_edges_file(entry.taxonomy)
        missing = [c for c in data.class_ids if c not in taxonomy]
        if missing:
            raise BadDataError(
                f"{entry.taxonomy}: class id(s) {missing[:5]} of {entry.root} are not in the taxonomy; "
                "the class folders must be named by taxonomy ids"
            )
    # Prototypes: tangent-space average of the prompt features, then the model's own lift.
    prompts = zeroshot.fill_templates(data.class_names, templates)
    features = encode_texts(model, prompts, entry.batch_size, project=False)
    features = features.reshape(len(data.class_names), len(templates), -1)
    averaged = zeroshot.average_prompts(features, normalise_each=model.geometry == "euclidean")
    with torch.no_grad():
        prototypes = model.lift_text(averaged.to(_device_of(model))).float().cpu()
    image_emb, kept = encode_images(
        model, [p for p, _ in samples], eval_transform(model.config.image_size), entry.batch_size, policy, entry.num_workers
    )
    policy.require_usable(len(kept), entry.root)
    labels = np.array([samples[i][1] for i in kept])
    score = _similarity(model)
    preds = np.concatenate(
        [score(image_emb[s : s + entry.chunk_size], prototypes).argmax(dim=1).numpy() for s in range(0, len(kept), entry.chunk_size)]
    )
    metrics: dict[str, Any] = zeroshot.classification_metrics(preds, labels, len(data.class_ids))
    if taxonomy is not None:
        metrics.update(
            hierarchy.hierarchy_metrics(taxonomy, [data.class_ids[y] for y in labels], [data.class_ids[p] for p in preds])
        )
    counts = {"n_items": len(kept), "n_classes": len(data.class_ids), "n_templates": len(templates)}
    return {"metrics": metrics, "counts": counts}


def _run_retrieval(model: Any, entry: RetrievalEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    from argent.data.formats import coco_karpathy as retrieval_format
    from argent.data.images import squeeze_transform

    if entry.format == "karpathy":
        data = retrieval_format.read_karpathy(entry.annotations, entry.image_dir, split=entry.split, policy=policy)
    else:
        data = retrieval_format.read_coco_captions(entry.annotations, entry.image_dir, policy=policy)
    image_paths = _limit(list(data.image_paths), entry.limit)
    image_emb, kept = encode_images(
        model, image_paths, squeeze_transform(model.config.image_size), entry.batch_size, policy, entry.num_workers
    )
    policy.require_usable(len(kept), entry.annotations)
    new_index = {old: new for new, old in enumerate(kept)}
    # Captions of a skipped (or beyond-limit) image have no true item: leave them out.
    captions, caption_image = [], []
    for text, img in zip(data.captions, data.caption_image):
        if img in new_index:
            captions.append(text)
            caption_image.append(new_index[img])
    dropped_captions = len(data.captions) - len(captions)
    text_emb = encode_texts(model, captions, entry.batch_size)
    metrics = retrieval.retrieval_metrics(
        image_emb, text_emb, caption_image, _similarity(model), entry.ks, entry.chunk_size, entry.key_chunk
    )
    counts = {"n_images": len(kept), "n_captions": len(captions), "captions_left_out": dropped_captions}
    return {"metrics": metrics, "counts": counts}


def _read_pool(path: Path) -> list[str]:
    import polars as pl

    try:
        frame = pl.read_csv(path, infer_schema_length=0)
    except Exception as err:  # polars raises several types for unreadable CSVs
        raise BadDataError(f"{path}: not a readable CSV ({err})") from None
    if "caption" not in frame.columns:
        raise BadDataError(f"{path}: no 'caption' column (columns: {frame.columns}); expected argent clean's negative_pool.csv")
    pool = [c for c in frame["caption"].to_list() if c and c.strip()]
    if not pool:
        raise BadDataError(f"{path}: the negative pool is empty")
    return pool


def _run_pep(model: Any, entry: PepEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    if model.geometry == "euclidean":
        keys = ["auc", "ap", "raw_auc", "raw_ap"] + [f"{m}_L{k}" for m in ("auc", "ap") for k in range(1, 5)]
        return {
            "metrics": dict.fromkeys(keys),
            "counts": {"n_items": 0},
            "status": "n/a",
            "reason": "PEP scores entailment cones (exterior angles) of a hyperbolic model; a Euclidean model has none",
        }
    from argent.data.formats.hierarcaps import read_hierarcaps
    from argent.data.images import eval_transform

    source: dict[str, Any] = {}
    use_clean = bool(entry.clean_csv) and Path(entry.clean_csv).is_file()
    if entry.clean_csv and not use_clean:
        log.warning("%s not found: PEP falls back to the whole split %s", entry.clean_csv, entry.hierarcaps_csv)
        source["warning"] = f"clean_csv {entry.clean_csv} not found; used the whole split"
    csv_path = entry.clean_csv if use_clean else entry.hierarcaps_csv
    samples = _limit(read_hierarcaps(csv_path, entry.image_dir, policy=policy), entry.limit)
    policy.require_usable(len(samples), csv_path)
    image_emb, kept = encode_images(
        model, [s.image_path for s in samples], eval_transform(model.config.image_size), entry.batch_size, policy, entry.num_workers
    )
    policy.require_usable(len(kept), csv_path)
    samples = [samples[i] for i in kept]
    use_pool = bool(entry.negative_pool) and Path(entry.negative_pool).is_file()
    if entry.negative_pool and not use_pool:
        log.warning("%s not found: PEP uses the level-4 captions of the split as the pool", entry.negative_pool)
        source["pool_warning"] = f"negative_pool {entry.negative_pool} not found; used level-4 captions"
    pool = _read_pool(Path(entry.negative_pool)) if use_pool else [s.levels[-1] for s in samples]
    source.update(samples=csv_path, pool=entry.negative_pool if use_pool else "level-4 captions of the samples")
    pairs = pep.build_pairs([s.levels for s in samples], pool)
    text_emb = encode_texts(model, pairs.texts, entry.batch_size)
    curv = model.curv().item()
    phi_pos, level_pos, phi_neg = pep.pair_angles(text_emb, image_emb, pairs, curv, entry.block_entries)
    metrics = pep.pep_metrics(phi_pos, level_pos, phi_neg)
    counts = {"n_items": len(samples), "n_pool": int(pairs.pool_text.numel()), "n_pairs": len(phi_pos) + len(phi_neg)}
    return {"metrics": metrics, "counts": counts, "pairs": source}


def _radii(model: Any, text_emb: Tensor, batch_size: int) -> Tensor:
    """HierarCaps radius: d(O, x) (Lorentz) or ‖e − r‖ with r the empty-string embedding (CLIP)."""
    if model.geometry == "lorentz":
        return geometry.dist0(text_emb.double(), model.curv().item())
    root = torch.nn.functional.normalize(encode_texts(model, [""], batch_size).double(), dim=-1)
    return (torch.nn.functional.normalize(text_emb.double(), dim=-1) - root).norm(dim=-1)


def _run_hierarcaps(model: Any, entry: HierarCapsEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    from argent.data.formats.hierarcaps import read_hierarcaps
    from argent.data.images import eval_transform

    samples = _limit(read_hierarcaps(entry.hierarcaps_csv, entry.image_dir, policy=policy), entry.limit)
    policy.require_usable(len(samples), entry.hierarcaps_csv)
    # One query per distinct image; its ground truth is the union of its rows' chains.
    by_image: dict[int, list] = {}
    for s in samples:
        by_image.setdefault(s.image_id, []).append(s)
    images = list(by_image)
    image_emb, kept = encode_images(
        model, [by_image[i][0].image_path for i in images], eval_transform(model.config.image_size),
        entry.batch_size, policy, entry.num_workers,
    )
    policy.require_usable(len(kept), entry.hierarcaps_csv)
    texts = list(dict.fromkeys(t for s in samples for t in s.levels))  # the pool, de-duplicated
    index = {t: i for i, t in enumerate(texts)}
    text_emb = encode_texts(model, texts, entry.batch_size)
    radius = _radii(model, text_emb, entry.batch_size)
    row_radii = torch.stack([radius[[index[t] for t in s.levels]] for s in samples]).numpy()
    metrics: dict[str, Any] = hierarcaps_protocol.level_order_correlation(row_radii)
    gt_levels = [
        [{index[s.levels[k]] for s in by_image[images[i]]} for k in range(len(samples[0].levels))] for i in kept
    ]
    metrics.update(
        hierarcaps_protocol.threshold_retrieval(
            image_emb, text_emb, radius, gt_levels, _similarity(model), entry.steps, entry.chunk_size
        )
    )
    metrics["mean_radius_by_level"] = [float(v) for v in row_radii.mean(axis=0)]
    counts = {"n_items": len(samples), "n_images": len(kept), "n_pool_texts": len(texts)}
    return {"metrics": metrics, "counts": counts, "radius": "d(O, x)" if model.geometry == "lorentz" else "||e - r||, r = empty-string embedding"}


def _run_compositional(model: Any, entry: CompositionalEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    from argent.data.formats.sugarcrepe import read_sugarcrepe
    from argent.data.images import eval_transform

    items = read_sugarcrepe(entry.json_dir, entry.image_dir, policy=policy)
    if entry.categories:
        found = sorted({it.category for it in items})
        unknown = sorted(set(entry.categories) - set(found))
        if unknown:
            raise BadDataError(f"{entry.json_dir}: categories {unknown} not found; found: {found}")
        items = [it for it in items if it.category in set(entry.categories)]
    items = _limit_per_group(items, entry.limit, key=lambda it: it.category)
    policy.require_usable(len(items), entry.json_dir)
    paths = list(dict.fromkeys(it.image_path for it in items))
    image_emb, kept = encode_images(
        model, paths, eval_transform(model.config.image_size), entry.batch_size, policy, entry.num_workers
    )
    row_of = {paths[i]: r for r, i in enumerate(kept)}
    usable = [it for it in items if it.image_path in row_of]
    policy.require_usable(len(usable), entry.json_dir)
    texts = list(dict.fromkeys(t for it in usable for t in (it.caption, it.negative_caption)))
    index = {t: i for i, t in enumerate(texts)}
    text_emb = encode_texts(model, texts, entry.batch_size)
    img = image_emb[[row_of[it.image_path] for it in usable]]
    score = _similarity(model)
    pos = paired_scores(img, text_emb[[index[it.caption] for it in usable]], score, entry.chunk_size)
    neg = paired_scores(img, text_emb[[index[it.negative_caption] for it in usable]], score, entry.chunk_size)
    metrics = compositional.compositional_metrics(pos.numpy(), neg.numpy(), [it.category for it in usable])
    counts = {"n_items": len(usable), "n_images": len(kept), "items_without_image": len(items) - len(usable)}
    return {"metrics": metrics, "counts": counts}


def _run_analysis(model: Any, entry: AnalysisEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    from argent.data.images import eval_transform

    lorentz = model.geometry == "lorentz"
    curv = model.curv().item()
    embeddings: dict[str, Tensor] = {}  # lifted (projected) embeddings per item type
    raw_norms: dict[str, Tensor] = {}  # Euclidean: ‖W f‖ before normalisation
    transform = eval_transform(model.config.image_size)

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
        from argent.data.formats.hierarcaps import read_hierarcaps

        samples = _limit(read_hierarcaps(entry.hierarcaps_csv, entry.image_dir, policy=policy), entry.limit)
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
    # The projection is fitted on an equal-size sample of every item type.
    rng = np.random.default_rng(entry.seed)
    picked = {k: v[np.sort(rng.permutation(len(v))[: entry.max_points])] for k, v in embeddings.items() if len(v)}
    stacked = torch.cat(list(picked.values()))
    if lorentz:
        xy = analysis.poincare_projection(stacked, curv, seed=entry.seed)
    else:
        xy = analysis.euclidean_projection(stacked, seed=entry.seed)
    points, start = {}, 0
    for k, v in picked.items():
        points[k] = xy[start : start + len(v)]
        start += len(v)
    metrics["projection_mean_disk_radius" if lorentz else "projection_mean_norm"] = {
        k: float(np.linalg.norm(p, axis=1).mean()) for k, p in points.items()
    }
    figures = {}
    if out_path is not None:
        stem = out_path.with_suffix("")
        figures = {"norms": f"{stem}_norms.png", "projection": f"{stem}_projection.png"}
        analysis.plot_norms({k: v.numpy() for k, v in norms.items()}, Path(figures["norms"]), xlabel)
        title = ("log₀ → PCA → Poincaré disk (radius kept)" if lorentz else "PCA of normalised embeddings")
        analysis.plot_projection(points, Path(figures["projection"]), disk=lorentz, title=title)
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
    the full image gets the same white square padding as in training. Returns the sample count.
    """
    from itertools import islice

    from argent.data.formats.grounded import decode_record, iter_records
    from argent.data.images import eval_transform

    records = iter_records(entry.shards, min_box_area=entry.min_box_area, policy=policy)
    samples = [s for r in islice(records, entry.limit or None) if (s := decode_record(r, policy)) is not None]
    policy.require_usable(len(samples), entry.shards)
    transform = eval_transform(model.config.image_size)
    lorentz = model.geometry == "lorentz"

    def pil(images: list) -> tuple[Tensor, Tensor | None]:
        return _lifted_and_raw(_encode_pil(model, images, transform, entry.batch_size, project=lorentz), lorentz)

    add("image", *pil([s.image for s in samples]))
    add("caption", *texts([s.caption for s in samples]))
    crops = [c for s in samples for c in s.crops]
    if crops:
        add("crop", *pil(crops))
        add("phrase", *texts([r.phrase for s in samples for r in s.regions]))
    return len(samples)


@torch.no_grad()
def _encode_pil(model: Any, images: list, transform: Callable, batch_size: int, project: bool) -> Tensor:
    device = _device_of(model)
    out = []
    for s in range(0, len(images), batch_size):
        batch = torch.stack([transform(img) for img in images[s : s + batch_size]]).to(device)
        out.append(model.encode_image(batch, project=project).float().cpu())
    return torch.cat(out) if out else torch.empty(0, model.config.embed_dim)


_RUNNERS = {
    "zeroshot": _run_zeroshot,
    "retrieval": _run_retrieval,
    "pep": _run_pep,
    "hierarcaps": _run_hierarcaps,
    "compositional": _run_compositional,
    "analysis": _run_analysis,
}


def evaluate(model: Any, name: str, entry: CommonOptions, out_path: str | Path | None = None) -> dict[str, Any]:
    """Run benchmark ``name`` (a validated entry) on ``model``; returns the JSON-ready result.

    ``out_path`` is where the caller will write the JSON; protocols that draw figures (analysis)
    write them beside it (``<stem>_<figure>.png``).
    """
    policy = BadDataPolicy(entry.bad_data)
    was_training = model.training
    model.eval()
    start = time.perf_counter()
    try:
        result = _RUNNERS[entry.protocol](model, entry, policy, Path(out_path) if out_path else None)
    finally:
        model.train(was_training)
    counts = result.pop("counts")
    counts["skipped"] = policy.counts
    counts["dropped"] = policy.dropped
    out = {
        "benchmark": name,
        "protocol": entry.protocol,
        "geometry": model.geometry,
        "status": result.pop("status", "ok"),
        "metrics": _clean(result.pop("metrics")),
        "counts": counts,
        "units": UNITS,
        "entry": dataclasses.asdict(entry),
        "entry_hash": entry_hash(entry),
        "elapsed_s": round(time.perf_counter() - start, 3),
    }
    out.update(_clean(result))
    out["partial"] = policy.total > 0  # computed from fewer items than the input holds (skip mode)
    if policy.total:
        log.warning("%s: PARTIAL result, %d bad item(s) skipped: %s", name, policy.total, policy.report())
    return out


def _clean(value: Any) -> Any:
    """JSON-safe: numpy scalars to Python, NaN/inf to None (JSON has no NaN)."""
    if isinstance(value, dict):
        return {str(k): _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value
