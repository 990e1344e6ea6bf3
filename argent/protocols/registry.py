"""``PROTOCOLS``: one record per evaluation protocol, the one place that says what a protocol is. Adding a protocol
is its module (its ``benchmarks:`` entry dataclass, its run function and its metrics) and one record here
(docs/architecture.md, "How to add"); every reader follows from the record:

- the evaluation: ``argent.evaluation.benchmarks`` parses an entry into the record's ``entry`` type (its fields'
  declared data paths feed ``argent check``, the DAG's inputs, the tables' data domains and tuning's leak check),
  ``argent.evaluation.runner`` calls its ``run`` and writes its ``units`` into every result;
- the tables: ``argent.tables.readers`` checks each metric a result holds against its ``kinds`` (and ``required``,
  ``undefined_when_zero``);
- the embedded data set's layout: ``argent.runs.embedded.HiershapesFolder.benchmark_paths`` fills a ``dataset: hiershapes``
  entry from its ``embedded`` files.

Entry types and run functions are named (``"module:attribute"``, ``argent.lazy.named``) and imported when an
entry is parsed or a benchmark runs: this module stays torch-free and below the layout that reads it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from argent.lazy import named
from argent.protocols.kinds import ANGLE, BIN_EDGES, COUNT, COUNTS, EDGES, FRACTION, NORM, NORMS, REAL, TAU, Kind

__all__ = ["EMBEDDED_SPLITS", "PROTOCOLS", "Protocol", "metric_kind", "required_metrics", "undefined_by_protocol"]

EMBEDDED_SPLITS = ("test", "val")  # the embedded data set's splits a protocol may have files in


@dataclass(frozen=True)
class Protocol:
    """One evaluation protocol (its name is its key in ``PROTOCOLS``).

    ``entry``: the dataclass of its ``benchmarks:`` entries (options, declared data paths), named;
    ``run``: ``run(model, entry, policy, out_path) -> {"metrics", "counts", "items", ...}``, named
    (argent/evaluation/runner.py); ``kinds``: (pattern over the whole key of ``flatten(metrics, sep="/")``,
    its kind), first match wins; ``units``: what its numbers are, written into every result;
    ``required``: keys every result holds whatever its options (a result without them is damaged);
    ``undefined_when_zero``: a metric left null on purpose and the count in the same result that says so;
    ``embedded``: entry key -> its file in the embedded data set (``argent synth``, under ``hiershapes.out``;
    ``{classification}``, ``{hierarcaps}``: the split's folder of that layout, argent/runs/layout.py), in the
    ``splits`` it has files in."""

    entry: str
    run: str
    kinds: tuple[tuple[str, Kind], ...]
    units: str
    required: tuple[str, ...] = ()
    undefined_when_zero: dict[str, str] = field(default_factory=dict)
    embedded: dict[str, str] = field(default_factory=dict)
    splits: tuple[str, ...] = ("test",)

    def entry_type(self) -> type:
        return named(self.entry)

    def runner(self) -> Callable[..., dict[str, Any]]:
        return named(self.run)

    def kind_of(self, key: str) -> Kind | None:
        """The kind of the metric ``key`` (flattened with "/"); None for a key the protocol does not write."""
        return next((kind for pattern, kind in self.kinds if re.fullmatch(pattern, key)), None)


_NORMS = r"(radius|space_norm|unnormalised_norm)/[^/]+"  # analysis: a norm summary per item type
_RUNS = "argent.evaluation.protocol_runs"
_ENTRIES = "argent.evaluation.benchmarks"
_HIERARCAPS = {"hierarcaps_csv": "{hierarcaps}/hierarcaps_test.csv", "image_dir": "{hierarcaps}/images"}

PROTOCOLS: dict[str, Protocol] = {
    "zeroshot": Protocol(
        f"{_ENTRIES}:ZeroShotEntry", f"{_RUNS}:run_zeroshot",
        ((r"top1|mean_per_class|jaccard|hier_precision|hier_recall", FRACTION), (r"tie|lca", EDGES),
         (r"n_classes_evaluated", COUNT)),
        "top1, mean_per_class, jaccard, hier_precision and hier_recall are fractions in [0, 1]; tie and lca are "
        "tree edges",
        required=("top1", "mean_per_class"),
        embedded={"root": "{classification}", "taxonomy": "{classification}/taxonomy.txt"}, splits=EMBEDDED_SPLITS),
    "retrieval": Protocol(
        f"{_ENTRIES}:RetrievalEntry", f"{_RUNS}:run_retrieval",
        ((r"(i2t|t2i)_R@\d+", FRACTION),),
        "recalls (i2t_R@k, t2i_R@k) are fractions in [0, 1]",
        embedded={"annotations": "retrieval/dataset_hiershapes.json", "image_dir": "retrieval/images"}),
    "pep": Protocol(
        f"{_ENTRIES}:PepEntry", f"{_RUNS}:run_pep",
        ((r"(raw_)?(auc|ap)|(raw_)?auc_L\d+|ap_L\d+|zero_score_share|(tied|inside)_share(_L\d+)?"
          r"|inside_share_negative", FRACTION),
         (r"mean_phi_(positive|negative)", ANGLE), (r"n_(positive|negative)", COUNT)),
        "AUC, AP and the shares are fractions in [0, 1]; mean_phi_* are angles in radians",
        required=("auc", "ap"), embedded=_HIERARCAPS, splits=EMBEDDED_SPLITS),
    "hierarcaps": Protocol(
        f"{_ENTRIES}:HierarCapsEntry", f"{_RUNS}:run_hierarcaps",
        ((r"kendall_tau", TAU), (r"kendall_tau(_undefined)?_rows", COUNT),
         (r"level_order_exact_share|threshold_(precision|recall)", FRACTION),
         (r"mean_radius_by_level", NORMS)),  # one per caption level
        "kendall_tau is in [-1, 1]; threshold precision/recall and level_order_exact_share are fractions in "
        "[0, 1]; radii in embedding units",
        required=("kendall_tau", "threshold_precision", "threshold_recall"),
        # the mean Kendall τ over the rows whose radii are not all equal is null when there is none
        undefined_when_zero={"kendall_tau": "kendall_tau_rows"}, embedded=_HIERARCAPS, splits=EMBEDDED_SPLITS),
    "compositional": Protocol(
        f"{_ENTRIES}:CompositionalEntry", f"{_RUNS}:run_compositional",
        ((r"acc_[^/]+|mean(_[^/]+)?|item_accuracy", FRACTION), (r"n_[^/]+", COUNT)),
        "accuracies and their means are fractions in [0, 1]",
        required=("mean", "item_accuracy"),
        embedded={"json_dir": "sugarcrepe", "image_dir": "sugarcrepe/images"}),
    "analysis": Protocol(
        f"{_ENTRIES}:AnalysisEntry", "argent.evaluation.analysis_run:run_analysis",
        ((rf"{_NORMS}/n", COUNT), (rf"{_NORMS}/histogram/counts", COUNTS),
         (rf"{_NORMS}/histogram/edges", BIN_EDGES), (rf"{_NORMS}/[^/]+", NORM),
         (r"projection_mean_(disk_radius|norm)/[^/]+", NORM)),
        "norms and radii in embedding units",
        embedded={**_HIERARCAPS, "shards": "val/shard-000000.tar"}),
}


def metric_kind(protocol: str | None, key: str) -> Kind | None:
    """The kind of the metric ``key`` (flattened with "/") of a ``protocol`` result; None for a key the
    protocol does not write. A file that names no registered protocol (hand-written): any protocol's kind
    of that key, else ``REAL`` (only required to be a finite number)."""
    if protocol in PROTOCOLS:
        return PROTOCOLS[protocol].kind_of(key)
    return next((kind for record in PROTOCOLS.values() if (kind := record.kind_of(key)) is not None), REAL)


def required_metrics(protocol: str | None) -> tuple[str, ...]:
    """The keys every result of ``protocol`` holds whatever its options (none for an unknown one)."""
    return PROTOCOLS[protocol].required if protocol in PROTOCOLS else ()


def undefined_by_protocol(protocol: str | None, key: str, flat: dict[str, object]) -> bool:
    """Whether the result's own counts say that ``key`` has no value (its null is "n/a", not a fault); a file that
    names no registered protocol: any protocol's rule for that key."""
    records = [PROTOCOLS[protocol]] if protocol in PROTOCOLS else list(PROTOCOLS.values())
    count = next((r.undefined_when_zero[key] for r in records if key in r.undefined_when_zero), None)
    return count is not None and flat.get(count) == 0
