"""The size of the claims' test on the recipe's own seed law (docs/statistics.md, "The size on the
recipe's own seeds").

The claims' interval (argent/tables/inference.py) is valid in the tail for roughly normal seed effects.
Whether the recipe's seeds are such is a measurement: ``fit_law`` reads a family's seeds × items table of
0/1 correctness on a fixed test set (many seeds of one recipe, config/headline.yaml) as a Rasch model,

    P(item i right on seed k) = σ(θ_i + u_k),

with θ_i the item's logit and u_k the seed's effect, fitted by alternating Newton steps so that every
seed's accuracy and every item's mean over seeds are reproduced. The seed effects u are the family's
measured seed law, as it is: skew, heavy tails, the ceiling's compression and the spread that differs
between families stay in it; the θ keep which items are hard.

``simulate_rows`` then draws the design's K seeds from the measured seeds (with replacement, one seed
index for every family at once, so a paired seed keeps what it shares across families), shifts each
family's θ by a constant so that all compared families have the same expected accuracy (the null, at
their mean), draws the 0/1 tables, and decides every row with argent's own estimate (``mean_squares``,
``crossed_variance_and_df``: the seeds × items interval the claims table uses). What it returns: each
row's rejection rate at a level (the size), split by the sign of the estimate, and the family-wise error
of Holm over the rows (any rejection under the complete null), with Monte Carlo SEs. Pure numpy/scipy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as scipy_stats
from scipy.special import expit, logit

from argent.tables.inference import crossed_variance_and_df, mean_squares

FIT_ROUNDS = 200     # alternating Newton rounds; the fit's largest error is checked, not assumed


@dataclass(frozen=True)
class SeedLaw:
    """One family's law on a fixed test set: item logits θ (N,) and seed effects u (K0,)."""

    theta: np.ndarray
    u: np.ndarray

    def probabilities(self, seeds: np.ndarray, shift: float = 0.0) -> np.ndarray:
        """P(right) for the drawn seed indices (..., K) on every item: (..., K, N)."""
        return expit(self.theta + shift + self.u[seeds][..., None])

    def mean_accuracy(self, shift: float = 0.0) -> float:
        """The expected accuracy over the measured seeds and the items."""
        return float(expit(self.theta[None, :] + shift + self.u[:, None]).mean())


def fit_law(correct: np.ndarray, rounds: int = FIT_ROUNDS, tolerance: float = 1e-6) -> SeedLaw:
    """The Rasch fit of a K0 × N table of 0/1 correctness (module docstring). The table is pulled
    1/(2·K0·N) towards ½ first, so that an item every seed gets right (or none) has a finite logit while
    the seed and item margins stay consistent; the seed effects are centred at 0 (the model is defined
    up to a constant moved between θ and u). Raises when the fit does not reproduce the margins."""
    x = np.asarray(correct, dtype=float)
    k0, n = x.shape
    eps = 0.5 / (k0 * n)
    x = x * (1 - 2 * eps) + eps
    seed_acc, item_acc = x.mean(axis=1), x.mean(axis=0)
    theta, u = logit(item_acc), np.zeros(k0)
    for _ in range(rounds):
        p = expit(theta[None, :] + u[:, None])
        u += (seed_acc - p.mean(axis=1)) / np.maximum((p * (1 - p)).mean(axis=1), 1e-12)
        p = expit(theta[None, :] + u[:, None])
        theta += (item_acc - p.mean(axis=0)) / np.maximum((p * (1 - p)).mean(axis=0), 1e-12)
        centre = u.mean()
        u, theta = u - centre, theta + centre
    p = expit(theta[None, :] + u[:, None])
    error = max(np.abs(p.mean(axis=1) - seed_acc).max(), np.abs(p.mean(axis=0) - item_acc).max())
    if error > tolerance:
        raise ArithmeticError(f"the seed-law fit did not converge: margins off by {error:.2e}")
    return SeedLaw(theta, u)


def null_shift(law: SeedLaw, target: float) -> float:
    """The constant added to θ that gives ``law`` the expected accuracy ``target`` (bisection)."""
    low, high = -20.0, 20.0
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if law.mean_accuracy(mid) < target else (low, mid)
    return (low + high) / 2


