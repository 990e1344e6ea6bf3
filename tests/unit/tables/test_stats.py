"""argent.tables.stats: the t interval against a hand computation, pairing, verdicts."""

import math

import pytest

from argent.tables.stats import fmt_summary, mean_ci, t_quantile


def test_ci_matches_a_hand_computation():
    # values 1, 2, 6: mean 3, sample variance ((−2)² + (−1)² + 3²)/2 = 7, s = √7;
    # t_{0.975, 2} = 4.302652729911275 (printed t tables: 4.303); half-width = t·s/√3.
    s = mean_ci([1.0, 2.0, 6.0])
    assert s.n == 3 and s.mean == pytest.approx(3.0)
    assert s.std == pytest.approx(math.sqrt(7.0))
    assert s.half_width == pytest.approx(4.302652729911275 * math.sqrt(7.0) / math.sqrt(3.0), rel=1e-9)
    assert (s.low, s.high) == pytest.approx((3.0 - s.half_width, 3.0 + s.half_width))


def test_t_quantile_values_from_tables():
    assert t_quantile(2) == pytest.approx(12.706, abs=1e-3)
    assert t_quantile(5) == pytest.approx(2.776, abs=1e-3)
    assert t_quantile(31) == pytest.approx(2.042, abs=1e-3)
    with pytest.raises(ValueError, match="n >= 2"):
        t_quantile(1)


def test_n1_has_no_interval_and_nulls_are_not_counted():
    s = mean_ci([0.5, None, float("nan")])
    assert (s.mean, s.half_width, s.n) == (0.5, None, 1)
    assert fmt_summary(s, 100) == "50.00 (n=1)"
    assert mean_ci([]).n == 0 and fmt_summary(mean_ci([None])) == "n/a"
    assert fmt_summary(mean_ci([1.0, 2.0, 6.0])) == f"3.00 ± {mean_ci([1.0, 2.0, 6.0]).half_width:.2f} (n=3)"


def test_paired_ci_is_narrower_than_unpaired_when_seeds_share_noise():
    # A seed effect shared by both variants cancels in the per-seed difference.
    a = [0.50, 0.70, 0.90]
    b = [0.45, 0.66, 0.84]
    paired = mean_ci(x - y for x, y in zip(a, b))
    assert paired.low > 0  # decisive, although the two marginal CIs overlap heavily
    assert mean_ci(a).low < mean_ci(b).high
