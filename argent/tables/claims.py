"""The claims table: each claim of the papers, our paired difference, its test and its verdict.

One output row per claim × role × benchmark × size (claims and roles: argent/tablespec/claims.py).
Each row with two paired seeds or more gets an estimate of Δ = A − B (argent/tables/inference.py:
seeds × test items when both runs wrote item vectors, seeds only otherwise), one test, and a family:

- **primary**: the claim's declared role on its first benchmark that is in the training domain —
  one row per claim and size. Verdicts at Holm family-wise α over the primary rows.
- **exploratory**: every other in-domain row. Verdicts at Benjamini–Hochberg FDR α over them.
- **out of domain**: a benchmark on data of another domain than the runs were trained on (real
  photographs under a model trained on synthetic scenes): the difference is printed, no test, no
  verdict, outside both families.

The test is ``difference`` (two-sided H0: Δ = 0; reproduced / contradicted by the sign) or
``equivalence`` (TOST, H0: |Δ| ≥ δ; equivalent), as ``claims_spec.kind_of_test`` decides. A pair
of runs is tested once per metric: two claims resolving to the same two trained runs (a borrowed
run is its lender's) on the same metric stop the build, naming both.

A row is decided on its test; the verdict it prints may then be withheld by what the row needs besides
its test (argent/tables/protocol_card.py): a metric that cannot rank on both arms, a mechanism whose
premise is absent, a sign that changes with the ranking. The test's own verdict stays in ``test_verdict``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl

from argent.config.groups import RunKey
from argent.plan.groups import Plan
from argent.tables.collect import values_by_seed
from argent.tables.inference import (
    Estimate,
    crossed_estimate,
    safeguard_effect,
    seed_estimate,
    seeds_for_power,
)
from argent.tables.multiplicity import benjamini_hochberg, holm
from argent.tables.protocol_card import (
    apply_labels,
    card_text,
    degenerate_reason,
    measure_card,
    measure_premise,
    premise_text,
)
from argent.tablespec.claims import Claim, ClaimMetric, ClaimsSpec, expected_sign, kind_of_test
from argent.tablespec.declarations import MetricSpec

PRIMARY, EXPLORATORY, OUT_OF_DOMAIN = "primary", "exploratory", "out of domain"
POWER_TARGET = 0.8
SAFEGUARD_CONFIDENCE = 0.6   # directional rows plan seeds at the lower end of the pilot's 60 % CI of |Δ|
# A crossed factor a role's item interval holds fixed (docs/statistics.md): PEP's pseudo-values are
# per image, against one negative pool that is not resampled.
HELD_FIXED = {"pep_auc": "negative pool"}

# (group, variant, size, seed, benchmark, metric) -> {item id: value}; argent/tables/items.py
ItemIndex = dict[tuple[str, str, str, int, str, str], dict[str, float]]
# (qualified A, qualified B, benchmark) -> why the benchmark is outside the runs' training domain, or ""
DomainCheck = Callable[[str, str, str], str]


def _row(claim: Claim, cm: ClaimMetric, size: str) -> dict[str, Any]:
    return {"id": claim.id, "source": claim.source, "claim": claim.statement, "role": cm.role, "size": size,
            "variant_a": claim.a, "variant_b": claim.b, "expect": f"A {cm.expect}",
            "published_a": None if cm.published is None else cm.published[0],
            "published_b": None if cm.published is None else cm.published[1],
            "published_diff": cm.published_diff, "benchmark": None, "metric": None, "lower_is_better": None,
            "expected_sign": None, "family": "", "test": "", "margin": None, "a_mean": None, "b_mean": None,
            "diff_mean": None, "ci95": None, "ci_low": None, "ci_high": None, "variance": "", "n": 0,
            "n_items": None, "df": None, "n_configured": 0, "partial": False, "seeds": "", "p": None,
            "p_adjusted": None, "seed_sd": None, "planning_effect": None, "seeds_for_power": None,
            "seeds_for_delta": None, "cpu_h_for_power": None, "verdict": "", "test_verdict": "",
            "sensitivity_of": cm.sensitivity_of or None, "card": "", "tied_a": None, "tied_b": None, "inside_a": None,
            "inside_b": None, "best_gap_a": None, "best_gap_b": None, "premise": None, "premise_a": None,
            "premise_b": None,
            "note": "; ".join(filter(None, [claim.note, cm.basis and f"direction from the text: {cm.basis}"]))}


def _add_note(row: dict[str, Any], text: str) -> None:
    row["note"] = "; ".join(filter(None, [row["note"], text]))


def home_group(plan: Plan, qualified: str, size: str, seed: int) -> str:
    """The group whose folder holds ``<group>/<variant>``'s run (its lender's, when borrowed)."""
    group, _, variant = qualified.partition("/")
    home = plan.home.get(RunKey(group, variant, size, seed))
    return home.group if home is not None else group


def first_seed(plan: Plan, size: str) -> int:
    """The lowest seed the plan trains at ``size`` (0 when none): where a claim looks up a run's home."""
    return min((k.seed for k in plan.home if k.size == size), default=0)


