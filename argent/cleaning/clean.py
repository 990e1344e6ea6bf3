"""Per-sample alignment and ambiguity scores, and the keep rule (docs/method.md §6.4, argent defaults).

With S[i, j] = score(image_i, level-4 caption_j) (N × N):
- alignment_i = S[i, i] (or a verifier's match score for that pair when one is configured);
- rival caption of image i: the best other sample's caption, max_{j≠i} S[i, j] (image → text);
- rival image of caption i: the best other sample's image, max_{j≠i} S[j, i] (text → image);
- margin_i = S[i, i] − max(both rivals). margin > 0 ⟺ caption i is the top-1 caption of image i
  and image i the top-1 image of caption i (the mutual-top-1 rule); a tie counts as ambiguous.

Keep rule: eligible = margin > min_margin (default 0: exactly mutual top-1) and alignment ≥
min_alignment (default: none); rank the eligible by alignment (desc; ties by row), keep the first
``keep`` (default 522; None keeps every eligible sample).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

REASONS = {
    "kept": "kept",
    "ambiguous_caption": "another sample's caption scores at least as high for this image",
    "ambiguous_image": "another sample's image scores at least as high for this caption",
    "low_margin": "mutual top-1, but the margin over the best rival is not above clean.min_margin",
    "low_alignment": "alignment below clean.min_alignment",
    "below_keep": "unambiguous, but ranked below the clean.keep best by alignment",
}


@dataclass(frozen=True)
class KeepRule:
    keep: int | None = 522
    min_margin: float = 0.0
    min_alignment: float | None = None

    def __post_init__(self) -> None:
        if self.keep is not None and self.keep < 0:
            raise ValueError(f"keep must be >= 0 or None, got {self.keep}")


def rival_scores(scores: np.ndarray) -> dict[str, np.ndarray]:
    """Own score, best other caption and best other image per sample from S (N, N) -> dict of (N,).

    argmax picks the lowest index among equal rivals, so reported rivals are deterministic.
    """
    n = scores.shape[0]
    if scores.shape != (n, n):
        raise ValueError(f"scores must be square (N, N), got {scores.shape}")
    own = np.diagonal(scores).copy()
    off = scores.astype(np.float64, copy=True)
    np.fill_diagonal(off, -np.inf)  # a sample is never its own rival
    cap_j = off.argmax(axis=1) if n > 1 else np.zeros(n, dtype=int)
    img_j = off.argmax(axis=0) if n > 1 else np.zeros(n, dtype=int)
    best_cap = off[np.arange(n), cap_j] if n > 1 else np.full(n, -np.inf)
    best_img = off[img_j, np.arange(n)] if n > 1 else np.full(n, -np.inf)
    return {"own": own, "rival_caption": cap_j, "rival_caption_score": best_cap,
            "rival_image": img_j, "rival_image_score": best_img,
            "margin": own - np.maximum(best_cap, best_img)}


def select(alignment: np.ndarray, margin: np.ndarray, caption_rival_wins: np.ndarray, rule: KeepRule
           ) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Apply the keep rule. All inputs (N,), in row order; ``caption_rival_wins``: the caption rival
    scores ≥ the image rival (decides which ambiguity is named).

    Returns kept (N,) bool, rank (N,) int (1-based among the eligible, 0 if not eligible), reasons.
    """
    n = len(alignment)
    eligible = margin > rule.min_margin
    if rule.min_alignment is not None:
        eligible &= alignment >= rule.min_alignment
    order = sorted(np.flatnonzero(eligible), key=lambda i: (-alignment[i], i))
    rank = np.zeros(n, dtype=np.int64)
    rank[order] = np.arange(1, len(order) + 1)
    kept = eligible & ((rank <= rule.keep) if rule.keep is not None else True)
    reasons = []
    for i in range(n):
        if kept[i]:
            reasons.append("kept")
        elif eligible[i]:
            reasons.append("below_keep")
        elif margin[i] <= rule.min_margin:
            if margin[i] <= 0:
                reasons.append("ambiguous_caption" if caption_rival_wins[i] else "ambiguous_image")
            else:
                reasons.append("low_margin")
        else:
            reasons.append("low_alignment")
    return kept, rank, reasons


def score_table(
    ids: list[str],
    rows: list[int],
    image_ids: list[int],
    level_scores: np.ndarray,
    caption_scores: np.ndarray,
    rule: KeepRule,
    verifier_scores: np.ndarray | None = None,
    proxies: list[str] | None = None,
) -> pl.DataFrame:
    """The per-sample table. level_scores (N, 4): image i vs its own level-k caption;
    caption_scores (N, N): S above. Alignment = the verifier score when given, else S[i, i].
    """
    r = rival_scores(caption_scores)
    alignment = verifier_scores if verifier_scores is not None else r["own"]
    caption_wins = r["rival_caption_score"] >= r["rival_image_score"]
    kept, rank, reasons = select(alignment, r["margin"], caption_wins, rule)
    details = []
    for i, reason in enumerate(reasons):
        if reason.startswith("ambiguous"):
            j = r["rival_caption"][i] if reason == "ambiguous_caption" else r["rival_image"][i]
            what = "caption" if reason == "ambiguous_caption" else "image"
            details.append(f"{REASONS[reason]}: {what} of id {ids[j]} (margin {r['margin'][i]:+.4f})")
        else:
            details.append(REASONS[reason])
    n = len(ids)
    return pl.DataFrame({
        "id": ids,
        "row": rows,
        "image_id": image_ids,
        "image_proxy": proxies or ["image"] * n,
        "alignment": alignment.astype(np.float64),
        **{f"score_l{k + 1}": level_scores[:, k].astype(np.float64) for k in range(level_scores.shape[1])},
        "rival_caption_id": [ids[j] for j in r["rival_caption"]] if n > 1 else [None] * n,
        "rival_caption_score": r["rival_caption_score"],
        "rival_image_id": [ids[j] for j in r["rival_image"]] if n > 1 else [None] * n,
        "rival_image_score": r["rival_image_score"],
        "margin": r["margin"],
        "mutual_top1": r["margin"] > 0,
        "rank": rank,
        "kept": kept,
        "reason": reasons,
        "detail": details,
    }, schema_overrides={"rival_caption_id": pl.String, "rival_image_id": pl.String})
