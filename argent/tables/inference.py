"""The estimate behind a claim row: the paired difference A − B, its standard error over the
variance sources it covers, and the tests and power analysis read from it. docs/statistics.md.

Two estimators, one result type (``Estimate``):

- ``seed_estimate``: the per-seed differences dₖ (k = 1..K) of a metric computed on the whole test
  set. Δ̂ = mean dₖ, se = s/√K, Student t with K − 1 df. It covers training seeds only: the test
  set is fixed, so the interval speaks about *this* test set.
- ``crossed_estimate``: the per-seed, per-item differences d_{k,i} of a metric that is a mean over
  test items (argent evaluate writes the item vectors; item i of A pairs with item i of B). The
  model is the two-way crossed random-effects model d_{k,i} = Δ + s_k + e_i + ε_{k,i} — seeds and
  test items both random, as subjects and items are in Clark (1973), "The language-as-fixed-effect
  fallacy", J. Verbal Learn. Verbal Behav. 12. From the mean squares of the two-way table
  (MS_s, MS_i, MS_r: seeds, items, residual), Var(Δ̂) = σ_s²/K + σ_i²/N + σ_ε²/(KN) is estimated
  without bias by (MS_s + MS_i − MS_r)/(KN) (a component whose estimate is negative is set to 0,
  which drops its mean square from the sum), with Satterthwaite's (1946) degrees of freedom,
  "An approximate distribution of estimates of variance components", Biometrics Bull. 2 — except
  when the seeds' term MS_s/(KN) makes half of the estimate or more: then the t reference keeps the
  seeds' K − 1 df. (With 3 seeds Satterthwaite's df is liberal there: it rises exactly when MS_s is
  drawn small, and the interval covered 93 % in simulation; with the rule 94–96 % in every setting
  tried.) The interval then speaks about new test items from the same distribution as well as new
  seeds. tests/test_tables_inference.py checks its coverage on simulated data with a known Δ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np
from scipy import stats as scipy_stats

SEEDS_UNREACHABLE = 10**7   # power still under target here: no number of seeds reaches it (the item term)


@dataclass(frozen=True)
class Components:
    """Estimated variance components of the paired difference (raw units²)."""

    seed: float            # σ_s²: between seeds (what seed k does to A − B)
    item: float            # σ_i²: between test items (0 when the items were not resampled)
    residual: float        # σ_ε²: seed × item interaction (0 for a seed-only estimate)
    n_items: int           # N (1 for a seed-only estimate: the whole test set is one unit)

    def variance_of_mean(self, seeds: int) -> float:
        return self.seed / seeds + self.item / self.n_items + self.residual / (seeds * self.n_items)

    def df(self, seeds: int) -> float:
        """Satterthwaite df of the variance estimate at ``seeds`` seeds (expected mean squares)."""
        if self.n_items == 1 or (self.item == 0 and self.residual == 0):
            return float(seeds - 1)
        n = self.n_items
        ms_s, ms_i, ms_r = n * self.seed + self.residual, seeds * self.item + self.residual, self.residual
        return _reference_df(seeds, n, ms_s, ms_i, ms_r, self.seed > 0, self.item > 0)


@dataclass(frozen=True)
class Estimate:
    """Δ̂ with its standard error and t reference; ``variance`` names what the se covers."""

    mean: float
    se: float | None        # None with one seed: no spread, no interval, no test
    df: float | None
    n_seeds: int
    n_items: int | None     # None: seed-only estimate
    variance: str           # "seeds" | "seeds+items"
    components: Components | None = None

    def interval(self, confidence: float = 0.95) -> tuple[float, float] | None:
        if self.se is None or self.df is None:
            return None
        half = float(scipy_stats.t.ppf(0.5 + confidence / 2, self.df)) * self.se
        return self.mean - half, self.mean + half

    def p_difference(self) -> float | None:
        """Two-sided p of H0: Δ = 0."""
        if self.se is None or self.df is None:
            return None
        if self.se == 0:
            return 1.0 if self.mean == 0 else 0.0
        return float(2 * scipy_stats.t.sf(abs(self.mean) / self.se, self.df))

    def p_equivalence(self, margin: float) -> float | None:
        """TOST p of H0: |Δ| ≥ margin (Schuirmann 1987): the larger of the two one-sided p's."""
        if self.se is None or self.df is None:
            return None
        if margin <= 0:
            raise ValueError(f"an equivalence margin must be > 0, got {margin}")
        if self.se == 0:
            return 0.0 if abs(self.mean) < margin else 1.0
        p_low = scipy_stats.t.sf((self.mean + margin) / self.se, self.df)    # H0: Δ ≤ −margin
        p_high = scipy_stats.t.cdf((self.mean - margin) / self.se, self.df)  # H0: Δ ≥ +margin
        return float(max(p_low, p_high))