def _item_tables(items: ItemIndex, plan: Plan, claim: Claim, spec: MetricSpec, size: str,
                 seeds: list[int]) -> tuple[np.ndarray, np.ndarray, int] | None:
    """The seeds × items tables of A's and of B's item scores over the item ids every paired seed has
    on both sides, and how many ids were left out; None when a run wrote no item vector for the metric."""
    vectors = []
    for seed in seeds:
        pair = []
        for qualified in (claim.a, claim.b):
            variant = qualified.partition("/")[2]
            key = (home_group(plan, qualified, size, seed), variant, size, seed, spec.benchmark, spec.metric)
            if key not in items:
                return None
            pair.append(items[key])
        vectors.append(pair)
    all_ids = set().union(*(set(v) for pair in vectors for v in pair))
    ids = sorted(set.intersection(*(set(v) for pair in vectors for v in pair)))
    if len(ids) < 2:
        return None
    a_table, b_table = (np.array([[pair[side][i] for i in ids] for pair in vectors], dtype=float) for side in (0, 1))
    return a_table, b_table, len(all_ids) - len(ids)


def _estimate(claim: Claim, spec: MetricSpec, size: str, diffs: dict[int, float], items: ItemIndex,
              plan: Plan, row: dict[str, Any]) -> Estimate:
    """The row's estimate: seeds × items where both runs wrote item vectors, seeds only otherwise."""
    found = _item_tables(items, plan, claim, spec, size, sorted(diffs)) if len(diffs) >= 2 else None
    if found is None:
        return seed_estimate(list(diffs.values()))
    a_table, b_table, left_out = found
    if left_out:
        _add_note(row, f"{left_out} test items not present in every paired run were left out")
    return crossed_estimate(a_table - b_table)


