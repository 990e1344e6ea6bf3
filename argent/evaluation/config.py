"""The ``evaluate:`` section of the workflow config: which benchmarks every run is evaluated on, and
with how many threads. Torch-free: the DAG build and the rules read it (``setting``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from argent.config import check_range

__all__ = ["EvaluateSection"]


@dataclass
class EvaluateSection:
    """``evaluate:``: the benchmarks (names of ``benchmarks:`` entries) each run and released model is
    evaluated on, in one job per run, and that job's threads."""

    benchmarks: list[str] = field(default_factory=list)
    threads: int = 1

    def __post_init__(self) -> None:
        check_range("threads", self.threads, low=1)
