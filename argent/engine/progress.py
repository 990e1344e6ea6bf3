"""Progress: a rich bar on a terminal, plain log lines otherwise (Snakemake logs, Slurm)."""

from __future__ import annotations

import logging
import sys
from typing import Any

log = logging.getLogger("argent.train")

SHOWN = ("loss", "loss/contrastive", "curv", "logit_scale")


class Progress:
    def __init__(self, total: int, start: int, enabled: bool = True) -> None:
        self.enabled = enabled
        self.bar = None
        if enabled and sys.stdout.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeRemainingColumn
            from rich.progress import Progress as RichProgress

            self.bar = RichProgress(TextColumn("train"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                                    TextColumn("{task.fields[info]}"))
            self.bar.start()
            self.task = self.bar.add_task("train", total=total, completed=start, info="")
        self.total = total

    def advance(self, step: int) -> None:
        if self.bar is not None:
            self.bar.update(self.task, completed=step)

    def update(self, step: int, record: dict[str, Any]) -> None:
        info = " ".join(f"{k}={record[k]:.4g}" for k in SHOWN if k in record)
        if self.bar is not None:
            self.bar.update(self.task, completed=step, info=info)
        elif self.enabled:
            log.info("step %d/%d %s", step, self.total, info)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()
            self.bar = None