def seed_estimate(diffs: Sequence[float]) -> Estimate:
    """The paired t estimate over per-seed differences of a whole-test-set metric."""
    d = np.asarray(list(diffs), dtype=float)
    k = len(d)
    if k == 0:
        raise ValueError("no paired seed to estimate a difference from")
    if k == 1:
        return Estimate(float(d[0]), None, None, 1, None, "seeds")
    var = float(d.var(ddof=1))
    return Estimate(float(d.mean()), math.sqrt(var / k), float(k - 1), k, None, "seeds",
                    Components(var, 0.0, 0.0, 1))


def _reference_df(k: int, n: int, ms_s: float, ms_i: float, ms_r: float, use_s: bool, use_i: bool) -> float:
    # The variance estimate is Σ c_j MS_j / (KN) over the mean squares kept; df = (Σ c MS)² / Σ (c MS)²/df_j,
    # or the seeds' K − 1 when MS_s is half of Σ c MS or more (module docstring: why).
    terms = []
    if use_s:
        terms.append((ms_s, k - 1))
    if use_i:
        terms.append((ms_i, n - 1))
    if use_s and use_i:
        terms.append((-ms_r, (k - 1) * (n - 1)))
    if not terms:
        terms.append((ms_r, (k - 1) * (n - 1)))
    total = sum(c for c, _ in terms)
    denom = sum(c * c / df for c, df in terms)
    if denom <= 0 or (use_s and 2 * ms_s >= total):
        return float(k - 1)
    return float(total * total / denom)


def crossed_estimate(diffs: np.ndarray) -> Estimate:
    """The seeds × items estimate from a K × N matrix of paired per-item differences d_{k,i}."""
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 2 or d.shape[1] < 2:
        raise ValueError(f"need a seeds × items matrix with at least 2 items, got shape {d.shape}")
    k, n = d.shape
    grand = float(d.mean())
    if k == 1:
        return Estimate(grand, None, None, 1, n, "seeds+items")
    seed_means, item_means = d.mean(axis=1), d.mean(axis=0)
    ms_s = n * float(((seed_means - grand) ** 2).sum()) / (k - 1)
    ms_i = k * float(((item_means - grand) ** 2).sum()) / (n - 1)
    resid = d - seed_means[:, None] - item_means[None, :] + grand
    ms_r = float((resid ** 2).sum()) / ((k - 1) * (n - 1))
    var_s, var_i = max(0.0, (ms_s - ms_r) / n), max(0.0, (ms_i - ms_r) / k)
    components = Components(var_s, var_i, ms_r, n)
    variance = components.variance_of_mean(k)   # = (MS_s + MS_i − MS_r)/(KN) when both are positive
    df = _reference_df(k, n, ms_s, ms_i, ms_r, var_s > 0, var_i > 0)
    return Estimate(grand, math.sqrt(max(variance, 0.0)), df, k, n, "seeds+items", components)


def power(components: Components, seeds: int, effect: float, alpha: float, equivalence: bool = False) -> float:
    """Power at ``seeds`` seeds of the row's test at level ``alpha``.

    Directional rows: the two-sided t test of Δ = 0 when the true difference is ``effect``
    (noncentral t). Equivalence rows: TOST with margin ``effect`` when the true difference is 0
    (the usual approximation 2·F_t(δ/se − t₁₋α) − 1, floored at 0)."""
    if seeds < 2:
        return 0.0
    se = math.sqrt(components.variance_of_mean(seeds))
    df = components.df(seeds)
    if se == 0:
        return 1.0
    if equivalence:
        crit = scipy_stats.t.ppf(1 - alpha, df)
        return float(max(0.0, 2 * scipy_stats.t.cdf(effect / se - crit, df) - 1))
    crit = scipy_stats.t.ppf(1 - alpha / 2, df)
    ncp = effect / se
    return float(scipy_stats.nct.sf(crit, df, ncp) + scipy_stats.nct.cdf(-crit, df, ncp))


def seeds_for_power(components: Components, effect: float, alpha: float, target: float = 0.8,
                    equivalence: bool = False) -> int | None:
    """The fewest paired seeds (≥ 2) whose power reaches ``target``; None when no number of seeds does
    (for a seeds × items estimate the item term σ_i²/N does not shrink with seeds, so the test items
    alone can keep the power under the target: more test items are needed, not seeds).

    Power grows with seeds (se falls, df rises), so the answer is found by doubling, then bisection."""
    def enough(seeds: int) -> bool:
        return power(components, seeds, effect, alpha, equivalence) >= target

    if enough(2):
        return 2
    if not enough(SEEDS_UNREACHABLE):
        return None
    low, high = 2, 4            # invariant: not enough(low), enough(high) once the doubling stops
    while not enough(high):
        low, high = high, 2 * high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high
