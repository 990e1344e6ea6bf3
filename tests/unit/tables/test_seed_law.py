"""The seed-law simulation (issue 52): a Rasch fit that reproduces a family's seeds and items, and a
simulation of the claims' own test under a law with a known answer — the size holds on normal seed
effects and the simulation catches a test that drops the seed term."""

import numpy as np
import pytest
from scipy.special import expit

from argent.tables import seed_law
from argent.tables.seed_law import SeedLaw, fit_law, holm_decisions, null_rates, null_shift, simulate_p_values


def _table(rng, theta, u):
    return (rng.random((len(u), len(theta))) < expit(theta[None, :] + u[:, None])).astype(np.int8)


def test_the_fit_reproduces_every_seed_and_item_and_recovers_the_seed_law():
    rng = np.random.default_rng(0)
    theta, u = rng.normal(2.0, 1.5, 2400), rng.normal(0.0, 0.4, 40)
    table = _table(rng, theta, u)
    law = fit_law(table)
    p = expit(law.theta[None, :] + law.u[:, None])
    assert np.abs(p.mean(axis=1) - table.mean(axis=1)).max() < 1e-5   # the smoothing moves a margin by < 1/(2N)
    assert np.corrcoef(law.u, u)[0, 1] > 0.97          # the seed effects, up to the items' noise
    assert law.u.std() == pytest.approx(u.std(), rel=0.15)


def test_the_null_shift_reaches_its_target_accuracy():
    law = SeedLaw(np.linspace(-1, 4, 300), np.array([-0.5, 0.0, 0.4]))
    shift = null_shift(law, 0.9)
    assert law.mean_accuracy(shift) == pytest.approx(0.9, abs=1e-9)


def _laws(rng, n=240, k0=40):
    """Two families on one test set: normal seed effects, shared items, near 85 %."""
    theta = rng.normal(2.2, 1.2, n)
    return {"a": SeedLaw(theta + rng.normal(0, 0.3, n), rng.normal(0, 0.35, k0)),
            "b": SeedLaw(theta, rng.normal(0, 0.35, k0))}


def test_the_size_holds_on_normal_seed_effects():
    rng = np.random.default_rng(1)
    p, mean = simulate_p_values(_laws(rng), [("a", "b")], seeds=5, reps=3000, rng=rng)
    (rates,), family = null_rates(p, mean, 0.05)
    assert rates.holds, rates.as_dict()
    assert rates.rate > 0.03        # not a test that never rejects: a valid test uses its level
    assert family.rate == rates.rate


def test_the_simulation_catches_a_test_that_drops_the_seed_term(monkeypatch):
    real = seed_law.crossed_variance_and_df

    def items_only(k, n, ms_s, ms_i, ms_r):   # the fault: Var(Δ̂) from the items' noise alone
        variance, df = real(k, n, ms_s, ms_i, ms_r)
        return np.maximum(0.0, np.asarray(ms_i) - np.asarray(ms_r)) / (k * n) + np.asarray(ms_r) / (k * n), df * 0 + k * n

    monkeypatch.setattr(seed_law, "crossed_variance_and_df", items_only)
    rng = np.random.default_rng(1)
    p, mean = simulate_p_values(_laws(rng), [("a", "b")], seeds=5, reps=3000, rng=rng)
    (rates,), _ = null_rates(p, mean, 0.05)
    assert not rates.holds, rates.as_dict()


def test_the_measured_difference_is_decided_with_power_and_holm_steps_down():
    rng = np.random.default_rng(2)
    laws = _laws(rng)
    laws["a"] = SeedLaw(laws["a"].theta + 1.0, laws["a"].u)          # A truly better, by ~ 3 seed SDs
    p, _ = simulate_p_values(laws, [("a", "b")], seeds=8, reps=400, rng=rng, null=False)
    assert (p[:, 0] <= 0.05).mean() > 0.9
    # Holm over a family of 3 whose other rows never decide: the first step is α/3
    grid = np.array([[0.01, 0.02, 0.5], [0.02, 0.04, 0.04], [0.001, 0.03, 0.2]])
    assert holm_decisions(grid, 0.05).tolist() == [[True, True, False], [False, False, False], [True, False, False]]
    assert holm_decisions(grid[:, :1], 0.05, family_size=13)[:, 0].tolist() == [False, False, True]
