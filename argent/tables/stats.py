"""Seed statistics of the table cells: mean ± 95 % Student-t half-width over seeds.

How cells are computed is written up in docs/statistics.md; the claims' paired estimates, tests
and verdicts live in argent/tables/inference.py and claims.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from scipy import stats as scipy_stats

CONFIDENCE = 0.95


@dataclass(frozen=True)
class Summary:
    """Mean and the half-width of its two-sided t confidence interval over ``n`` values.

    ``half_width`` is None when n < 2 (one value has no spread, hence no interval).
    """

    mean: float | None
    half_width: float | None
    n: int
    std: float | None = None

    @property
    def low(self) -> float | None:
        return None if self.mean is None or self.half_width is None else self.mean - self.half_width

    @property
    def high(self) -> float | None:
        return None if self.mean is None or self.half_width is None else self.mean + self.half_width


def t_quantile(n: int, confidence: float = CONFIDENCE) -> float:
    """The two-sided Student-t critical value for a mean over ``n`` values (n − 1 degrees of freedom)."""
    if n < 2:
        raise ValueError(f"a t interval needs n >= 2 values, got n={n}")
    return float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1))


def mean_ci(values: Iterable[float | None], confidence: float = CONFIDENCE) -> Summary:
    """Mean ± t_{(1+conf)/2, n−1} · s / √n over the non-null values (s: sample std, ddof 1)."""
    vals = [float(v) for v in values if v is not None and not math.isnan(v)]
    n = len(vals)
    if n == 0:
        return Summary(None, None, 0)
    mean = math.fsum(vals) / n
    if n == 1:
        return Summary(mean, None, 1)
    std = math.sqrt(math.fsum((v - mean) ** 2 for v in vals) / (n - 1))
    return Summary(mean, t_quantile(n, confidence) * std / math.sqrt(n), n, std)


def fmt_summary(s: Summary, scale: float = 1.0, digits: int = 2, signed: bool = False) -> str:
    """``12.34 ± 1.20 (n=3)``; ``12.34 (n=1)`` without an interval; ``n/a`` without a value."""
    if s.mean is None or s.n == 0:
        return "n/a"
    sign = "+" if signed else ""
    text = f"{s.mean * scale:{sign}.{digits}f}"
    if s.half_width is not None:
        text += f" ± {s.half_width * scale:.{digits}f}"
    return f"{text} (n={s.n})"
