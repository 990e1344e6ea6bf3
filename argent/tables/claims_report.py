"""claims.md: the claims table in words a reader can check — the setting, the families, the
correction and the variance each interval covers, then the rows and the primary rows' power."""

from __future__ import annotations

from typing import Any

from argent.tables.claims import EXPLORATORY, OUT_OF_DOMAIN, POWER_TARGET, PRIMARY, SAFEGUARD_CONFIDENCE
from argent.tables.inference import SATTERTHWAITE_BELOW
from argent.tables.paper import PARTIAL_MARK
from argent.tablespec.claims import ClaimsSpec
from argent.tablespec.declarations import SizeCalibration

# What the intervals are known to hold under beyond normal seeds (docs/statistics.md, "The size on the
# recipe's own seeds"): the test simulated on the recipe's measured seed law (bench/seed_law.py).
SEED_LAW_SENTENCE = ("On the recipe's own seed law (the Table 2 families' paired seeds of config/headline.yaml, "
                     "bench/data/seed_law.npz) the primary test's size was simulated (bench/seed_law.py; "
                     "docs/statistics.md, \"The size on the recipe's own seeds\")")


def seed_law_sentence(calibration: SizeCalibration | None) -> str:
    """The header's statement of what the size was measured to be on the recipe's seeds, and the calibration
    the claims file declares for it (none: the levels are Holm's own)."""
    if calibration is None:
        return f"{SEED_LAW_SENTENCE}; no calibration is declared, so primary rows are decided at Holm's own levels."
    return (f"{SEED_LAW_SENTENCE}: at few paired seeds it can be liberal, so primary rows with fewer than "
            f"{calibration.below_seeds} paired seeds are decided at {calibration.factor:g} × Holm's levels, where it "
            f"was measured to hold ({calibration.evidence}).")


def header_sentences(alpha: float, calibration: SizeCalibration | None = None) -> dict[str, str]:
    """The claims.md header's statements on error control and variance (claims_report.py), read from
    the constants they state, each with the condition it holds under (docs/statistics.md)."""
    return {
        "primary_error": f"the chance of one or more false primary verdicts is at most {alpha:.0%} when each row's "
                         "seed effects are roughly normal (Holm holds whatever the dependence between rows, given "
                         "valid rows); a bad-seed mode, one seed in a few far off, breaks it",
        "variance": "the seeds' term is never truncated and keeps the seeds' K − 1 df unless it is under "
                    f"{SATTERTHWAITE_BELOW:.0%} of the variance, then Satterthwaite's df; the false-positive rate at "
                    "the Holm levels holds in simulation for normal seed effects, not for a bad-seed mode "
                    "(docs/statistics.md)",
        "seed_law": seed_law_sentence(calibration),
        "labels": "A row that passes its test may still print no direction: **premise absent** (the claim's "
                  "declared premise, a measured quantity its mechanism needs, is under its threshold on both arms: "
                  "the row compares the two runs but does not test the mechanism), **metric degenerate** (on both "
                  "arms more of the metric's comparisons are tied than the declared share, or both arms lie within δ "
                  "of the metric's best value), **protocol-sensitive** (a decided row whose declared sensitivity row, "
                  "the same comparison ranked another way, has the other sign). The test's own verdict is shown "
                  "beside the label and in test_verdict; a label never adds a decision, so the families' error "
                  "control is unchanged. **differs**: a decided two-sided control on which the source states no "
                  "direction.",
    }


def _num(v: float | None, signed: bool = False, digits: int = 2) -> str:
    return "–" if v is None else (f"{v:+.{digits}f}" if signed else f"{v:.{digits}f}")


def _p(v: float | None) -> str:
    return "–" if v is None else (f"{v:.1e}" if v < 1e-3 else f"{v:.3f}")


def _ours(r: dict[str, Any]) -> str:
    if r["diff_mean"] is None:
        return "–"
    text = _num(r["diff_mean"], True)
    if r["ci_low"] is not None:
        text += f" [{_num(r['ci_low'], True)}, {_num(r['ci_high'], True)}]"
    text += f" (n={r['n']}" + (f", {r['n_items']} items" if r["n_items"] else "") + ")"
    return text + (f" {PARTIAL_MARK}" if r["partial"] else "")


def _verdict_text(r: dict[str, Any]) -> str:
    """The label, with what the test alone decided beside a label that withholds it."""
    test = r.get("test_verdict") or ""
    return r["verdict"] if not test or test == r["verdict"] else f"{r['verdict']} (test: {test})"


