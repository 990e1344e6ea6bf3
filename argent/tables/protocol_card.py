"""What a claims row needs besides its test, measured on both arms, and the label it leads to.

A verdict is a statistical and a scientific claim (docs/statistics.md, "What a verdict needs"). Before
a row says *reproduced* or *contradicted*, three things are checked, each declared in the claims file
before the run (argent/tablespec/declarations.py) and measured here on both arms over the row's
paired seeds:

- **The metric can rank** (the row's *protocol card*): for a rank metric whose score can tie (PEP's
  clamped p_Ent), the share of the comparisons it averages that are tied (``tied_share`` of the
  evaluation); for a bounded metric, each arm's distance to its best value (top-1 to 100 %, TIE to 0
  edges). When ties exceed the declared share on both arms, or both arms lie within the role's δ of
  the best value, the metric is **degenerate** on the pair: no directional verdict.
- **The mechanism's premise is present**: a claim may declare the measured quantity its mechanism needs
  (the share of parent embeddings inside the cone-collapse radius, ``diag/collapse/text``). Where it is
  under its threshold on both arms the claim's rows are **premise absent**: not a test of the mechanism.
- **The ranking does not change the sign**: a role with a declared sensitivity role (PEP's clamped AUC:
  the unclamped ranking by −φ) gets a second, exploratory row; a decided row whose sensitivity row has
  the other sign is **protocol-sensitive**, never *reproduced* or *contradicted*.

The labels replace the directional verdict in ``verdict``; what the test alone decided stays in
``test_verdict``, and the row keeps its family and its p (a label withholds a conclusion, it never
adds one, so the family-wise error of the other rows is unchanged). Precedence: premise absent, then
metric degenerate, then protocol-sensitive.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import polars as pl

from argent.protocols.kinds import EDGES, FRACTION
from argent.protocols.registry import metric_kind
from argent.tables.collect import values_by_seed
from argent.tablespec.claims import Claim, ClaimsSpec
from argent.tablespec.declarations import Degenerate, Premise

PREMISE_ABSENT, DEGENERATE, PROTOCOL_SENSITIVE = "premise absent", "metric degenerate", "protocol-sensitive"
DIRECTIONAL = ("reproduced", "contradicted", "differs")
# The tie share an evaluation writes beside a rank metric whose score can tie: (protocol, metric) -> key.
TIE_SHARE = {"pep": ((re.compile(r"(auc|ap)"), "tied_share"), (re.compile(r"(?:auc|ap)_L(\d+)"), r"tied_share_L\1"))}
INSIDE_LEVELS = "inside_share_L{}"   # PEP: share of level-k positives inside the half-space φ < π/2


def tie_share_key(protocol: str | None, metric: str) -> str | None:
    """The evaluation key of the share of tied comparisons behind ``metric``, or None (no ties to count)."""
    for pattern, key in TIE_SHARE.get(protocol or "", ()):
        match = pattern.fullmatch(metric)
        if match:
            return match.expand(key)
    return None


def best_value(protocol: str | None, metric: str, lower_is_better: bool) -> float | None:
    """The metric's best attainable value in raw units (1 for a fraction, 0 edges for TIE/LCA), or None."""
    kind = metric_kind(protocol, metric)
    if kind == FRACTION and not lower_is_better:
        return 1.0
    if kind == EDGES and lower_is_better:
        return 0.0
    return None


def _mean(by_seed: dict[int, float | None], seeds: list[int]) -> float | None:
    values = [by_seed[k] for k in seeds if by_seed.get(k) is not None]
    return float(np.mean(values)) if values else None


def measure_card(row: dict[str, Any], values: dict[str, dict[int, float | None]], long: pl.DataFrame,
                 protocol: str | None, scale: float) -> dict[str, Any]:
    """The row's protocol card: per arm (mean over its paired seeds) the tie share behind its metric, the
    PEP positives' share inside the half-space per level (%), and the distance to the metric's best
    value (in the row's printed units: ``scale``). ``values``: {"a": A's, "b": B's {seed: value}}."""
    seeds = [int(k) for k in row["seeds"].split()] if row["seeds"] else []
    card: dict[str, Any] = {}
    if not seeds or row["benchmark"] is None:
        return card
    bench, metric, size = row["benchmark"], row["metric"], row["size"]
    tie_key = tie_share_key(protocol, metric)
    best = best_value(protocol, metric, bool(row["lower_is_better"]))
    for side, variant in (("a", row["variant_a"]), ("b", row["variant_b"])):
        if tie_key is not None:
            card[f"tied_{side}"] = _mean(values_by_seed(long, variant, size, bench, tie_key), seeds)
            inside = [_mean(values_by_seed(long, variant, size, bench, INSIDE_LEVELS.format(k)), seeds) for k in range(1, 5)]
            if any(v is not None for v in inside):
                card[f"inside_{side}"] = "/".join("–" if v is None else f"{100 * v:.0f}" for v in inside)
        mean = _mean(values[side], seeds)
        if best is not None and mean is not None:
            card[f"best_gap_{side}"] = abs(best - mean) * scale
    return card