def evaluate_claim(claim: Claim, cm: ClaimMetric, spec: MetricSpec | None, size: str, long: pl.DataFrame,
                   present: set[tuple[str, str]], seeds: dict[str, list[int]], claims: ClaimsSpec,
                   family: str, plan: Plan, items: ItemIndex, configured: set[str] | None = None,
                   protocol: str | None = None) -> dict[str, Any]:
    """One row's estimate, raw p and protocol card (the family's correction, the verdict and its label
    come after all rows). ``protocol``: the benchmark's protocol, which says what its metric can tie."""
    row = _row(claim, cm, size)
    margin = claims.margins[cm.role]
    if spec is None:
        row.update(verdict="not evaluated",
                   note=f"metric role {cm.role!r} has no benchmark in tables.claims.metrics of this config")
        return row
    sign = expected_sign(cm, spec, claim.id)
    kind = kind_of_test(cm, margin)
    row.update(benchmark=spec.benchmark, metric=spec.metric, lower_is_better=spec.lower_is_better, expected_sign=sign,
               test=kind, margin=margin.delta, family=family,
               expect=f"A {cm.expect}" + ("" if sign == 0 else f" (Δ {'>' if sign > 0 else '<'} 0)"))
    if kind == "equivalence" and cm.expect != "equal":
        _add_note(row, f"published |Δ| < δ = {margin.delta:g}: tested for equivalence")
    absent = [v for v in (claim.a, claim.b) if (v, size) not in present]
    if absent:
        row.update(verdict="not run", family="", note=_not_run(absent, size, configured))
        return row
    a = values_by_seed(long, claim.a, size, spec.benchmark, spec.metric)
    b = values_by_seed(long, claim.b, size, spec.benchmark, spec.metric)
    if not a or not b:
        row.update(verdict="not evaluated", family="", note=f"{spec.key} did not run for {claim.a if not a else claim.b}")
        return row
    diffs = {k: a[k] - b[k] for k in sorted(a.keys() & b.keys()) if a[k] is not None and b[k] is not None}
    both_seeds = set(seeds.get(claim.a, [])) & set(seeds.get(claim.b, []))
    row.update(n=len(diffs), n_configured=len(both_seeds), partial=len(diffs) < len(both_seeds),
               seeds=" ".join(str(k) for k in diffs))
    if not diffs:
        undefined = [v for v, vals in ((claim.a, a), (claim.b, b)) if all(x is None for x in vals.values())]
        why = f"{spec.key} is not defined for {' and '.join(undefined)}" if undefined else "no seed has both values"
        row.update(verdict="n/a", family="", note=why)
        return row
    est = _estimate(claim, spec, size, diffs, items, plan, row)
    scale = spec.scale
    _record_estimate(row, est, cm.role, (a, b, diffs), claims.alpha, scale)
    if family == OUT_OF_DOMAIN:
        row["verdict"] = OUT_OF_DOMAIN
        return row
    if est.se is None:
        row.update(verdict="inconclusive", family="")
        _add_note(row, "n=1: no CI, no test, no verdict")
        return row
    row["p"] = est.p_equivalence(margin.delta / scale) if kind == "equivalence" else est.p_difference()
    row.update(measure_card(row, {"a": a, "b": b}, long, protocol, scale))
    row["degenerate_reason"] = degenerate_reason(row, claims.degenerate, margin.delta)
    row["_estimate"], row["_scale"] = est, scale   # for the power analysis, dropped by decide()
    return row


def _not_run(absent: list[str], size: str, configured: set[str] | None) -> str:
    """Why a row's runs have no evaluation at ``size``: configured and failed, or not trained here."""
    why = [f"{v}: " + ("configured, but no evaluation (failed or skipped; hard-negative variants need WordNet)"
                       if configured and v in configured else "not trained by an active group of this config (a group "
                                                              "left out, or not listed)") for v in absent]
    return f"size {size}: " + "; ".join(why)


def _record_estimate(row: dict[str, Any], est: Estimate, role: str, values: tuple[dict, dict, dict], alpha: float,
                     scale: float) -> None:
    """The row's means of A and B over the paired seeds, Δ with its interval, its variance and the seed SD."""
    a, b, diffs = values
    row.update(a_mean=float(np.mean([a[k] for k in diffs])) * scale, b_mean=float(np.mean([b[k] for k in diffs])) * scale,
               diff_mean=est.mean * scale, n_items=est.n_items, df=est.df,
               variance=est.variance + (f" ({HELD_FIXED[role]} fixed)"
                                        if est.variance == "seeds+items" and role in HELD_FIXED else ""))
    interval = est.interval(1 - alpha)
    if interval is not None:
        low, high = interval
        row.update(ci_low=low * scale, ci_high=high * scale, ci95=(high - low) / 2 * scale)
    if est.components is not None:
        row["seed_sd"] = float(np.sqrt(est.components.seed)) * scale


def _verdict(row: dict[str, Any], alpha: float) -> str:
    if row["p_adjusted"] is None or row["p_adjusted"] > alpha:
        return "inconclusive"
    if row["test"] == "equivalence":
        return "equivalent"
    if row["expected_sign"] == 0:   # a control the source states no direction on
        return "differs"
    return "reproduced" if (row["diff_mean"] > 0) == (row["expected_sign"] > 0) else "contradicted"


