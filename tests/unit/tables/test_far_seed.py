"""A seed far from the others (issue 43): the claims rule no longer refuses a row on its seeds; it
flags a row whose compared variants' own seeds show one far seed. Here: the flag's detection and
false-flag rates, ties that cannot raise it, the bad-seed mixture that no rule on the seeds can see,
and the row's decision (nothing refused, so the power analysis is the chance of a decision).

``python -m tests.unit.tables.test_far_seed`` prints the detection table of docs/statistics.md."""

import math

import numpy as np
import polars as pl
import pytest
from scipy import stats as scipy_stats
from scipy.special import expit

from argent.plan.groups import Plan
from argent.tables import claims as claims_module
from argent.tables.claims import EXPLORATORY, PRIMARY, decide, evaluate_claim, far_seed_flag, header_sentences
from argent.tables.claims_spec import Claim, ClaimMetric, ClaimsSpec, Margin, MetricSpec
from argent.tables.inference import (
    FAR_SEED_LEVEL,
    SATTERTHWAITE_BELOW,
    Components,
    far_seed,
    far_seed_p,
    item_noise,
    mean_squares,
    seeds_for_power,
)

LEVEL = 0.05 / 16                      # Holm's first step over 16 primary rows
N_ITEMS = 240


def _upper(rate: float, reps: int) -> float:
    return rate + 3 * math.sqrt(rate * (1 - rate) / reps)


def _lower(rate: float, reps: int) -> float:
    return rate - 3 * math.sqrt(rate * (1 - rate) / reps)


# ---- the flag on one variant's seeds -------------------------------------------------------------

def test_a_seed_far_from_the_others_is_named():
    values = [27.9, 12.0, 12.1, 11.4, 12.8]                  # CLIP's seed 0 against its other seeds
    rest = np.array(values[1:])
    t = (27.9 - rest.mean()) / (rest.std(ddof=1) * math.sqrt(1 + 1 / 4))
    index, p = far_seed(values, FAR_SEED_LEVEL)
    assert index == 0 and p == pytest.approx(5 * 2 * scipy_stats.t.sf(t, 3))
    assert far_seed([1.0, 2.0, 3.0, 2.5, 1.5], FAR_SEED_LEVEL) is None
    assert far_seed([1.0, 2.0], FAR_SEED_LEVEL) is None                   # K < 3: nothing to compare
    # the items' noise enters at a tie only
    assert far_seed_p(np.array([values]), 100.0) == pytest.approx(far_seed_p(np.array([values])))


def test_a_tie_is_judged_against_the_items_noise():
    # d3e05e3 gave two equal values a leave-one-out SD of 0 and an infinite t: any third value was far.
    noise = 0.25 / N_ITEMS                                   # a 0/1 score near 50 % on 240 items
    assert far_seed([120 / 240, 120 / 240, 131 / 240], FAR_SEED_LEVEL, noise) is None
    assert far_seed([0.5, 0.5, 0.6], FAR_SEED_LEVEL) is None                # no item noise: no evidence
    assert far_seed([0.1, 0.1, 0.1, 0.3], FAR_SEED_LEVEL) is None           # (0.1·3)/3 ≠ 0.1: round-off, no spread
    # three tied seeds and a fourth 40 points off, 11 item-noise SDs: far by any measure
    t = 0.4 / math.sqrt(noise * (1 + 1 / 3))
    assert far_seed([0.5, 0.5, 0.5, 0.9], FAR_SEED_LEVEL, noise) == (3, pytest.approx(4 * 2 * scipy_stats.t.sf(t, 2)))