def degenerate_reason(card: dict[str, Any], rule: Degenerate | None, delta: float) -> str:
    """Why the metric cannot rank on both arms ("" when it can): ties over the declared share, or both
    arms within δ of the best value (then no difference of δ or more can exist)."""
    tied = [card.get("tied_a"), card.get("tied_b")]
    if rule is not None and None not in tied and min(tied) > rule.tied_above:
        return (f"{100 * tied[0]:.1f} % and {100 * tied[1]:.1f} % of the comparisons the metric averages are tied "
                f"(A, B), over the declared {100 * rule.tied_above:.0f} % on both arms: it counts pairs that leave "
                "the tie, it does not rank them")
    gaps = [card.get("best_gap_a"), card.get("best_gap_b")]
    if None not in gaps and max(gaps) < delta:
        return (f"both arms lie within δ = {delta:g} of the metric's best value ({gaps[0]:.2f}, {gaps[1]:.2f}): "
                "no difference of δ or more can exist")
    return ""


def measure_premise(premise: Premise, claim: Claim, size: str, diag: pl.DataFrame) -> dict[str, float | None]:
    """{arm: mean over seeds of diag/<quantity> at the end of training} (None where not logged)."""
    out: dict[str, float | None] = {}
    for side, variant in (("a", claim.a), ("b", claim.b)):
        part = diag.filter((pl.col("variant") == variant) & (pl.col("size") == size) & (pl.col("key") == premise.quantity))
        values = part["value"].to_list()
        out[side] = float(np.mean(values)) if values else None
    return out


def premise_text(premise: Premise, measured: dict[str, float | None]) -> str:
    """``collapse: collapse/text A 0.000, B 0.031 (present at ≥ 0.5)``; the source is quoted in the header."""
    shown = ", ".join(f"{side.upper()} {'not logged' if v is None else f'{v:.3f}'}" for side, v in measured.items())
    return f"{premise.name}: {premise.quantity} {shown} (present at ≥ {premise.above:g})"


def card_text(row: dict[str, Any]) -> str:
    """The card in a few words for the markdown table (A / B)."""
    parts = []
    if row.get("tied_a") is not None and row.get("tied_b") is not None:
        parts.append(f"tied {100 * row['tied_a']:.1f} / {100 * row['tied_b']:.1f} %")
    if row.get("inside_a") or row.get("inside_b"):
        parts.append(f"positives inside π/2 by level {row.get('inside_a') or '–'} / {row.get('inside_b') or '–'} %")
    if row.get("best_gap_a") is not None and row.get("best_gap_b") is not None:
        parts.append(f"to best {row['best_gap_a']:.2f} / {row['best_gap_b']:.2f}")
    if row.get("premise"):
        parts.append(f"premise: {row['premise']}")
    return "; ".join(parts)


def _sign(x: float | None) -> int:
    return 0 if x is None or x == 0 else (1 if x > 0 else -1)


def apply_labels(rows: list[dict[str, Any]], claims: ClaimsSpec) -> None:
    """Keep the test's verdict in ``test_verdict`` and set ``verdict`` to the label the checks call for."""
    sensitivity_rows = {(r["id"], r["size"], r["sensitivity_of"], r["benchmark"]): r
                        for r in rows if r.get("sensitivity_of")}
    for r in rows:
        verdict = r["verdict"]
        r["test_verdict"] = verdict
        if not r["family"] or r["family"] == "out of domain" or r["p"] is None:
            continue
        if r.get("premise_absent"):
            r["verdict"] = PREMISE_ABSENT
            continue
        reason = r.get("degenerate_reason", "")
        if reason:
            r["verdict"] = DEGENERATE
            r["note"] = "; ".join(filter(None, [r["note"], f"metric degenerate: {reason}"]))
            continue
        check = None if r.get("sensitivity_of") else sensitivity_rows.get((r["id"], r["size"], r["role"], r["benchmark"]))
        if check is None or check["diff_mean"] is None:
            continue
        if _sign(check["diff_mean"]) != _sign(r["diff_mean"]):
            text = (f"its sensitivity row ({check['metric']}) has the other sign: Δ {check['diff_mean']:+.2f}"
                    + ("" if check["ci_low"] is None else f" [{check['ci_low']:+.2f}, {check['ci_high']:+.2f}]"))
            if verdict in DIRECTIONAL:
                r["verdict"] = PROTOCOL_SENSITIVE
                text = f"protocol-sensitive ({verdict} on its own test): {text}"
            r["note"] = "; ".join(filter(None, [r["note"], text]))
