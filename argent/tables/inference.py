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
  fallacy", J. Verbal Learn. Verbal Behav. 12. From the mean squares of the two-way table (MS_s,
  MS_i, MS_r: seeds, items, residual), Var(Δ̂) = σ_s²/K + σ_i²/N + σ_ε²/(KN) is estimated by

      V = (MS_s + max(0, MS_i − MS_r)) / (KN).

  The seeds' term MS_s/(KN) estimates σ_s²/K + σ_ε²/(KN) and is never truncated: setting σ_s² to 0
  whenever MS_s < MS_r (the estimator before this one) drops the seeds exactly when MS_s is drawn
  small, and the interval was anti-conservative in the tail where Holm decides (1.1 % false
  positives at α/16 = 0.31 %). Only the item term, estimated with N − 1 df, is floored at 0
  (conservative). The t reference keeps the seeds' K − 1 df unless the seeds' term is under
  ``SATTERTHWAITE_BELOW`` of V: then Satterthwaite's (1946) df, "An approximate distribution of
  estimates of variance components", Biometrics Bull. 2, floored at K − 1. The threshold was
  chosen by a one-off scan of the size at α/16, α/4 and α over 300 normal settings (K = 3–10,
  N = 240/2,400; the scan is not in the repository, its numbers are in docs/statistics.md): at
  10 % the K = 3 size reached 0.44 % against 0.31 %, since Satterthwaite's df rises exactly when
  MS_s is drawn small; at 5 % the worst setting was 3.1 Monte Carlo SEs over nominal, at 3 % 1.0.
  tests/unit/tables/test_inference.py holds the size at α/16 on normal settings (K = 3–20, N up to
  5,000) and on 0/1 correctness.