def _count(rows: list[dict[str, Any]], family: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in rows:
        if r["family"] == family:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    return counts


def _counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none"


def verdict_summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    """Verdict counts per family (primary, exploratory, out of domain, untested)."""
    return {family or "untested": _count(rows, family) for family in (PRIMARY, EXPLORATORY, OUT_OF_DOMAIN, "")}


def claims_markdown(rows: list[dict[str, Any]], claims: ClaimsSpec, setting: str) -> str:
    """The claims table: what its families, tests, variances and cards mean, its rows, and the power of its
    primary rows."""
    tested_primary = sum(1 for r in rows if r["family"] == PRIMARY and r["p"] is not None)
    lines = _explained(rows, claims, setting, tested_primary) + _row_lines(rows)
    lines += _power_lines([r for r in rows if r["family"] == PRIMARY], tested_primary)
    return "\n".join(lines) + "\n"


def _explained(rows: list[dict[str, Any]], claims: ClaimsSpec, setting: str, tested_primary: int) -> list[str]:
    """The lines above the table: the setting, the families, the tests, the variance, the card, the premises,
    the margins, the counts, and the table's head."""
    alpha = claims.alpha
    decided_explor = sum(1 for r in rows if r["family"] == EXPLORATORY and r["verdict"] not in ("inconclusive", ""))
    said = header_sentences(alpha, claims.size_calibration)
    return [
        "# Claims of the papers, tested with paired seeds", "",
        f"**Setting.** {setting} A verdict is about this setting, not about the papers' scale and data.", "",
        f"**Families.** *Primary*: the one row per claim (and size) declared in config/claims.yaml before the run, "
        f"on data the models were trained for; {tested_primary} tested here, verdicts at Holm family-wise "
        f"α = {alpha:g}: {said['primary_error']}. "
        f"*Exploratory*: every other in-domain row; verdicts at Benjamini–Hochberg FDR {alpha:g} (q ≤ {alpha:g}): "
        f"on average at most {alpha:.0%} of the {decided_explor} decided exploratory rows are false. "
        f"*Out of domain*: a benchmark on real photographs under models trained on synthetic scenes: the "
        f"difference is printed, with no test and no verdict.", "",
        "**Tests.** Δ = A − B in the metric's printed units, paired by seed (seed k of A against seed k of B: "
        "same data order and shared initialisation) and, where both runs wrote per-item scores, by test item. "
        "*difference*: two-sided H0 Δ = 0; **reproduced** when rejected with Δ on the source's side, "
        "**contradicted** when rejected on the other side. *equivalence* (a claim the source states as "
        "\"matches\", or whose published |Δ| is below δ): TOST, H0 |Δ| ≥ δ; **equivalent** when rejected. "
        "**inconclusive**: not rejected at the family's level, or n < 2. p: raw; adj. p: Holm-adjusted p "
        "(primary) or BH q (exploratory).", "",
        "**Variance.** *seeds+items*: the interval covers training seeds and test items (crossed random effects; "
        f"{said['variance']}), so it speaks about "
        "new seeds and new test items alike (PEP AUC: new test images against this fixed negative pool); *seeds*: "
        "training seeds only, on this fixed test set (a metric that is no mean over items: AP, Kendall τ). "
        f"{said['seed_law']} "
        f"Intervals are {1 - alpha:.0%} and unadjusted. {PARTIAL_MARK} = fewer paired seeds than configured. "
        "Published Δ: the source's S-size numbers, other data and budget — compare directions, not digits. "
        "↓ = lower is better.", "",
        f"**What a verdict needs besides its test** (declared in the claims file; docs/statistics.md, \"What a "
        f"verdict needs\"). The *card* column measures on both arms (A / B, mean over the paired seeds) what the "
        f"metric needs to rank: the share of the comparisons it averages that are tied (PEP's clamped score "
        f"p = max(1 − 2φ/π, 0) ties every pair beyond φ = π/2 at 0), PEP's positives inside φ < π/2 by caption "
        f"level, and the distance to the metric's best value. {said['labels']}", "",
        *(["**Premises** (config/claims.yaml): " + "; ".join(
            f"*{name}*: {pr.quantity} ≥ {pr.above:g} at the end of training on at least one arm — {pr.source} ({pr.why})"
            for name, pr in claims.premises.items()) + ".", ""] if claims.premises else []),
        "**Margins δ** (config/claims.yaml): " + "; ".join(f"{role} {m.delta:g} ({m.why})" for role, m in claims.margins.items())
        + ".", "",
        f"Primary rows: {_counts_text(_count(rows, PRIMARY))}. Exploratory rows: {_counts_text(_count(rows, EXPLORATORY))}. "
        f"Out of domain: {sum(1 for r in rows if r['family'] == OUT_OF_DOMAIN)} rows. "
        f"Untested (not run, not evaluated, n/a, n = 1): {sum(1 for r in rows if not r['family'])} rows.", "",
        "| id | family | metric | size | A vs B | expected | test | published Δ | ours Δ [CI] | variance | p | adj. p | verdict | card | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]


def _row_lines(rows: list[dict[str, Any]]) -> list[str]:
    """One line per row, the primary rows first."""
    lines = []
    order = {PRIMARY: 0, EXPLORATORY: 1, OUT_OF_DOMAIN: 2, "": 3}
    for r in sorted(rows, key=lambda r: order.get(r["family"], 3)):
        metric = r["role"] if r["benchmark"] is None else f"{r['benchmark']}/{r['metric']}" + ("↓" if r["lower_is_better"] else "")
        pub = "–" if r["published_diff"] is None else \
            f"{_num(r['published_diff'], True)} ({_num(r['published_a'])} vs {_num(r['published_b'])})"
        test = r["test"] + (f" ±{r['margin']:g}" if r["test"] == "equivalence" else "")
        lines.append(f"| {r['id']} | {r['family'] or '–'} | {metric} | {r['size']} | {r['variant_a']} vs {r['variant_b']} | "
                     f"{r['expect']} | {test or '–'} | {pub} | {_ours(r)} | {r['variance'] or '–'} | {_p(r['p'])} | "
                     f"{_p(r['p_adjusted'])} | **{_verdict_text(r)}** | {r['card'] or '–'} | {r['note']} |")
    return lines


def _power_lines(primary: list[dict[str, Any]], tested_primary: int) -> list[str]:
    """The power table of the tested primary rows, with what its columns mean."""
    lines = ["", "## Power of the primary rows", "",
              f"Seeds for {POWER_TARGET:.0%} power: the fewest paired seeds at which the row's test, at the first Holm "
              f"step's level α/{max(tested_primary, 1)} (so at least that power under Holm), detects the planning "
              f"effect (difference rows: the *safeguard* effect, the lower end of this run's {SAFEGUARD_CONFIDENCE:.0%} CI "
              "of |Δ|, Perugini et al. 2014; \"–\" when that interval reaches 0) or declares equivalence when Δ = 0 "
              "(equivalence rows: at δ), with the variance components measured here (found by bisection: power "
              "rises with seeds). *Seeds at δ*: the same at |Δ| = δ, the smallest difference of interest (a "
              "sensitivity column). \"not by seeds\": no number of seeds reaches it — with seeds+items the fixed "
              "test set's item variance alone keeps the interval too wide, so more test items are needed, not more "
              "seeds. Seed SD: the SD of the per-seed differences on the whole test set. Train CPU-h: what the "
              "seeds for power beyond n would cost, at the mean CPU time of A's and B's runs in this run's "
              "`benchmarks/train` records (on this machine; a lower bound, since Snakemake samples a job's CPU time "
              "every 30 s after its first 30).", "",
              "| id | metric | size | test | planning effect | seed SD | n | seeds for 80 % power | train CPU-h for them | "
              "δ | seeds at δ | verdict |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]

    def seeds_text(need: int | None) -> str:
        return "not by seeds" if need is None else f"{need:,}"

    for r in primary:
        if r["p"] is None:
            continue
        planned = r["planning_effect"] is not None
        cost = r["cpu_h_for_power"]
        lines.append(f"| {r['id']} | {r['benchmark']}/{r['metric']} | {r['size']} | {r['test']} | "
                     f"{_num(r['planning_effect'])} | {_num(r['seed_sd'])} | {r['n']} | "
                     f"{seeds_text(r['seeds_for_power']) if planned else '–'} | {'–' if cost is None else f'{cost:,.1f}'} | "
                     f"{r['margin']:g} | {seeds_text(r['seeds_for_delta'])} | {r['verdict']} |")
    return lines
