"""Error control over a family of rows: Holm's step-down adjusted p (family-wise error) and the
Benjamini–Hochberg q (false discovery rate). docs/statistics.md, "Families and corrections".

Both take the raw p-values of one family in any order and return the adjusted values in the same
order; a None (a row with no test) stays None and does not count towards the family size.

- Holm (1979), "A simple sequentially rejective multiple test procedure", Scand. J. Statist. 6:
  sort ascending, p̃₍ᵢ₎ = max_{j ≤ i} min(1, (m − j + 1) p₍ⱼ₎); reject where p̃ ≤ α. Controls the
  probability of one or more false rejections at α under any dependence.
- Benjamini & Hochberg (1995), "Controlling the false discovery rate", JRSS B 57: sort ascending,
  q₍ᵢ₎ = min_{j ≥ i} min(1, m p₍ⱼ₎ / j); reject where q ≤ α. Controls the expected share of false
  rejections among rejections at α (independent or positively dependent tests).
"""

from __future__ import annotations

from collections.abc import Sequence


def _present(p_values: Sequence[float | None]) -> list[tuple[int, float]]:
    out = []
    for i, p in enumerate(p_values):
        if p is None:
            continue
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"p-value #{i} is {p!r}; a p-value lies in [0, 1]")
        out.append((i, float(p)))
    return out


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values, in the input order (None where the input is None)."""
    present = sorted(_present(p_values), key=lambda ip: ip[1])
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (i, p) in enumerate(present):
        running = max(running, min(1.0, (m - rank) * p))   # the step-down max keeps the order monotone
        adjusted[i] = running
    return adjusted


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg q-values, in the input order (None where the input is None)."""
    present = sorted(_present(p_values), key=lambda ip: ip[1])
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    running = 1.0
    for rank in range(m - 1, -1, -1):                     # step-up: the min over the larger ranks
        i, p = present[rank]
        running = min(running, m * p / (rank + 1))
        adjusted[i] = min(1.0, running)
    return adjusted
