"""The statistics of the claims table on data with a known answer: Holm and BH against hand-computed
values, TOST on identical seeds ± noise and on a shifted copy, the coverage of the seeds × items
interval on simulated data with a known effect, its size at the Holm level on normal seeds and 0/1
correctness, and the power search. The recipe's own seed law: tests/unit/tables/test_seed_law.py."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from scipy.special import expit

from argent.tables.inference import (
    Components,
    Estimate,
    crossed_estimate,
    crossed_variance_and_df,
    mean_squares,
    power,
    safeguard_effect,
    seed_estimate,
    seeds_for_power,
)
from argent.tables.multiplicity import benjamini_hochberg, holm

# ---- multiplicity --------------------------------------------------------------------------------

P = [0.01, 0.04, 0.03, 0.005, None, 0.20]


def test_holm_matches_a_hand_computed_reference():
    # m = 5 (None is not a test). Sorted: 0.005, 0.01, 0.03, 0.04, 0.20 times 5, 4, 3, 2, 1:
    # 0.025, 0.04, 0.09, 0.08 -> 0.09 (running max), 0.20.
    assert holm(P) == pytest.approx([0.04, 0.09, 0.09, 0.025, None, 0.20])


def test_benjamini_hochberg_matches_a_hand_computed_reference():
    # Sorted: 0.005·5/1 = 0.025, 0.01·5/2 = 0.025, 0.03·5/3 = 0.05, 0.04·5/4 = 0.05, 0.20·5/5 = 0.20;
    # step-up minimum from the top leaves them as they are.
    assert benjamini_hochberg(P) == pytest.approx([0.025, 0.05, 0.05, 0.025, None, 0.20])


def test_adjusted_values_are_monotone_and_bounded():
    rng = np.random.default_rng(0)
    p = list(rng.uniform(size=40) ** 3)
    for adjusted in (holm(p), benjamini_hochberg(p)):
        order = np.argsort(p)
        values = np.asarray(adjusted)[order]
        assert np.all(np.diff(values) >= -1e-15) and values.max() <= 1.0
        assert all(a >= r for a, r in zip(adjusted, p))
    assert all(h >= q for h, q in zip(holm(p), benjamini_hochberg(p)))   # Holm is the stricter


def test_a_p_value_outside_zero_one_is_refused():
    with pytest.raises(ValueError, match=r"p-value #1 is 1.5"):
        holm([0.1, 1.5])


# ---- TOST ----------------------------------------------------------------------------------------

def test_tost_declares_equivalence_for_identical_seeds_plus_noise():
    rng = np.random.default_rng(1)
    base = rng.normal(70, 8, size=10)                       # ten seeds of A; B = A ± small noise
    diffs = base - (base + rng.normal(0, 0.3, size=10))
    est = seed_estimate(diffs)
    assert est.p_equivalence(margin=1.0) < 0.01
    assert est.p_difference() > 0.05


def test_tost_refuses_equivalence_for_a_shifted_copy():
    rng = np.random.default_rng(2)
    base = rng.normal(70, 8, size=10)
    diffs = (base + 3.0 + rng.normal(0, 0.3, size=10)) - base     # A = B + 3, margin 1
    est = seed_estimate(diffs)
    assert est.p_equivalence(margin=1.0) > 0.5
    assert est.p_difference() < 0.001


def test_tost_is_the_larger_one_sided_p():
    est = seed_estimate([0.2, -0.1, 0.4, 0.1])
    t = scipy_stats.t(df=3)
    low = t.sf((est.mean + 1.0) / est.se)
    high = t.cdf((est.mean - 1.0) / est.se)
    assert est.p_equivalence(1.0) == pytest.approx(max(low, high))


# ---- intervals -----------------------------------------------------------------------------------

def test_seed_estimate_is_the_paired_t_interval():
    d = [1.0, 2.5, 0.5]
    est = seed_estimate(d)
    low, high = est.interval()
    half = scipy_stats.t.ppf(0.975, 2) * np.std(d, ddof=1) / math.sqrt(3)
    assert (low, high) == pytest.approx((np.mean(d) - half, np.mean(d) + half))
    assert est.p_difference() == pytest.approx(scipy_stats.ttest_1samp(d, 0).pvalue)
    assert seed_estimate([2.0]).interval() is None and seed_estimate([2.0]).p_difference() is None


def test_crossed_estimate_equals_the_seed_estimate_when_items_do_not_vary():
    rng = np.random.default_rng(3)
    seed_effects = rng.normal(0, 1, size=4)
    d = np.repeat(seed_effects[:, None], 50, axis=1) + 0.7
    est = crossed_estimate(d)
    ref = seed_estimate(d.mean(axis=1))
    assert est.mean == pytest.approx(ref.mean) and est.se == pytest.approx(ref.se)
    assert est.df == pytest.approx(3)


def _coverage(k: int, n: int, sd_seed: float, sd_item: float, sd_resid: float, sims: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    delta, hits = 1.5, 0
    for _ in range(sims):
        d = (delta + rng.normal(0, sd_seed, size=(k, 1)) + rng.normal(0, sd_item, size=(1, n))
             + rng.normal(0, sd_resid, size=(k, n)))
        low, high = crossed_estimate(d).interval()
        hits += low <= delta <= high
    return hits / sims


@pytest.mark.parametrize("k, n, sd_seed, sd_item, sd_resid", [
    (3, 200, 1.0, 1.0, 2.0),     # seeds dominate Var(Δ̂)
    (3, 200, 0.05, 3.0, 2.0),    # test items dominate
    (5, 100, 0.3, 2.0, 3.0),     # both matter
    (3, 200, 0.3, 3.0, 1.0),     # both matter, at three seeds
])
def test_the_seeds_times_items_interval_covers_at_least_95_percent(k, n, sd_seed, sd_item, sd_resid):
    # 2,000 simulated experiments with a known Δ: bounded from below only (a binomial 95 % band over
    # 2,000 draws is ± 1 %): a valid interval may be conservative, and is where the seeds' df rules.
    coverage = _coverage(k, n, sd_seed, sd_item, sd_resid, sims=2000, seed=k * 1000 + n)
    assert coverage >= 0.93, coverage


# ---- the size in the tail, where Holm decides ----------------------------------------------------
# Holm's first step over 16 primary rows tests at α/16; a row's false-positive rate there must not
# exceed α/16 by more than 3 Monte Carlo SEs. (b0b3310's estimator, which set the seed component to
# 0 when MS_s < MS_r and then took Satterthwaite's df: 1.1 % at setting 1, 1.7 % on binary data.)
# A tested row is decided when its adjusted p is under α and refused nothing else (claims.py), so
# the size of its p is the size of the decision. Normal seeds only: a bad-seed mixture breaks it
# (test_decision.py); the recipe's own seeds: test_seed_law.py.

LEVEL = 0.05 / 16


def _size_bound(reps: int, level: float = LEVEL) -> float:
    return level + 3 * math.sqrt(level * (1 - level) / reps)


def _p_values(k: int, n: int, grand: np.ndarray, ms_s, ms_i, ms_r) -> np.ndarray:
    variance, df = crossed_variance_and_df(k, n, ms_s, ms_i, ms_r)
    return 2 * scipy_stats.t.sf(np.abs(grand) / np.sqrt(variance), df)


def test_the_summary_level_simulation_is_the_cell_level_estimator():
    # The size tests below draw the mean squares of normal tables from their χ² laws; that is the
    # same estimator as crossed_estimate on the table (the mean squares of a table are independent
    # of its grand mean under the normal crossed model).
    rng = np.random.default_rng(7)
    tables = rng.normal(0, 1, size=(5, 3, 40)) + rng.normal(0, 2, size=(5, 3, 1)) + rng.normal(0, 1, size=(5, 1, 40))
    stacked = mean_squares(tables)
    for j, d in enumerate(tables):
        est = crossed_estimate(d)
        variance, df = crossed_variance_and_df(3, 40, *(m[j] for m in stacked))
        assert est.se == pytest.approx(math.sqrt(variance)) and est.df == pytest.approx(df)
        assert [m[j] for m in stacked] == pytest.approx(list(mean_squares(d)))


@pytest.mark.parametrize("k, n, sd_seed, sd_item, sd_resid", [
    (3, 200, 1.0, 1.0, 2.0),      # the audit's setting 1
    (3, 2400, 0.02, 0.5, 1.0),    # seeds' share of V ~ 70 %: a 10 % Satterthwaite switch fails here
    (3, 240, 0.3, 3.0, 1.0),
    (5, 2400, 0.1, 1.0, 3.0),
    (10, 2400, 0.3, 1.0, 3.0),
    (10, 240, 0.03, 0.5, 1.0),    # items dominate: the Satterthwaite branch
    (7, 240, 0.0, 1.0, 0.3),
    (3, 5000, 0.01, 0.3, 1.0),    # seeds' share of V ~ 50 % at the largest test set
    (4, 240, 0.1, 0.5, 1.0),
    (20, 5000, 0.02, 0.5, 1.0),
    (20, 240, 0.5, 1.0, 1.0),     # seeds dominate, many seeds
    (20, 5000, 0.002, 0.5, 1.0),  # items dominate: the Satterthwaite branch at 20 seeds
])
def test_the_size_at_the_holm_level_on_normal_crossed_data(k, n, sd_seed, sd_item, sd_resid):
    reps = 200_000
    rng = np.random.default_rng(k * 7919 + n)
    ms_s = (n * sd_seed**2 + sd_resid**2) * rng.chisquare(k - 1, reps) / (k - 1)
    ms_i = (k * sd_item**2 + sd_resid**2) * rng.chisquare(n - 1, reps) / (n - 1)
    ms_r = sd_resid**2 * rng.chisquare((k - 1) * (n - 1), reps) / ((k - 1) * (n - 1))
    true_var = sd_seed**2 / k + sd_item**2 / n + sd_resid**2 / (k * n)
    grand = rng.normal(0, math.sqrt(true_var), reps)                   # Δ̂ − Δ under H0
    size = float((_p_values(k, n, grand, ms_s, ms_i, ms_r) < LEVEL).mean())
    assert size <= _size_bound(reps), (size, LEVEL)


def _binary_p_values(k: int, n: int, reps: int, chunk: int, sd_seed: float, seed: int) -> np.ndarray:
    """p of H0 on two models' 0/1 correctness on n items, k paired seeds, no true difference: item
    difficulty shared, a model-specific item effect ±u/2 and seed effects on each side."""
    rng = np.random.default_rng(seed)
    p = []
    for _ in range(reps // chunk):
        difficulty = rng.normal(0, 1.5, (chunk, 1, n))
        own = rng.normal(0, 0.5, (chunk, 1, n))
        a = rng.random((chunk, k, n)) < expit(1.2 + difficulty + own / 2 + rng.normal(0, sd_seed, (chunk, k, 1)))
        b = rng.random((chunk, k, n)) < expit(1.2 + difficulty - own / 2 + rng.normal(0, sd_seed, (chunk, k, 1)))
        d = a.astype(np.float32) - b
        with np.errstate(divide="ignore", invalid="ignore"):      # a table of zeros: p is NaN, not decided
            p.append(_p_values(k, n, d.mean(axis=(1, 2)), *mean_squares(d)))
    return np.concatenate(p)


@pytest.mark.parametrize("k, n, reps, chunk, sd_seed, seed", [
    (3, 2400, 4000, 500, 0.3, 11),
    (3, 240, 24_000, 4000, 0.05, 13),   # two of three seeds' differences tie on ~9 % of rows
])
def test_the_size_at_the_holm_level_on_binary_correctness(k, n, reps, chunk, sd_seed, seed):
    size = float((_binary_p_values(k, n, reps, chunk, sd_seed, seed) < LEVEL).mean())
    assert size <= _size_bound(reps), (size, LEVEL)


def test_a_seed_only_interval_undercovers_when_items_matter():
    # The reason the item component exists: with a fixed test set per experiment, the paired-seed
    # t interval ignores the item variance and misses the population effect far too often.
    rng = np.random.default_rng(5)
    delta, hits, sims = 1.5, 0, 1000
    for _ in range(sims):
        d = delta + rng.normal(0, 0.05, size=(3, 1)) + rng.normal(0, 3.0, size=(1, 200)) + rng.normal(0, 2.0, size=(3, 200))
        low, high = seed_estimate(d.mean(axis=1)).interval()
        hits += low <= delta <= high
    assert hits / sims < 0.8


# ---- power ---------------------------------------------------------------------------------------

def test_power_matches_the_noncentral_t_and_grows_with_seeds():
    comp = Components(seed=4.0, item=0.0, residual=0.0, n_items=1)
    # K seeds: se = 2/√K, df K−1; power of a two-sided 5 % test at Δ = 2 is the noncentral-t tail.
    k = 10
    ncp, crit = 2.0 / (2.0 / math.sqrt(k)), scipy_stats.t.ppf(0.975, k - 1)
    expected = scipy_stats.nct.sf(crit, k - 1, ncp) + scipy_stats.nct.cdf(-crit, k - 1, ncp)
    assert power(comp, k, 2.0, 0.05) == pytest.approx(expected)
    assert power(comp, 5, 2.0, 0.05) < power(comp, 10, 2.0, 0.05) < power(comp, 20, 2.0, 0.05)
    needed = seeds_for_power(comp, 2.0, 0.05)
    assert power(comp, needed, 2.0, 0.05) >= 0.8 > power(comp, needed - 1, 2.0, 0.05)


def test_power_names_the_seeds_even_when_they_are_many():
    # seed SD 9 against δ = 1 at α/16 (Holm's first step over 16 rows): about (z·9)² ≈ 1,000 seeds.
    comp = Components(seed=81.0, item=0.0, residual=0.0, n_items=1)
    alpha = 0.05 / 16
    needed = seeds_for_power(comp, 1.0, alpha)
    assert needed is not None and needed > 200
    assert power(comp, needed, 1.0, alpha) >= 0.8 > power(comp, needed - 1, 1.0, alpha)
    z = scipy_stats.norm.ppf(1 - alpha / 2) + scipy_stats.norm.ppf(0.8)
    assert needed == pytest.approx((z * 9.0) ** 2, rel=0.02)


def test_power_is_unreachable_by_seeds_when_the_test_items_limit_it():
    comp = Components(seed=0.1, item=400.0, residual=1.0, n_items=100)   # σ_i²/N = 4: se ≥ 2 at any K
    assert seeds_for_power(comp, 1.0, 0.05) is None


def test_tost_power_reaches_its_target():
    comp = Components(seed=1.0, item=0.0, residual=0.0, n_items=1)
    needed = seeds_for_power(comp, 1.0, 0.05, equivalence=True)
    assert needed is not None and power(comp, needed, 1.0, 0.05, equivalence=True) >= 0.8


def test_power_is_finite_where_the_noncentral_lower_tail_returns_nan():
    # b0b3310 added nct.cdf(-crit, df, ncp), NaN once ncp ≳ 6 in scipy 1.17: NaN >= 0.8 is False, so
    # the search answered "not by seeds" (None) here. Both tails as upper tails: 53 seeds.
    comp = Components(seed=0.0087**2 + 0.05 / 240, item=0.00024, residual=0.05, n_items=240)
    alpha = 0.05 / 16
    assert all(math.isfinite(power(comp, k, 0.01, alpha)) for k in (2, 10, 53, 500, 10**6))
    assert seeds_for_power(comp, 0.01, alpha) == 53
    assert power(comp, 53, 0.01, alpha) >= 0.8 > power(comp, 52, 0.01, alpha)


def test_power_is_exact_in_both_tails():
    # A negative effect has the power of its mirror image, and the two-sided power adds both tails.
    comp = Components(seed=4.0, item=0.0, residual=0.0, n_items=1)
    k, crit = 6, scipy_stats.t.ppf(1 - 0.01 / 2, 5)
    ncp = 1.5 / math.sqrt(4.0 / k)
    expected = scipy_stats.nct.sf(crit, 5, ncp) + scipy_stats.nct.sf(crit, 5, -ncp)
    assert power(comp, k, 1.5, 0.01) == pytest.approx(expected)
    assert power(comp, k, -1.5, 0.01) == pytest.approx(expected)


def test_power_raises_instead_of_returning_nan(monkeypatch):
    monkeypatch.setattr(scipy_stats.nct, "sf", lambda *a, **k: float("nan"))
    with pytest.raises(ArithmeticError, match="numerical failure"):
        power(Components(seed=1.0, item=0.0, residual=0.0, n_items=1), 5, 1.0, 0.05)


def test_the_safeguard_effect_is_the_lower_end_of_the_60_percent_interval():
    est = Estimate(mean=-3.0, se=1.0, df=9.0, n_seeds=10, n_items=None, variance="seeds")
    assert safeguard_effect(est) == pytest.approx(3.0 - scipy_stats.t.ppf(0.8, 9))
    assert safeguard_effect(Estimate(0.5, 1.0, 9.0, 10, None, "seeds")) is None   # the CI reaches 0