The t interval is valid in the tail for roughly normal seed effects. Under a bad-seed mixture (a seed
shifted by 2–4 SD with probability 0.2) the size at α/16 reaches 5× nominal, and the excess comes from
samples that hold no bad seed, which no rule on those seeds can see (docs/statistics.md). Whether the
recipe's own seeds behave is measured instead: argent/tables/seed_law.py simulates this estimate under
the seed law of 40 measured seeds per family (bench/seed_law.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats

SEEDS_UNREACHABLE = 10**7   # power still under target here: no number of seeds reaches it (the item term)
SATTERTHWAITE_BELOW = 0.03  # seeds' share of V under which the df is Satterthwaite's (module docstring)
# scipy's nct is NaN past |ncp| ~ 1e10; at 1e8 every tail used here is already 0 or 1 in double precision
NCP_CAP = 1e8


@dataclass(frozen=True)
class Components:
    """Estimated variance components of the paired difference (raw units²).

    ``seed`` is the variance of one seed's whole-test-set difference around its expectation on this
    test set, σ_s² + σ_ε²/N (E[MS_s]/N): what K seeds average down. ``item`` is σ_i², what the N test
    items average down (0 for a seed-only estimate: the test set is fixed). ``residual`` σ_ε² only
    enters the degrees of freedom."""

    seed: float
    item: float
    residual: float
    n_items: int           # N (1 for a seed-only estimate: the whole test set is one unit)

    def variance_of_mean(self, seeds: int) -> float:
        return self.seed / seeds + self.item / self.n_items

    def df(self, seeds: int) -> float:
        """The reference df at ``seeds`` seeds, from the expected mean squares (the same rule as the data's)."""
        if self.n_items == 1 or self.item == 0:
            return float(seeds - 1)
        n = self.n_items
        ms_s, ms_i, ms_r = n * self.seed, seeds * self.item + self.residual, self.residual
        return float(crossed_variance_and_df(seeds, n, ms_s, ms_i, ms_r)[1])


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


def crossed_variance_and_df(k: int, n: int, ms_s, ms_i, ms_r):
    """V and its reference df from the two-way mean squares (module docstring); scalars or arrays.

    V = (MS_s + max(0, MS_i − MS_r)) / (KN); df = K − 1 unless MS_s/(KN) < ``SATTERTHWAITE_BELOW`` · V,
    then Satterthwaite's df of MS_s + MS_i − MS_r (or of MS_s alone when the item term is 0),
    floored at K − 1. Vectorised so that tests can simulate the size on many tables at once."""
    ms_s, ms_i, ms_r = (np.asarray(x, dtype=float) for x in (ms_s, ms_i, ms_r))
    item = np.maximum(0.0, ms_i - ms_r)
    total = ms_s + item
    variance = total / (k * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = ms_s ** 2 / (k - 1) + np.where(item > 0, ms_i ** 2 / (n - 1) + ms_r ** 2 / ((k - 1) * (n - 1)), 0.0)
        satterthwaite = np.where(denom > 0, total ** 2 / np.where(denom > 0, denom, 1.0), k - 1)
        use = ms_s < SATTERTHWAITE_BELOW * total
    df = np.where(use, np.maximum(satterthwaite, k - 1), float(k - 1))
    if variance.ndim == 0:
        return float(variance), float(df)
    return variance, df


def mean_squares(diffs: np.ndarray) -> tuple[float, float, float]:
    """(MS_s, MS_i, MS_r) of a K × N table (K ≥ 2, N ≥ 2); the last two axes when stacked."""
    d = np.asarray(diffs, dtype=float)
    k, n = d.shape[-2:]
    grand = d.mean(axis=(-2, -1), keepdims=True)
    seed_means, item_means = d.mean(axis=-1, keepdims=True), d.mean(axis=-2, keepdims=True)
    ms_s = n * ((seed_means - grand) ** 2).sum(axis=(-2, -1)) / (k - 1)
    ms_i = k * ((item_means - grand) ** 2).sum(axis=(-2, -1)) / (n - 1)
    ms_r = ((d - seed_means - item_means + grand) ** 2).sum(axis=(-2, -1)) / ((k - 1) * (n - 1))
    return ms_s, ms_i, ms_r


def crossed_estimate(diffs: np.ndarray) -> Estimate:
    """The seeds × items estimate from a K × N matrix of paired per-item differences d_{k,i}."""
    d = np.asarray(diffs, dtype=float)
    if d.ndim != 2 or d.shape[1] < 2:
        raise ValueError(f"need a seeds × items matrix with at least 2 items, got shape {d.shape}")
    k, n = d.shape
    grand = float(d.mean())
    if k == 1:
        return Estimate(grand, None, None, 1, n, "seeds+items")
    ms_s, ms_i, ms_r = (float(x) for x in mean_squares(d))
    variance, df = crossed_variance_and_df(k, n, ms_s, ms_i, ms_r)
    components = Components(ms_s / n, max(0.0, ms_i - ms_r) / k, ms_r, n)
    return Estimate(grand, math.sqrt(variance), df, k, n, "seeds+items", components)


def _finite(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise ArithmeticError(f"power: {what} is {value} (a numerical failure, not a probability)")
    return float(value)


def power(components: Components, seeds: int, effect: float, alpha: float, equivalence: bool = False) -> float:
    """Power at ``seeds`` seeds of the row's test at level ``alpha`` (raises on a NaN, never returns one).

    Directional rows: the two-sided t test of Δ = 0 when the true difference is ``effect``: both
    tails of the noncentral t, each as an upper tail (``nct.sf(crit, df, ±ncp)``: scipy's
    ``nct.cdf`` far in the lower tail returns NaN). Equivalence rows: TOST with margin ``effect``
    when the true difference is 0: P(T₊ > t₁₋α) + P(T₋ < −t₁₋α) − 1 with T± noncentral at ±δ/se,
    a lower bound of the exact power that is tight wherever it matters (at 80 % and above).

    This is the chance of a decision, since no tested row is refused:
    tests/unit/tables/test_decision.py simulates the decisions at the seeds that reach 80 %."""
    if seeds < 2:
        return 0.0
    se = math.sqrt(components.variance_of_mean(seeds))
    df = components.df(seeds)
    if se == 0:
        return 1.0
    ncp = max(-NCP_CAP, min(NCP_CAP, effect / se))
    if equivalence:
        crit = scipy_stats.t.ppf(1 - alpha, df)
        both = _finite(scipy_stats.nct.sf(crit, df, ncp), "the TOST tail")
        return max(0.0, 2 * both - 1)
    crit = scipy_stats.t.ppf(1 - alpha / 2, df)
    upper = _finite(scipy_stats.nct.sf(crit, df, ncp), "the upper tail")
    lower = _finite(scipy_stats.nct.sf(crit, df, -ncp), "the lower tail")
    return min(1.0, upper + lower)


def safeguard_effect(est: Estimate, confidence: float = 0.6) -> float | None:
    """The planning effect of a directional row: the lower end of the two-sided ``confidence``
    interval of |Δ̂| (Perugini, Gallucci & Costantini 2014, Perspect. Psychol. Sci. 9:319–332,
    "safeguard power" from a pilot's effect), |Δ̂| − t_{(1+c)/2, df}·se; None when it is not above 0 (the pilot
    does not tell the sign at that level) or there is no interval."""
    if est.se is None or est.df is None:
        return None
    effect = abs(est.mean) - float(scipy_stats.t.ppf((1 + confidence) / 2, est.df)) * est.se
    return effect if effect > 0 else None


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