def _calibration(row: dict[str, Any], claims: ClaimsSpec) -> float:
    """The factor on Holm's levels for a primary row of this many paired seeds (1 without a declaration):
    where the recipe's measured seed law makes the test liberal at few seeds (docs/statistics.md)."""
    calibration = claims.size_calibration
    return 1.0 if calibration is None else calibration.factor_at(int(row.get("n") or 0))


def decide(rows: list[dict[str, Any]], claims: ClaimsSpec) -> list[dict[str, Any]]:
    """Holm over the primary rows, BH over the exploratory rows, verdicts, and the primary rows'
    power analysis under the Holm/Bonferroni bound: the paired seeds that reach 80 % power at the
    planning effect (directional rows: the safeguard effect, the lower end of the pilot's 60 % CI
    of |Δ|; equivalence rows: δ), and at δ for every row (the sensitivity column). No tested row is
    refused, so that power is the chance of a decision."""
    for family, adjust in ((PRIMARY, holm), (EXPLORATORY, benjamini_hochberg)):
        members = [r for r in rows if r["family"] == family and r["p"] is not None]
        for r, p_adj in zip(members, adjust([r["p"] for r in members])):
            r["p_adjusted"] = p_adj
            r["verdict"] = _verdict(r, claims.alpha * _calibration(r, claims) if family == PRIMARY else claims.alpha)
    tested_primary = sum(1 for r in rows if r["family"] == PRIMARY and r["p"] is not None)
    level = claims.alpha / max(tested_primary, 1)
    for r in rows:
        est: Estimate | None = r.pop("_estimate", None)
        scale = r.pop("_scale", 1.0)
        if est is None or est.components is None or r["family"] != PRIMARY:
            continue
        equivalence = r["test"] == "equivalence"
        delta = r["margin"] / scale
        r["seeds_for_delta"] = seeds_for_power(est.components, delta, level * _calibration(r, claims), POWER_TARGET,
                                               equivalence)
        effect = delta if equivalence else safeguard_effect(est, SAFEGUARD_CONFIDENCE)
        if effect is None:
            _add_note(r, f"the pilot's {SAFEGUARD_CONFIDENCE:.0%} CI of |Δ| reaches 0: no safeguard effect to plan seeds at")
            continue
        r["planning_effect"] = effect * scale
        r["seeds_for_power"] = seeds_for_power(est.components, effect, level * _calibration(r, claims), POWER_TARGET,
                                               equivalence)
    return rows


def price_power(rows: list[dict[str, Any]], plan: Plan, run_cpu_s: dict[tuple[str, str, str], float]) -> None:
    """Each primary row's ``cpu_h_for_power``: the training CPU-hours of the paired seeds its power
    analysis asks for beyond the n it has, at the mean CPU time of A's and B's runs measured here
    (``run_cpu_s``: (group, variant, size) -> CPU s of one run; argent/tables/cost.py). None when a
    cost was not measured or no number of seeds reaches the power."""
    for r in rows:
        need = r["seeds_for_power"]
        if r["family"] != PRIMARY or need is None:
            continue
        seed = first_seed(plan, r["size"])
        per_seed = [run_cpu_s.get((home_group(plan, q, r["size"], seed), q.partition("/")[2], r["size"]))
                    for q in (r["variant_a"], r["variant_b"])]
        if None not in per_seed:
            r["cpu_h_for_power"] = max(need - r["n"], 0) * sum(per_seed) / 3600


