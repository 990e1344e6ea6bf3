"""What kind of number each metric of an evaluation JSON is, so that a reader can check its range.

The evaluator states the kinds in every result's ``units`` (``argent.evaluation.runner.UNITS``):
accuracies, recalls, AUC, AP, Jaccard, hierarchical and threshold precision/recall are fractions in
[0, 1]; TIE and LCA are tree edges (>= 0); Kendall τ is in [-1, 1]; counts are integers >= 0; norms
are >= 0. ``PROTOCOL_KINDS`` maps every metric key each protocol writes (the key of
``flatten(metrics, sep="/")``, as the tables name it; the protocols' metric modules in
argent/evaluation/) to its kind, and ``REQUIRED`` names the keys every result of a protocol holds
whatever its options. A protocol registered without an entry here (a toy one in a test) or a file
that names none (hand-written) is only required to hold finite numbers. Pure and torch-free.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["COUNT", "LARGEST", "REAL", "REQUIRED", "Kind", "PROTOCOL_KINDS", "metric_kind", "undefined_by_protocol"]

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

_NORMS = r"(radius|space_norm|unnormalised_norm)/[^/]+"  # analysis: a norm summary per item type
# protocol -> (pattern over the whole flattened key, kind), first match wins
PROTOCOL_KINDS: dict[str, tuple[tuple[re.Pattern[str], Kind], ...]] = {
    protocol: tuple((re.compile(pattern), kind) for pattern, kind in kinds) for protocol, kinds in {
        "zeroshot": ((r"top1|mean_per_class|jaccard|hier_precision|hier_recall", FRACTION), (r"tie|lca", EDGES),
                     (r"n_classes_evaluated", COUNT)),
        "retrieval": ((r"(i2t|t2i)_R@\d+", FRACTION),),
        "pep": ((r"(raw_)?(auc|ap)|(raw_)?auc_L\d+|ap_L\d+|zero_score_share|(tied|inside)_share(_L\d+)?"
                 r"|inside_share_negative", FRACTION),
                (r"mean_phi_(positive|negative)", ANGLE), (r"n_(positive|negative)", COUNT)),
        "hierarcaps": ((r"kendall_tau", TAU), (r"kendall_tau(_undefined)?_rows", COUNT),
                       (r"level_order_exact_share|threshold_(precision|recall)", FRACTION),
                       (r"mean_radius_by_level", NORMS)),  # one per caption level
        "compositional": ((r"acc_[^/]+|mean(_[^/]+)?|item_accuracy", FRACTION), (r"n_[^/]+", COUNT)),
        "analysis": ((rf"{_NORMS}/n", COUNT), (rf"{_NORMS}/histogram/counts", COUNTS),
                     (rf"{_NORMS}/histogram/edges", BIN_EDGES), (rf"{_NORMS}/[^/]+", NORM),
                     (r"projection_mean_(disk_radius|norm)/[^/]+", NORM)),
    }.items()
}
# keys every result of the protocol holds, whatever its options (a result without them is damaged)
REQUIRED = {"zeroshot": ("top1", "mean_per_class"), "pep": ("auc", "ap"),
            "hierarcaps": ("kendall_tau", "threshold_precision", "threshold_recall"),
            "compositional": ("mean", "item_accuracy")}
# A metric a protocol leaves undefined on purpose, and the count in the same result that says so:
# hierarcaps' mean Kendall τ over the rows whose radii are not all equal is null when there is none.
UNDEFINED_WHEN_ZERO = {"kendall_tau": "kendall_tau_rows"}


def metric_kind(protocol: str | None, key: str) -> Kind | None:
    """The kind of the metric ``key`` (flattened with "/") of a ``protocol`` result; None for a key the
    protocol does not write. A protocol without kinds here, or none named: any protocol's, else ``REAL``."""
    if protocol in PROTOCOL_KINDS:
        kinds = PROTOCOL_KINDS[protocol]
    else:
        kinds = tuple(pair for pairs in PROTOCOL_KINDS.values() for pair in pairs)
    return next((kind for pattern, kind in kinds if pattern.fullmatch(key)),
                None if protocol in PROTOCOL_KINDS else REAL)


def undefined_by_protocol(key: str, flat: dict[str, object]) -> bool:
    """Whether the result's own counts say that ``key`` has no value (its null is "n/a", not a fault)."""
    count = UNDEFINED_WHEN_ZERO.get(key)
    return count is not None and flat.get(count) == 0
