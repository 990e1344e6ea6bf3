"""``argent clean``: clean HierarCaps, build the PEP negative pool, and run the Table 1 analysis.

Writes into ``--out-dir``:
- ``hierarcaps_clean.csv``: the kept rows, verbatim, in the input's format and order;
- ``clean_scores.csv``: one row per input row: scores, rivals, kept, reason (bad rows included,
  reason ``bad_data:<why>``);
- ``caption_degrees.csv`` / ``negative_pool.csv``: retrieval degree of every candidate caption / the pool
  (caption, id, degree);
- ``table1.csv`` / ``table1.md``: the false-negative analysis (method.md §8, ARGENT Table 1);
- ``summary.json``: counts, thresholds, the scorer, inputs (with SHA-256), pool degrees, Table 1.
Same inputs and options -> the same files; each file is written atomically after all work is done.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

from argent.cleaning.clean import REASONS, KeepRule, score_table
from argent.cleaning.pool import degree_table, negative_pool
from argent.cleaning.scorers import (
    SCORER_SPECS,
    EmbeddingCache,
    Scorer,
    ScorerUnavailable,
    make_scorer,
    make_verifier,
    similarity_chunked,
)
from argent.cleaning.table1 import build_pool, false_negative_table, to_markdown
from argent.data.formats.hierarcaps import HierarCapsSample, read_header_raw, read_hierarcaps_records
from argent.data.policy import BadDataError, BadDataPolicy
from argent.io import atomic_write_text

FLOAT_PRECISION = 6  # written scores: enough to rank, stable across BLAS rounding in the last bits


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="argent clean", description=__doc__.split("\n\n")[0].replace("``", ""),
                                epilog=__doc__.split("\n\n", 1)[1].replace("``", ""),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--csv", required=True, type=Path, help="hierarcaps_test.csv (id, captions, image_url)")
    p.add_argument("--images", type=Path, default=None,
                   help="folder of COCO_val2014_<id>.jpg; rows whose image is missing are bad rows "
                        "(omit only for text-only scoring: images are then not checked)")
    p.add_argument("--expanded", default="auto",
                   help="hierarcaps_test_expanded.csv.gz for the text scorer's image stand-in; 'auto' = the "
                        "file beside --csv if present, 'none' = own caption only")
    p.add_argument("--scorer", default="text", help=f"reference scorer: {SCORER_SPECS} (default: text)")
    p.add_argument("--verifier", default=None, help="optional pair verifier for the alignment score: hf:<BLIP-ITM folder>")
    p.add_argument("--keep", default="522", help="keep at most this many unambiguous samples, best alignment "
                                                  "first; 'all' = every sample passing the thresholds (default 522)")
    p.add_argument("--min-margin", type=float, default=0.0,
                   help="unambiguous iff own score − best rival > this (default 0: mutual top-1)")
    p.add_argument("--min-alignment", type=float, default=None, help="also require alignment ≥ this (default: none)")
    p.add_argument("--pool-size", type=int, default=100, help="negative pool size (default 100)")
    p.add_argument("--degree-k", type=int, default=10, help="top-k captions per image for the degree (default 10)")
    p.add_argument("--table1-ks", default="0,5,10", help="neighbour counts for Table 1 (default 0,5,10)")
    p.add_argument("--table1-steps", type=int, default=50, help="radius thresholds of the protocol (default 50)")
    p.add_argument("--table1-scorer", default=None, help="model evaluated in Table 1 (default: --scorer); "
                                                         "neighbours always come from --scorer")
    p.add_argument("--no-table1", action="store_true", help="skip the Table 1 analysis")
    p.add_argument("--out-dir", required=True, type=Path)
    p.add_argument("--seed", type=int, default=0, help="torch/numpy seed (recorded; scoring is deterministic)")
    p.add_argument("--bad-data", choices=("skip", "strict"), default="skip",
                   help="skip: count bad rows and go on; strict: stop at the first, naming file and row")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--device", default="cpu")
    return p


# ------------------------------------------------------------------------------------------------
# Helpers
# ------------------------------------------------------------------------------------------------


def _log(msg: str, t0: float) -> None:
    print(f"[clean {time.perf_counter() - t0:6.1f}s] {msg}", file=sys.stderr, flush=True)


def _atomic_write(path: Path, text: str) -> None:
    atomic_write_text(path, text)


def _csv_text(df: pl.DataFrame) -> str:
    return df.write_csv(float_precision=FLOAT_PRECISION)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _parse_keep(text: str) -> int | None:
    if text.strip().lower() == "all":
        return None
    try:
        value = int(text)
    except ValueError:
        raise SystemExit(f"argent clean: --keep must be an integer or 'all', got {text!r}") from None
    if value < 0:
        raise SystemExit(f"argent clean: --keep must be >= 0, got {value}")
    return value


def _resolve_expanded(arg: str, csv_path: Path) -> Path | None:
    if arg == "none":
        return None
    if arg == "auto":
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


def run(args: argparse.Namespace, scorer: Scorer | None = None, table1_scorer: Scorer | None = None) -> dict:
    """The whole ``argent clean`` run; ``scorer`` / ``table1_scorer`` objects override the specs
    (for library use and tests). Returns the summary written to summary.json."""
    t0 = time.perf_counter()
    keep = _parse_keep(args.keep)
    ks = tuple(int(k) for k in args.table1_ks.split(",") if k.strip())
    if args.pool_size < 0 or args.degree_k < 1 or any(k < 0 for k in ks) or args.table1_steps < 2:
        raise SystemExit("argent clean: need --pool-size >= 0, --degree-k >= 1, --table1-ks >= 0, --table1-steps >= 2")
    rule = KeepRule(keep=keep, min_margin=args.min_margin, min_alignment=args.min_alignment)
    import torch

    torch.manual_seed(args.seed)
    np.random.seed(args.seed)

    policy = BadDataPolicy(args.bad_data)
    records, rejected = read_hierarcaps_records(args.csv, args.images, policy)
    samples: list[HierarCapsSample] = [r.sample for r in records]
    expanded = _resolve_expanded(args.expanded, args.csv)
    _log(f"{len(samples)} samples read, {len(rejected)} bad rows ({policy.report()})", t0)

    if scorer is None:
        scorer = make_scorer(args.scorer, expanded=expanded, image_ids={s.image_id for s in samples},
                             device=args.device, batch_size=args.batch_size)
    cache = EmbeddingCache(scorer)
    images = cache.images(samples)
    _log(f"{len(samples)} images embedded ({scorer.spec})", t0)
    levels = [cache.texts([s.levels[k] for s in samples]) for k in range(4)]
    _log("captions embedded", t0)

    caption_scores = similarity_chunked(scorer, images, levels[3])
    level_scores = np.stack([scorer.paired_similarity(images, levels[k]) for k in range(4)], axis=1)
    verifier_scores = None
    if args.verifier:
        verifier = make_verifier(args.verifier, device=args.device)
        verifier_scores = verifier.score_pairs(samples, [s.levels[3] for s in samples])
    ids = [s.id for s in samples]
    rows = [r.row for r in records]
    table = score_table(ids, rows, [s.image_id for s in samples], level_scores, caption_scores, rule,
                        verifier_scores, [scorer.image_proxy(s) for s in samples])
    kept = table.filter(pl.col("kept"))
    _log(f"kept {kept.height} of {len(samples)}", t0)

    bad = pl.DataFrame({"id": [r.id for r in rejected], "row": [r.row for r in rejected],
                        "reason": [f"bad_data:{r.reason}" for r in rejected], "detail": [r.detail for r in rejected]},
                       schema={"id": pl.String, "row": pl.Int64, "reason": pl.String, "detail": pl.String})
    full_table = pl.concat([table, bad], how="diagonal_relaxed").sort("row")

    kept_rows = set(kept["row"].to_list())
    clean_csv = read_header_raw(args.csv) + "".join(
        r.raw if r.raw.endswith(("\n", "\r")) else r.raw + "\n" for r in records if r.row in kept_rows)

    degrees = degree_table(ids, rows, [s.levels[3] for s in samples], caption_scores, args.degree_k)
    pool = negative_pool(degrees, args.pool_size)
    _log(f"pool of {pool.height} captions, degree {pool['degree'].min()}..{pool['degree'].max()}", t0)

    table1 = None
    if not args.no_table1:
        table1 = _table1(args, samples, scorer, cache, images, expanded, ks, table1_scorer)
        _log("table 1 done", t0)

    table1_spec = table1_scorer.spec if table1_scorer is not None else (args.table1_scorer or scorer.spec)
    summary = _summary(args, rule, scorer, expanded, policy, records, rejected, table, degrees, pool, table1)
    summary["table1_scorer"] = table1_spec if table1 is not None else None
    out = args.out_dir
    _atomic_write(out / "hierarcaps_clean.csv", clean_csv)
    _atomic_write(out / "clean_scores.csv", _csv_text(full_table))
    _atomic_write(out / "caption_degrees.csv", _csv_text(degrees))
    _atomic_write(out / "negative_pool.csv", _csv_text(pool))
    if table1 is not None:
        _atomic_write(out / "table1.csv", _csv_text(table1))
        _atomic_write(out / "table1.md", to_markdown(table1, f"Table 1 analysis: {summary['table1_scorer']} "
                                                            f"(neighbours: {scorer.spec}), {args.csv.name}"))
    _atomic_write(out / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    _log(f"wrote {out}", t0)
    return summary


def _table1(args, samples, scorer: Scorer, cache: EmbeddingCache, images: np.ndarray, expanded, ks,
            model: Scorer | None = None) -> pl.DataFrame:
    if model is not None or (args.table1_scorer and args.table1_scorer != args.scorer):
        model = model or make_scorer(args.table1_scorer, expanded=expanded, image_ids={s.image_id for s in samples},
                            device=args.device, batch_size=args.batch_size)
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
        ks=ks,
        steps=args.table1_steps,
    )


def _summary(args, rule, scorer, expanded, policy, records, rejected, table, degrees, pool, table1) -> dict:
    kept = table.filter(pl.col("kept"))
    reasons = {r: int((table["reason"] == r).sum()) for r in REASONS}
    for r in rejected:
        key = f"bad_data:{r.reason}"
        reasons[key] = reasons.get(key, 0) + 1
    inputs = {"csv": {"path": str(args.csv), "sha256": _sha256(args.csv)}}
    if expanded is not None:
        inputs["expanded"] = {"path": str(expanded), "sha256": _sha256(expanded)}
    if args.images is not None:
        inputs["images"] = {"path": str(args.images)}
    summary = {
        "inputs": inputs,
        "scorer": scorer.describe(),
        "verifier": args.verifier,
        "keep_rule": "eligible = margin > min_margin (mutual top-1 at 0) and alignment >= min_alignment; "
                     "rank eligible by alignment (desc, ties by row); keep the first `keep`",
        "seed": args.seed,
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
            "degree_k": args.degree_k,
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


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    try:
        summary = run(args)
    except (BadDataError, ScorerUnavailable) as err:
        print(f"argent clean: error: {err}", file=sys.stderr)
        return 2
    c, t, p = summary["counts"], summary["thresholds"], summary["pool"]
    print(f"kept {c['kept']} of {c['samples']} samples ({c['rows']} rows; reasons {c['reasons']}); "
          f"last kept alignment {t['alignment_of_last_kept']}; pool {p['size']} captions, degree "
          f"{p['pool_degree_min']}..{p['pool_degree_max']} (all {p['all_degree_min']}..{p['all_degree_max']}); "
          f"outputs in {args.out_dir}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
