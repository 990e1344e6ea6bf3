"""One function per evaluation protocol: read the benchmark's data, encode it, call the pure metrics.

``run_<protocol>(model, entry, policy, out_path)`` returns ``{"metrics": ..., "counts": ...,
"items": {metric key: (ids, values)}, ...}``; ``argent.evaluation.runner.evaluate`` dispatches to
it, checks every item vector against its metric (``argent.evaluation.items``) and wraps the result
JSON. Item ids are stable across runs of one benchmark: image paths relative to the data folder,
``<image>#<k>`` for an image's k-th caption, SugarCrepe ``<category>/<idx>``, HierarCaps row ids
(PEP pairs) and COCO image ids (threshold retrieval). The metric arithmetic lives in the protocol
modules (zeroshot, retrieval, pep, hierarcaps_protocol, compositional) and never sees the model.
Data comes only through the format readers (``argent.data.formats``), so the embedded hiershapes
benchmark and the real data sets share this code path. The embedding analysis has its own module
(``analysis_run``).

Model API used (the project contract, beside ``argent.evaluation.encoding``'s): ``lift_text``,
``curv``, ``geometry``, and the image transform ``encoding.image_transform`` picks (a released
model's own, argent's at ``config.image_size`` otherwise).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch
from torch import Tensor

from argent import geometry
from argent.data.formats import coco_karpathy
from argent.data.formats.hierarcaps import read_hierarcaps
from argent.data.formats.imagefolder import read_image_folder
from argent.data.formats.sugarcrepe import read_sugarcrepe
from argent.data.policy import BadDataError, BadDataPolicy
from argent.data.taxonomy import Taxonomy
from argent.evaluation import (
    compositional,
    hierarcaps_protocol,
    hierarchy,
    pep,
    retrieval,
    zeroshot,
)
from argent.evaluation.benchmarks import (
    CompositionalEntry,
    HierarCapsEntry,
    PepEntry,
    RetrievalEntry,
    ZeroShotEntry,
)
from argent.evaluation.chunked_similarity import paired_scores
from argent.evaluation.encoding import (
    device_of,
    encode_images,
    encode_texts,
    image_transform,
    similarity_on_cpu,
)
from argent.evaluation.items import cluster_item_values, clustered_auc_pseudovalues, item_means
from argent.evaluation.templates import resolve_templates

__all__ = ["first_n", "first_per_group", "path_id", "run_compositional", "run_hierarcaps", "run_pep", "run_retrieval",
           "run_zeroshot"]

log = logging.getLogger(__name__)


Items = dict[str, tuple[list[str], np.ndarray]]


def path_id(path: Path, base: str | Path) -> str:
    """A file's item id: its path relative to the data folder (posix), else its name."""
    try:
        return Path(path).relative_to(base).as_posix()
    except ValueError:
        return Path(path).name


def first_n(items: list, limit: int) -> list:
    """The first ``limit`` items; all when 0."""
    return items[:limit] if limit else items


def first_per_group(items: list, limit: int, key: Callable[[Any], Any]) -> list:
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