def _counts(rng: np.random.Generator, reps: int, k: int, sd_seed: float, shift: float) -> tuple[np.ndarray, np.ndarray]:
    """One variant's per-seed accuracy on 240 items (0/1 correctness: item difficulty, seed effects on the
    logit), seed 0 moved by ``shift`` SDs of a seed's accuracy, to whole counts; and ``item_noise`` per row."""
    logit = 0.5 + rng.normal(0, 1.5, (reps, 1, N_ITEMS)) + rng.normal(0, sd_seed, (reps, k, 1))
    correct = (rng.random((reps, k, N_ITEMS)) < expit(logit)).astype(np.float32)
    values = correct.mean(axis=-1).astype(float)
    sd = math.sqrt(float(values.var(axis=-1, ddof=1).mean()))
    values[:, 0] += np.round(shift * sd * N_ITEMS) / N_ITEMS
    return values, mean_squares(correct)[2] / N_ITEMS


def _row_flags(a: np.ndarray, b: np.ndarray, noise_a=0.0, noise_b=0.0) -> np.ndarray:
    """``far_seed_flag``'s rule on R rows at once: Bonferroni over both variants' seeds."""
    p = np.minimum(far_seed_p(a, noise_a).min(axis=-1), far_seed_p(b, noise_b).min(axis=-1))
    return 2 * p < FAR_SEED_LEVEL


def test_the_vectorised_rule_is_the_rows_rule():
    rng = np.random.default_rng(19)
    a, b = _counts(rng, 300, 5, 0.05, 0.0), _counts(rng, 300, 5, 0.05, 0.0)
    a[0][::3, 0] += 0.1
    flags = _row_flags(a[0], b[0], a[1], b[1])
    rows = [far_seed_flag({"a": dict(enumerate(a[0][r])), "b": dict(enumerate(b[0][r]))}, {"a": a[1][r], "b": b[1][r]})
            for r in range(300)]
    assert [f is not None for f in rows] == list(flags) and 10 < flags.sum() < 150
    assert item_noise(np.eye(3)) == pytest.approx(mean_squares(np.eye(3))[2] / 3)


@pytest.mark.parametrize("k, sd_seed", [(3, 0.0), (3, 0.1), (5, 0.05)])
def test_tied_counts_raise_no_false_flag(k, sd_seed):
    # Normal seeds, 0/1 correctness on 240 items: two of three seeds tie on 5-10 % of rows.
    # d3e05e3's leave-one-out test flagged 20-23 % of these rows at K = 3.
    reps = 8000
    rng = np.random.default_rng(k * 31 + int(sd_seed * 100))
    (va, noise_a), (vb, noise_b) = _counts(rng, reps, k, sd_seed, 0.0), _counts(rng, reps, k, sd_seed, 0.0)
    tied = (va[:, :, None] == va[:, None, :]).sum(axis=(1, 2)) > k
    assert k > 3 or tied.mean() > 0.03                       # the ties are there to be tested
    flags = _row_flags(va, vb, noise_a, noise_b)
    assert float(flags.mean()) <= _upper(FAR_SEED_LEVEL, reps), flags.mean()


def _flag_rate(k: int, shift: float, reps: int, rng: np.random.Generator, sd_seed: float | None = None) -> float:
    """Share of rows flagged when A's seed 0 is shifted by ``shift`` seed SDs and B's seeds are normal:
    normal seed values, or 0/1 counts on 240 items with seed SD ``sd_seed`` on the logit."""
    if sd_seed is None:
        a, b = rng.normal(0, 1, (reps, k)), rng.normal(0, 1, (reps, k))
        a[:, 0] += shift
        return float(_row_flags(a, b).mean())
    (a, noise_a), (b, noise_b) = _counts(rng, reps, k, sd_seed, shift), _counts(rng, reps, k, sd_seed, 0.0)
    return float(_row_flags(a, b, noise_a, noise_b).mean())


def test_the_flag_detects_a_4_sd_bad_seed_at_8_seeds_and_rarely_flags_normal_seeds():
    # Measured (docs/statistics.md): 34 % on normal values, 33 % on 240-item counts whose items give
    # ~70 % of a seed's variance; normal seeds: 4.8 %.
    reps = 20_000
    rng = np.random.default_rng(23)
    assert _flag_rate(8, 4.0, reps, rng) >= 0.25
    assert _flag_rate(8, 0.0, reps, rng) <= _upper(FAR_SEED_LEVEL, reps)
    assert _flag_rate(8, 4.0, 2000, rng, sd_seed=0.1) >= 0.25