def _families(claim: Claim, cm: ClaimMetric, specs: list[MetricSpec | None],
              out_of_domain: DomainCheck | None) -> list[tuple[MetricSpec | None, str, str]]:
    """(spec, family, why out of domain) of each benchmark of one role of a claim."""
    ood = {s.benchmark: (out_of_domain(claim.a, claim.b, s.benchmark) if out_of_domain else "")
           for s in specs if s is not None}
    primary_bench = next((s.benchmark for s in specs if s is not None and not ood[s.benchmark]), None)
    out = []
    for spec in specs:
        if spec is not None and ood[spec.benchmark]:
            out.append((spec, OUT_OF_DOMAIN, ood[spec.benchmark]))
        elif (claim.primary is not None and spec is not None and cm.role == claim.primary
              and spec.benchmark == primary_bench):
            out.append((spec, PRIMARY, ""))
        else:
            out.append((spec, EXPLORATORY, ""))
    return out


def _premise(claim: Claim, size: str, diag: pl.DataFrame | None) -> dict[str, Any]:
    """The claim's premise fields (every row of the claim carries them); {} without a premise."""
    if claim.premise is None:
        return {}
    measured = measure_premise(claim.premise, claim, size, diag if diag is not None else pl.DataFrame(
        schema={"variant": pl.Utf8, "size": pl.Utf8, "key": pl.Utf8, "value": pl.Float64}))
    values = [v for v in measured.values() if v is not None]
    absent = len(values) == 2 and max(values) < claim.premise.above
    return {"premise": premise_text(claim.premise, measured), "premise_a": measured["a"], "premise_b": measured["b"],
            "premise_absent": absent}


def claims_rows(claims: ClaimsSpec, long: pl.DataFrame, sizes: list[str], seeds: dict[str, list[int]],
                plan: Plan, items: ItemIndex | None = None, configured: set[str] | None = None,
                out_of_domain: DomainCheck | None = None, diag: pl.DataFrame | None = None,
                protocols: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Every row of the claims table, tested, decided and labelled. A claim declared ``primary: none``
    (``Claim.primary is None``) has no primary row: all its in-domain rows are exploratory. ``diag``:
    the trainer's end-of-training diagnostics (``collect_diagnostics``, listed), read by premises;
    ``protocols``: benchmark -> protocol, read by the protocol card."""
    check_evidence(claims, plan, sizes)
    present = set(zip(long["variant"].to_list(), long["size"].to_list()))
    rows = []
    for claim in claims.claims:
        for size in claim.sizes or sizes:
            premise = _premise(claim, size, diag)
            for cm in claim.metrics:
                tests_mechanism = claim.premise is not None and (not claim.premise.roles or cm.role in claim.premise.roles)
                for spec, family, ood in _families(claim, cm, claims.roles.get(cm.role) or [None], out_of_domain):
                    protocol = (protocols or {}).get(spec.benchmark) if spec is not None else None
                    row = evaluate_claim(claim, cm, spec, size, long, present, seeds, claims, family, plan,
                                         items or {}, configured, protocol)
                    if ood:
                        _add_note(row, ood)
                    if tests_mechanism:
                        row.update(premise)
                    row["card"] = card_text(row)
                    rows.append(row)
    rows = decide(rows, claims)
    apply_labels(rows, claims)
    for r in rows:
        r.pop("premise_absent", None)
        r.pop("degenerate_reason", None)
    return rows


def check_evidence(claims: ClaimsSpec, plan: Plan, sizes: list[str]) -> None:
    """Refuse two claim rows that test the same two trained runs on the same metric (a borrowed run
    is its lender's run): one result would be counted twice."""
    seen: dict[tuple, str] = {}
    for claim in claims.claims:
        for size in claim.sizes or sizes:
            seed = first_seed(plan, size)
            runs = tuple(sorted(f"{home_group(plan, q, size, seed)}/{q.partition('/')[2]}" for q in (claim.a, claim.b)))
            for cm in claim.metrics:
                for spec in claims.roles.get(cm.role) or []:
                    key = (runs, size, spec.benchmark, spec.metric)
                    if key in seen and seen[key] != claim.id:
                        raise ValueError(
                            f"claims {seen[key]} and {claim.id} test the same runs ({runs[0]} vs {runs[1]}, size "
                            f"{size}) on {spec.key}: one result would be counted twice; keep the metric in one "
                            f"claim and name both sources there (config/claims.yaml)")
                    seen[key] = claim.id
