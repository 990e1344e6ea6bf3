"""The mining run: read a caption source, mine hard negatives, write the parquet and its summary.

``run(job)`` never sees the command line (``argent.negatives.cli`` parses that). Outputs: the
parquet (contract schema, one row per (key, mode) at most) and a JSON summary (counts per mode and
operator, failures, rejections, the config), both written atomically after all work is done.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argent.io import atomic_write_json
from argent.negatives.config import MiningConfig
from argent.negatives.generator import NegativeGenerator
from argent.negatives.io import iter_source, summary_path, write_parquet


@dataclass
class MineJob:
    """One mining run: the caption source and output files the caller names, and the ``negatives:`` options.

    ``source``: grounded shard pattern, HierarCaps CSV, or key,caption CSV/parquet; ``fmt``: its format
    (``auto`` picks by name); ``summary``: default ``<out without .parquet>.summary.json``;
    ``limit``: mine only the first N captions (0 = all).
    """

    source: str
    out: Path
    fmt: str = "auto"
    summary: Path | None = None
    limit: int = 0
    config: MiningConfig = field(default_factory=MiningConfig)


def run(job: MineJob, generator: NegativeGenerator | None = None) -> dict[str, Any]:
    """Mine ``job.source``; ``generator`` overrides the one built from ``job.config`` (tests, library use).

    Returns the summary written beside the parquet."""
    generator = generator or NegativeGenerator(job.config)
    rows = iter_source(job.source, job.fmt)
    if job.limit:
        rows = itertools.islice(rows, job.limit)
    start = time.perf_counter()
    table, summary = generator.mine(rows)
    seconds = time.perf_counter() - start
    summary["source"] = job.source
    summary["seconds"] = round(seconds, 3)
    write_parquet(table, job.out)
    atomic_write_json(job.summary or summary_path(job.out), summary)
    return summary