def detection_table(reps: int = 40_000, count_reps: int = 8000) -> str:
    """The flag's rates of docs/statistics.md: a row flagged when A holds one seed shifted by 2, 3 or 4
    seed SDs ("normal": no shift, the false-flag rate), B normal; normal values, then 0/1 counts on
    240 items with seed SD 0.1 on the logit (items give ~70 % of a seed's variance)."""
    rng = np.random.default_rng(29)
    lines = ["| seeds' values | K | normal | 2 SD | 3 SD | 4 SD |", "|---|---|---|---|---|---|"]
    for what, sd_seed, n in (("normal", None, reps), ("240-item counts", 0.1, count_reps)):
        for k in (3, 5, 8, 10):
            rates = [_flag_rate(k, shift, n, rng, sd_seed) for shift in (0.0, 2.0, 3.0, 4.0)]
            lines.append(f"| {what} | {k} | " + " | ".join(f"{r:.1%}" for r in rates) + " |")
    return "\n".join(lines)


# ---- the bad-seed mixture ------------------------------------------------------------------------

def test_the_bad_seed_mixture_misleads_through_samples_that_hold_no_bad_seed():
    # Each seed's difference is shifted by 4 SD with probability 0.2; H0: the mixture's mean is 0.
    # The t test's size at α/16 is 5x nominal, and almost all of it comes from samples holding no
    # bad seed (tight seeds around the good seeds' mean, −0.8 SD): no rule on those seeds sees it.
    # This pins the limitation docs/statistics.md states; a rule that holds here would change it.
    k, reps = 8, 200_000
    rng = np.random.default_rng(31)
    bad = rng.random((reps, k)) < 0.2
    d = rng.normal(0, 1, (reps, k)) + 4.0 * bad - 0.2 * 4.0
    p = 2 * scipy_stats.t.sf(np.abs(d.mean(axis=1)) / (d.std(axis=1, ddof=1) / math.sqrt(k)), k - 1)
    false = p < LEVEL
    assert false.mean() > 3 * _upper(LEVEL, reps)
    assert (false & ~bad.any(axis=1)).sum() >= 0.9 * false.sum()
    flagged = _row_flags(d, rng.normal(0, 1, (reps, k)))
    assert (false & flagged).sum() <= 0.1 * false.sum()


# ---- the row's decision --------------------------------------------------------------------------

CLAIM = Claim("c", "T", "A beats B", "g/a", "g/b", (ClaimMetric("zeroshot", None, "better"),), "zeroshot")
SPEC = MetricSpec("hs", "top1")


def _long(a: dict[int, float], b: dict[int, float]) -> pl.DataFrame:
    return pl.DataFrame({"variant": ["g/a"] * len(a) + ["g/b"] * len(b), "size": ["tiny"] * (len(a) + len(b)),
                         "seed": list(a) + list(b), "benchmark": ["hs"] * (len(a) + len(b)),
                         "metric": ["top1"] * (len(a) + len(b)), "value": list(a.values()) + list(b.values())})


def _decided_row(a: dict[int, float], b: dict[int, float], alpha: float, family: str = PRIMARY,
                 items: dict | None = None, long: pl.DataFrame | None = None) -> dict:
    """One claims row through the table's own code (evaluate_claim, then decide with m = 1)."""
    spec = ClaimsSpec([CLAIM], {"zeroshot": [SPEC]}, {"zeroshot": Margin(1.0, "test")}, alpha)
    frame = _long(a, b) if long is None else long
    row = evaluate_claim(CLAIM, CLAIM.metrics[0], SPEC, "tiny", frame, {("g/a", "tiny"), ("g/b", "tiny")},
                         {"g/a": list(a), "g/b": list(b)}, spec, family, Plan({}, {}, {}), items or {})
    return decide([row], spec)[0]