def row_p_values(diffs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(two-sided p, estimate) of the claims' seeds × items test on R stacked K × N difference tables."""
    d = np.asarray(diffs, dtype=np.float64)
    k, n = d.shape[-2:]
    ms_s, ms_i, ms_r = mean_squares(d)
    variance, df = crossed_variance_and_df(k, n, ms_s, ms_i, ms_r)
    mean = d.mean(axis=(-2, -1))
    se = np.sqrt(np.asarray(variance))
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(se > 0, np.abs(mean) / np.where(se > 0, se, 1.0), np.where(mean == 0, 0.0, np.inf))
    return 2 * scipy_stats.t.sf(t, df), mean


@dataclass(frozen=True)
class Rates:
    """Rejection rates of one row (or of the family) over ``reps`` null samples, with Monte Carlo SEs."""

    level: float
    reps: int
    rejected: int
    rejected_positive: int | None = None   # a row's rejections with an estimate > 0 (A above B)

    @property
    def rate(self) -> float:
        return self.rejected / self.reps

    @property
    def se(self) -> float:
        return math.sqrt(max(self.rate * (1 - self.rate), 1e-12) / self.reps)

    @property
    def bound(self) -> float:
        """Nominal + 3 Monte Carlo SEs at the nominal rate: the size holds when ``rate`` is under it."""
        return self.level + 3 * math.sqrt(self.level * (1 - self.level) / self.reps)

    @property
    def holds(self) -> bool:
        return self.rate <= self.bound

    def as_dict(self) -> dict[str, float | int | bool]:
        out: dict[str, float | int | bool] = {"level": self.level, "reps": self.reps, "rate": self.rate,
                                              "mc_se": self.se, "bound": self.bound, "holds": self.holds}
        if self.rejected_positive is not None:
            out.update(rejected_positive=self.rejected_positive,
                       rejected_negative=self.rejected - self.rejected_positive)
        return out


def simulate_p_values(laws: dict[str, SeedLaw], rows: Sequence[tuple[str, str]], seeds: int, reps: int,
                      rng: np.random.Generator, null: bool = True, chunk: int = 100) -> tuple[np.ndarray, np.ndarray]:
    """(p, estimate), each (reps, rows): the claims' test of every row on ``reps`` simulated runs of the design.

    Every replicate draws ``seeds`` seed indices shared by all families (a paired seed) and each family's
    0/1 table; with ``null`` each family's θ is first shifted so that all have the same expected accuracy
    (the mean of theirs), otherwise the families keep their measured accuracies (the power)."""
    names = sorted({name for row in rows for name in row})
    target = float(np.mean([laws[name].mean_accuracy() for name in names]))
    shifts = {name: null_shift(laws[name], target) if null else 0.0 for name in names}
    k0 = min(len(laws[name].u) for name in names)
    p_out, mean_out = np.empty((reps, len(rows))), np.empty((reps, len(rows)))
    done = 0
    while done < reps:
        r = min(chunk, reps - done)
        idx = rng.integers(0, k0, size=(r, seeds))
        tables = {name: (rng.random((r, seeds, len(laws[name].theta)), dtype=np.float32)
                         < laws[name].probabilities(idx, shifts[name])).astype(np.int8) for name in names}
        for j, (a, b) in enumerate(rows):
            p_out[done:done + r, j], mean_out[done:done + r, j] = row_p_values((tables[a] - tables[b]).astype(np.float32))
        done += r
    return p_out, mean_out


def null_rates(p: np.ndarray, mean: np.ndarray, level: float) -> tuple[list[Rates], Rates]:
    """Each row's size at ``level`` and the rows' family-wise error under the complete null (any row's
    p ≤ ``level``: Holm's first step rejects exactly then; nominal ``level`` × the number of rows)."""
    hit = p <= level
    rows = [Rates(level, len(p), int(hit[:, j].sum()), int((hit[:, j] & (mean[:, j] > 0)).sum()))
            for j in range(p.shape[1])]
    return rows, Rates(min(1.0, level * p.shape[1]), len(p), int(hit.any(axis=1).sum()))


def calibration_factor(p: np.ndarray, level: float, grid: Sequence[float] | None = None) -> float:
    """The largest factor c (on ``grid``, default 1, 0.99, ..., 0.01) at which every row's null rejection
    rate at c × ``level`` is at most ``level``: the claims' calibrated level where the measured seed law
    makes the test liberal (1.0 where it already holds). ``p`` is (reps, rows) of null p-values."""
    grid = np.round(np.arange(1.0, 0.0, -0.01), 2) if grid is None else np.asarray(grid)
    for c in grid:
        if (p <= c * level).mean(axis=0).max() <= level:
            return float(c)
    return float(grid[-1])


def holm_decisions(p: np.ndarray, alpha: float, family_size: int | None = None) -> np.ndarray:
    """(reps, rows) booleans: the rows Holm decides at ``alpha`` when these rows are the first of a family
    of ``family_size`` (default: just these rows; the other rows' p taken as 1, never decided first)."""
    m = p.shape[1] if family_size is None else family_size
    order = np.argsort(p, axis=1)
    sorted_p = np.take_along_axis(p, order, axis=1)
    steps = alpha / (m - np.arange(p.shape[1]))
    passed = np.cumprod(sorted_p <= steps, axis=1).astype(bool)
    decided = np.zeros_like(passed)
    np.put_along_axis(decided, order, passed, axis=1)
    return decided
