"""What kind of number a metric (or a count) is, so that a reader can check its range: the vocabulary the protocol
records (argent/protocols/registry.py) declare each metric with, and the tables' readers check other numbers with
(run summaries, probe results). Pure and torch-free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["ANGLE", "BIN_EDGES", "COUNT", "COUNTS", "EDGES", "EXACT_INTEGERS", "FRACTION", "LARGEST", "NORM", "NORMS",
           "REAL", "TAU", "Kind"]

# Above any value argent measures (seconds, megabytes, tree edges, norms): a sum or a mean over any
# number of files stays finite, so 1e308 can never reach a cell as "inf".
LARGEST = 1e15
EXACT_INTEGERS = 2**53  # JSON numbers are doubles to most readers: integers above this are not exact


@dataclass(frozen=True)
class Kind:
    """A range of values, named as an error message says it."""

    name: str
    low: float
    high: float
    integer: bool = False
    many: bool = False  # a list of such values (a profile, a histogram): no table cell

    def allows(self, value: float) -> bool:
        return math.isfinite(value) and self.low <= value <= self.high and (not self.integer or isinstance(value, int))


FRACTION = Kind("a fraction in [0, 1]", 0.0, 1.0)
TAU = Kind("a rank correlation in [-1, 1]", -1.0, 1.0)
EDGES = Kind(f"a number of tree edges in [0, {LARGEST:g}]", 0.0, LARGEST)
ANGLE = Kind("an angle in [0, pi] radians", 0.0, math.pi)
NORM = Kind(f"a norm in [0, {LARGEST:g}]", 0.0, LARGEST)
COUNT = Kind("a count (an integer in [0, 2^53])", 0, EXACT_INTEGERS, integer=True)
NORMS = Kind(f"a list of norms in [0, {LARGEST:g}]", 0.0, LARGEST, many=True)
COUNTS = Kind("a list of counts (integers in [0, 2^53])", 0, EXACT_INTEGERS, integer=True, many=True)
REAL = Kind(f"a finite number in [-{LARGEST:g}, {LARGEST:g}]", -LARGEST, LARGEST)
# numpy's histogram of equal values spans value ± 0.5, so a norm histogram's edges may be negative
BIN_EDGES = Kind(f"a list of histogram bin edges in [-{LARGEST:g}, {LARGEST:g}]", -LARGEST, LARGEST, many=True)