def run_zeroshot(model: Any, entry: ZeroShotEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    data = read_image_folder(entry.root, policy=policy)
    samples = first_per_group(list(data.samples), entry.limit, key=lambda s: s[1])
    templates = resolve_templates(entry.templates)
    taxonomy = None
    if entry.taxonomy:
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
        prototypes = model.lift_text(averaged.to(device_of(model))).float().cpu()
    image_emb, kept = encode_images(
        model, [p for p, _ in samples], image_transform(model), entry.batch_size, policy, entry.num_workers
    )
    policy.require_usable(len(kept), entry.root)
    labels = np.array([samples[i][1] for i in kept])
    score = similarity_on_cpu(model)
    preds = np.concatenate(
        [score(image_emb[s : s + entry.chunk_size], prototypes).argmax(dim=1).numpy() for s in range(0, len(kept), entry.chunk_size)]
    )
    metrics: dict[str, Any] = zeroshot.classification_metrics(preds, labels, len(data.class_ids))
    per_image = zeroshot.classification_item_values(preds, labels)
    if taxonomy is not None:
        per_image.update(
            hierarchy.hierarchy_item_values(taxonomy, [data.class_ids[y] for y in labels], [data.class_ids[p] for p in preds])
        )
        metrics.update(item_means({name: per_image[name] for name in hierarchy.HIERARCHY_METRICS}))
    ids = [path_id(samples[i][0], data.root) for i in kept]
    counts = {"n_items": len(kept), "n_classes": len(data.class_ids), "n_templates": len(templates)}
    items: Items = {key: (ids, values) for key, values in per_image.items()}
    return {"metrics": metrics, "counts": counts, "items": items}


def run_retrieval(model: Any, entry: RetrievalEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    if entry.format == "karpathy":
        data = coco_karpathy.read_karpathy(entry.annotations, entry.image_dir, split=entry.split, policy=policy)
    else:
        data = coco_karpathy.read_coco_captions(entry.annotations, entry.image_dir, policy=policy)
    image_paths = first_n(list(data.image_paths), entry.limit)
    image_emb, kept = encode_images(
        model, image_paths, image_transform(model, "squeeze"), entry.batch_size, policy, entry.num_workers
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
    hits, queried, caption_order = retrieval.folded_retrieval_hits(
        image_emb, text_emb, caption_image, similarity_on_cpu(model), entry.fold_size,
        ks=entry.ks, query_chunk=entry.chunk_size, key_chunk=entry.key_chunk,
    )
    metrics = item_means(hits)
    # Ids: the image's path under image_dir. A text query's hit is summed into its image
    # (cluster_item_values): the captions of one image are no independent draws of the test set.
    image_ids = [path_id(image_paths[i], entry.image_dir) for i in kept]
    caption_images = [image_ids[caption_image[t]] for t in caption_order.tolist()]
    query_ids = [image_ids[i] for i in queried.tolist()]
    items: Items = {key: (query_ids, value.numpy()) if key.startswith("i2t")
                    else cluster_item_values(caption_images, value.numpy()) for key, value in hits.items()}
    counts = {"n_images": len(kept), "n_captions": len(captions), "captions_left_out": dropped_captions,
              "gallery_images": min(entry.fold_size or len(kept), len(kept))}
    return {"metrics": metrics, "counts": counts, "items": items}


def _read_pool(path: Path) -> list[str]:
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


def run_pep(model: Any, entry: PepEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    if model.geometry == "euclidean":
        keys = ["auc", "ap", "raw_auc", "raw_ap", "tied_share", "inside_share"] + [
            f"{m}_L{k}" for m in ("auc", "ap", "raw_auc", "tied_share", "inside_share") for k in range(1, 5)]
        return {
            "metrics": dict.fromkeys(keys),
            "counts": {"n_items": 0},
            "status": "n/a",
            "reason": "PEP scores entailment cones (exterior angles) of a hyperbolic model; a Euclidean model has none",
        }
    source: dict[str, Any] = {}
    use_clean = bool(entry.clean_csv) and Path(entry.clean_csv).is_file()
    if entry.clean_csv and not use_clean:
        log.warning("%s not found: PEP falls back to the whole split %s", entry.clean_csv, entry.hierarcaps_csv)
        source["warning"] = f"clean_csv {entry.clean_csv} not found; used the whole split"
    csv_path = entry.clean_csv if use_clean else entry.hierarcaps_csv
    samples = first_n(read_hierarcaps(csv_path, entry.image_dir, policy=policy), entry.limit)
    policy.require_usable(len(samples), csv_path)
    image_emb, kept = encode_images(
        model, [s.image_path for s in samples], image_transform(model), entry.batch_size, policy, entry.num_workers
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
    items = {"auc": _pep_auc_items(samples, pairs, pep.entailment_probability(phi_pos), pep.entailment_probability(phi_neg)),
             "raw_auc": _pep_auc_items(samples, pairs, -phi_pos, -phi_neg)}
    out = {"metrics": metrics, "counts": counts, "pairs": source, "items": items}
    if metrics["zero_score_share"] == 1.0:  # every pair outside every cone: the clamp ties them all at 0
        out["degraded"] = ["every pair's entailment probability is 0 (all ties), so auc/ap are 0.5/chance by "
                           "construction; raw_auc ranks the same pairs by their angle"]
    return out


def _pep_auc_items(
    samples: list, pairs: pep.PepPairs, pos_scores: np.ndarray, neg_scores: np.ndarray
) -> tuple[list[str], np.ndarray]:
    """A pooled AUC's clustered-DeLong pseudo-values (``items.clustered_auc_pseudovalues``), one per
    image row, for the pairs' scores (the clamped p_Ent of ``auc``, or −φ of ``raw_auc``): a row's positive pairs (its levels) and its negative
    pairs (it against the pool) share the image, so the image is the unit the test set draws.
    Their mean is the AUC and their variance / N the AUC's variance over test images with the
    negative pool held fixed (the pool is a crossed factor the interval does not resample; with
    no pool file the pool is the samples' own level-4 captions, which a new test set would change,
    and that part of the spread is left out too). Ids: the row id."""
    row_ids = [str(s.id) for s in samples]
    neg_image, _ = pep.negative_index(pairs, len(samples))
    return clustered_auc_pseudovalues(pos_scores, pairs.pos_image.numpy(), neg_scores, neg_image, row_ids)


def _radii(model: Any, text_emb: Tensor, batch_size: int) -> Tensor:
    """HierarCaps radius: d(O, x) (Lorentz) or ‖e − r‖ with r the empty-string embedding (CLIP)."""
    if model.geometry == "lorentz":
        return geometry.dist0(text_emb.double(), model.curv().item())
    root = torch.nn.functional.normalize(encode_texts(model, [""], batch_size).double(), dim=-1)
    return (torch.nn.functional.normalize(text_emb.double(), dim=-1) - root).norm(dim=-1)


def run_hierarcaps(model: Any, entry: HierarCapsEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    samples = first_n(read_hierarcaps(entry.hierarcaps_csv, entry.image_dir, policy=policy), entry.limit)
    policy.require_usable(len(samples), entry.hierarcaps_csv)
    # One query per distinct image; its ground truth is the union of its rows' chains.
    by_image: dict[int, list] = {}
    for s in samples:
        by_image.setdefault(s.image_id, []).append(s)
    images = list(by_image)
    image_emb, kept = encode_images(
        model, [by_image[i][0].image_path for i in images], image_transform(model),
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
    per_image = hierarcaps_protocol.threshold_retrieval_per_image(
        image_emb, text_emb, radius, gt_levels, similarity_on_cpu(model), entry.steps, entry.chunk_size
    )
    metrics.update(item_means(per_image))
    metrics["mean_radius_by_level"] = [float(v) for v in row_radii.mean(axis=0)]
    image_ids = [str(images[i]) for i in kept]  # the COCO image id of the query image
    items: Items = {key: (image_ids, values) for key, values in per_image.items()}
    counts = {"n_items": len(samples), "n_images": len(kept), "n_pool_texts": len(texts)}
    radius_name = "d(O, x)" if model.geometry == "lorentz" else "||e - r||, r = empty-string embedding"
    return {"metrics": metrics, "counts": counts, "items": items, "radius": radius_name}


def run_compositional(model: Any, entry: CompositionalEntry, policy: BadDataPolicy, out_path: Path | None) -> dict:
    items = read_sugarcrepe(entry.json_dir, entry.image_dir, policy=policy)
    if entry.categories:
        found = sorted({it.category for it in items})
        unknown = sorted(set(entry.categories) - set(found))
        if unknown:
            raise BadDataError(f"{entry.json_dir}: categories {unknown} not found; found: {found}")
        items = [it for it in items if it.category in set(entry.categories)]
    items = first_per_group(items, entry.limit, key=lambda it: it.category)
    policy.require_usable(len(items), entry.json_dir)
    paths = list(dict.fromkeys(it.image_path for it in items))
    image_emb, kept = encode_images(
        model, paths, image_transform(model), entry.batch_size, policy, entry.num_workers
    )
    row_of = {paths[i]: r for r, i in enumerate(kept)}
    usable = [it for it in items if it.image_path in row_of]
    policy.require_usable(len(usable), entry.json_dir)
    texts = list(dict.fromkeys(t for it in usable for t in (it.caption, it.negative_caption)))
    index = {t: i for i, t in enumerate(texts)}
    text_emb = encode_texts(model, texts, entry.batch_size)
    img = image_emb[[row_of[it.image_path] for it in usable]]
    score = similarity_on_cpu(model)
    pos = paired_scores(img, text_emb[[index[it.caption] for it in usable]], score, entry.chunk_size)
    neg = paired_scores(img, text_emb[[index[it.negative_caption] for it in usable]], score, entry.chunk_size)
    categories = [it.category for it in usable]
    metrics = compositional.compositional_metrics(pos.numpy(), neg.numpy(), categories)
    ids = [f"{it.category}/{it.idx}" for it in usable]  # the JSON file stem and the item's key in it
    per_item = compositional.compositional_item_values(pos.numpy(), neg.numpy(), categories)
    counts = {"n_items": len(usable), "n_images": len(kept), "items_without_image": len(items) - len(usable)}
    vectors: Items = {key: ([ids[i] for i in sel], values) for key, (sel, values) in per_item.items()}
    return {"metrics": metrics, "counts": counts, "items": vectors}