def _items(scores: dict[str, np.ndarray]) -> dict:
    return {("g", variant, "tiny", k, "hs", "top1"): {f"i{i}": float(v) for i, v in enumerate(row)}
            for variant, table in scores.items() for k, row in enumerate(table)}


def test_tied_counts_force_no_refusal():
    # Three seeds, 0/1 correctness on 240 items; A is right on 30, 30 and 36 more items than B, and
    # B's seeds 0 and 1 have equal counts, so two differences tie and A's seeds 0 and 1 tie.
    # d3e05e3 refused this row: the tied pair's leave-one-out SD is 0, the third seed's t infinite.
    rng = np.random.default_rng(37)
    b = np.zeros((3, N_ITEMS))
    for k, right in enumerate((120, 120, 117)):
        b[k, rng.choice(N_ITEMS, right, replace=False)] = 1
    a = b.copy()
    for k, more in enumerate((30, 30, 36)):
        a[k, rng.choice(np.flatnonzero(b[k] == 0), more, replace=False)] = 1
    row = _decided_row(dict(enumerate(a.mean(axis=1))), dict(enumerate(b.mean(axis=1))), 0.05,
                       items=_items({"a": a, "b": b}))
    assert row["variance"] == "seeds+items" and row["p"] < 0.01
    assert row["verdict"] == "reproduced" and row.get("far_seed_flag") is None


def test_a_flagged_row_is_decided_and_names_the_variant_and_seed():
    a = {0: 27.9, 1: 12.0, 2: 12.1, 3: 11.4, 4: 12.8}          # A's seed 0 far from its others
    b = {0: 2.0, 1: 1.1, 2: 2.2, 3: 1.5, 4: 1.9}
    row = _decided_row(a, b, 0.05)
    assert row["far_seed_flag"] == "g/a seed 0" and "g/a's seed 0 is far from its other seeds" in row["note"]
    assert row["verdict"] == "reproduced"


def test_the_power_analysis_is_the_chance_of_a_decision(monkeypatch):
    # At the paired seeds the power analysis says reach 80 % (seed-only rows, normal seeds, α/16),
    # the table's own rule decides at least 80 % − 3 MC SEs of rows. d3e05e3 refused ~5 % of them
    # (its far-seed test on the differences), which the power analysis ignored: 0.76-0.77.
    comp, effect = Components(seed=1.0, item=0.0, residual=0.0, n_items=1), 1.6
    k = seeds_for_power(comp, effect, LEVEL)
    assert k is not None and 6 <= k <= 12
    reps = 4000
    rng = np.random.default_rng(41)
    diffs = effect + rng.normal(0, 1, (reps, k))
    values = {}                                 # the polars frame and look-up are not under test: 1 ms a row
    monkeypatch.setattr(claims_module, "values_by_seed", lambda long, variant, *_: values[variant])
    decided = 0
    for d in diffs:
        values["g/a"], values["g/b"] = dict(enumerate(d)), dict.fromkeys(range(k), 0.0)
        # one exploratory row: BH over one row is its p, so it is decided at α = LEVEL, with no power search
        row = _decided_row(values["g/a"], values["g/b"], LEVEL, EXPLORATORY, long=pl.DataFrame())
        decided += row["verdict"] == "reproduced"
    assert decided / reps >= _lower(0.8, reps), (decided / reps, k)


# ---- the header states the constants and the condition -------------------------------------------

def test_the_header_reads_the_constants_and_states_the_condition():
    text = header_sentences(0.05)
    assert f"under {SATTERTHWAITE_BELOW:.0%} of the variance" in text["variance"]
    assert f"at most {0.05:.0%}" in text["primary_error"] and "normal" in text["primary_error"]
    assert "normal seed effects" in text["variance"] and f"{FAR_SEED_LEVEL:g}" in text["far_seed"]


if __name__ == "__main__":
    print(detection_table())
