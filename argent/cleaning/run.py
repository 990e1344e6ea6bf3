"""The cleaning run: clean HierarCaps, build the PEP negative pool, and run the Table 1 analysis.

``run(job)`` takes a ``CleanJob`` (paths given by the caller + the typed ``clean:`` section); it never
sees the command line (``argent.cleaning.cli`` parses that).

Writes into ``--out-dir``:
- ``hierarcaps_clean.csv``: the kept rows, verbatim, in the input's format and order;
- ``clean_scores.csv``: one row per input row: scores, rivals, kept, reason (bad rows included,
  reason ``bad_data:<why>``);
- ``caption_degrees.csv`` / ``negative_pool.csv``: retrieval degree of every candidate caption / the pool
  (caption, id, degree);
- ``table1.csv`` / ``table1.md``: the false-negative analysis (docs/method.md §6.5);
- ``summary.json``: counts, thresholds, the scorer, inputs (with SHA-256), pool degrees, Table 1.
Same inputs and options -> the same files; each file is written atomically after all work is done.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import torch

from argent.cleaning.clean import REASONS, KeepRule, score_table
from argent.cleaning.config import CleanSection
from argent.cleaning.pool import degree_table, negative_pool
from argent.cleaning.scorer_base import EmbeddingCache, Scorer, similarity_chunked
from argent.cleaning.scorers import make_scorer, make_verifier
from argent.cleaning.table1 import build_pool, false_negative_table, to_markdown
from argent.data.formats.hierarcaps import HierarCapsSample, read_header_raw, read_hierarcaps_records
from argent.data.policy import BadDataError, BadDataPolicy, mark_partial
from argent.io import atomic_write_text, file_sha256
from argent.runs import CleanFolder

log = logging.getLogger(__name__)
FLOAT_PRECISION = 6  # written scores: enough to rank, stable across BLAS rounding in the last bits


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------


def _log(msg: str, t0: float) -> None:
    print(f"[clean {time.perf_counter() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def _csv_text(df: pl.DataFrame) -> str:
    return df.write_csv(float_precision=FLOAT_PRECISION)


def _resolve_expanded(arg: str | Path, csv_path: Path) -> Path | None:
    if str(arg) == "none":
        return None
    if str(arg) == "auto":
        beside = csv_path.parent / "hierarcaps_test_expanded.csv.gz"
        return beside if beside.is_file() else None
    path = Path(arg)
    if not path.is_file():
        raise BadDataError(f"{path}: expanded file not found (--expanded); pass 'none' to use own captions")
    return path


def _round(x: float) -> float:
    return round(float(x), FLOAT_PRECISION)


# ------------------------------------------------------------------------------------------------
# The run
# ------------------------------------------------------------------------------------------------


@dataclass
class CleanJob:
    """One cleaning run: the files the caller names, and the ``clean:`` section's options.

    ``images``: folder of ``COCO_val2014_<id>.jpg`` (None: text-only scoring, images not checked);
    ``expanded``: ``hierarcaps_test_expanded.csv.gz`` for the text scorer's image stand-in, ``auto``
    (the file beside ``csv`` if present) or ``none`` (own caption only).
    """

    csv: Path
    out_dir: Path
    images: Path | None = None
    expanded: str | Path = "auto"
    config: CleanSection = field(default_factory=CleanSection)


def run(job: CleanJob, scorer: Scorer | None = None, table1_scorer: Scorer | None = None) -> dict:
    """The whole cleaning run; ``scorer`` / ``table1_scorer`` objects override the configured specs
    (for library use and tests). Returns the summary written to summary.json."""
    t0 = time.perf_counter()
    c = job.config
    rule = KeepRule(keep=c.keep_count, min_margin=c.min_margin, min_alignment=c.min_alignment)
    torch.manual_seed(c.seed)
    np.random.seed(c.seed)

    policy = BadDataPolicy(c.bad_data)
    records, rejected = read_hierarcaps_records(job.csv, job.images, policy)
    samples: list[HierarCapsSample] = [r.sample for r in records]
    expanded = _resolve_expanded(job.expanded, job.csv)
    _log(f"{len(samples)} samples read, {len(rejected)} bad rows ({policy.report()})", t0)

    if scorer is None:
        scorer = make_scorer(c.scorer, expanded=expanded, image_ids={s.image_id for s in samples},
                             device=c.device, batch_size=c.batch_size)
    cache = EmbeddingCache(scorer)
    images = cache.images(samples)
    _log(f"{len(samples)} images embedded ({scorer.spec})", t0)
    levels = [cache.texts([s.levels[k] for s in samples]) for k in range(4)]
    _log("captions embedded", t0)

    caption_scores = similarity_chunked(scorer, images, levels[3])
    level_scores = np.stack([scorer.paired_similarity(images, levels[k]) for k in range(4)], axis=1)
    verifier_scores = None
    if c.verifier:
        verifier = make_verifier(c.verifier, device=c.device)
        verifier_scores = verifier.score_pairs(samples, [s.levels[3] for s in samples])
    ids = [s.id for s in samples]
    rows = [r.row for r in records]
    table = score_table(ids, rows, [s.image_id for s in samples], level_scores, caption_scores, rule,
                        verifier_scores, [scorer.image_proxy(s) for s in samples])
    kept = table.filter(pl.col("kept"))
    _log(f"kept {kept.height} of {len(samples)}", t0)

    full_table = pl.concat([table, _bad_rows(rejected)], how="diagonal_relaxed").sort("row")

    kept_rows = set(kept["row"].to_list())
    clean_csv = read_header_raw(job.csv) + "".join(
        r.raw if r.raw.endswith(("\n", "\r")) else r.raw + "\n" for r in records if r.row in kept_rows)

    degrees = degree_table(ids, rows, [s.levels[3] for s in samples], caption_scores, c.degree_k)
    pool = negative_pool(degrees, c.pool_size)
    _log(f"pool of {pool.height} captions, degree {pool['degree'].min()}..{pool['degree'].max()}", t0)

    table1 = None
    if c.table1:
        table1 = _table1(c, samples, scorer, cache, images, expanded, table1_scorer)
        _log("table 1 done", t0)

    table1_spec = table1_scorer.spec if table1_scorer is not None else (c.table1_scorer or scorer.spec)
    summary = _summary(job, rule, scorer, expanded, policy, records, rejected, table, degrees, pool, table1)
    summary["table1_scorer"] = table1_spec if table1 is not None else None
    mark_partial(summary, policy, f"clean {job.csv}", log)  # fewer rows than the CSV holds (skip mode)
    _write(CleanFolder(job.out_dir), clean_csv, {"scores": full_table, "degrees": degrees, "negative_pool": pool},
           table1, f"Table 1 analysis: {summary['table1_scorer']} (neighbours: {scorer.spec}), {job.csv.name}", summary)
    _log(f"wrote {job.out_dir}", t0)
    return summary


def _bad_rows(rejected: list) -> pl.DataFrame:
    """The rows the bad-data policy dropped, as rows of the scores table (reason ``bad_data:<reason>``)."""
    return pl.DataFrame({"id": [r.id for r in rejected], "row": [r.row for r in rejected],
                         "reason": [f"bad_data:{r.reason}" for r in rejected], "detail": [r.detail for r in rejected]},
                        schema={"id": pl.String, "row": pl.Int64, "reason": pl.String, "detail": pl.String})


def _write(out: CleanFolder, clean_csv: str, tables: dict[str, pl.DataFrame], table1: pl.DataFrame | None,
           table1_title: str, summary: dict) -> None:
    """Every output of the cleaning, the summary last."""
    atomic_write_text(out.clean_csv, clean_csv)
    atomic_write_text(out.scores, _csv_text(tables["scores"]))
    atomic_write_text(out.degrees, _csv_text(tables["degrees"]))
    atomic_write_text(out.negative_pool, _csv_text(tables["negative_pool"]))
    if table1 is not None:
        atomic_write_text(out.table1_csv, _csv_text(table1))
        atomic_write_text(out.table1_md, to_markdown(table1, table1_title))
    atomic_write_text(out.summary, json.dumps(summary, indent=2, sort_keys=True) + "\n")


def _table1(c: CleanSection, samples, scorer: Scorer, cache: EmbeddingCache, images: np.ndarray, expanded,
            model: Scorer | None = None) -> pl.DataFrame:
    if model is not None or (c.table1_scorer and c.table1_scorer != c.scorer):
        model = model or make_scorer(c.table1_scorer, expanded=expanded, image_ids={s.image_id for s in samples},
                                     device=c.device, batch_size=c.batch_size)
        model_cache = EmbeddingCache(model)
        model_images = model_cache.images(samples)
    else:
        model, model_cache, model_images = scorer, cache, images
    texts, chain_ids = build_pool([s.levels for s in samples])
    text_emb = model_cache.texts(texts)
    return false_negative_table(
        similarity_chunked(model, model_images, text_emb),
        model.text_radius(text_emb),
        chain_ids,
        [s.image_id for s in samples],
        similarity_chunked(scorer, images, images),
        ks=tuple(c.table1_ks),
        steps=c.table1_steps,
    )


def _summary(job: CleanJob, rule, scorer, expanded, policy, records, rejected, table, degrees, pool, table1) -> dict:
    kept = table.filter(pl.col("kept"))
    reasons = {r: int((table["reason"] == r).sum()) for r in REASONS}
    for r in rejected:
        key = f"bad_data:{r.reason}"
        reasons[key] = reasons.get(key, 0) + 1
    inputs = {"csv": {"path": str(job.csv), "sha256": file_sha256(job.csv)}}
    if expanded is not None:
        inputs["expanded"] = {"path": str(expanded), "sha256": file_sha256(expanded)}
    if job.images is not None:
        inputs["images"] = {"path": str(job.images)}
    summary = {
        "inputs": inputs,
        "scorer": scorer.describe(),
        "verifier": job.config.verifier or None,
        "keep_rule": "eligible = margin > min_margin (mutual top-1 at 0) and alignment >= min_alignment; "
                     "rank eligible by alignment (desc, ties by row); keep the first `keep`",
        "seed": job.config.seed,
        "bad_data": {"mode": policy.mode, "counts": dict(sorted(policy.counts.items())),
                     "rows": [{"row": r.row, "id": r.id, "reason": r.reason, "detail": r.detail} for r in rejected]},
        "counts": {
            "rows": len(records) + len(rejected),
            "samples": len(records),
            "mutual_top1": int(table["mutual_top1"].sum()),
            "kept": kept.height,
            "removed": table.height - kept.height,
            "shortfall": max(0, (rule.keep or 0) - kept.height) if rule.keep is not None else 0,
            "reasons": reasons,
        },
        "thresholds": {
            "keep": rule.keep,
            "min_margin": rule.min_margin,
            "min_alignment": rule.min_alignment,
            "alignment_of_last_kept": _round(kept["alignment"].min()) if kept.height else None,
            "smallest_kept_margin": _round(kept["margin"].min()) if kept.height else None,
        },
        "pool": {
            "size": pool.height,
            "degree_k": job.config.degree_k,
            "candidates": degrees.height,
            "pool_degree_min": int(pool["degree"].min()) if pool.height else None,
            "pool_degree_max": int(pool["degree"].max()) if pool.height else None,
            "all_degree_min": int(degrees["degree"].min()),
            "all_degree_median": float(degrees["degree"].median()),
            "all_degree_max": int(degrees["degree"].max()),
            "pool_from_kept_samples": int(pool["id"].is_in(kept["id"].to_list()).sum()),
        },
        "table1": None if table1 is None else [{k: (_round(v) if isinstance(v, float) else v) for k, v in r.items()}
                                              for r in table1.iter_rows(named=True)],
    }
    return summary
