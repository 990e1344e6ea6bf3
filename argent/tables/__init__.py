"""`argent tables`: tables and figures from evaluation JSON and run folders.

collect (inputs -> long frames), stats (CIs, paired differences, verdicts), paper (main and
ablation tables), claims, mechanism, probe, figures; run(options) builds them all, cli is the verb.

``main``, ``run`` and ``TablesOptions`` are imported on first use: the DAG build parses the claims
file through ``argent.tables.claims_spec`` (torch- and polars-free) and must not pay for the rest.
"""

from __future__ import annotations

import sys
import types
from typing import Any

__all__ = ["main", "run", "TablesOptions"]


class _Tables(types.ModuleType):
    """The package, whose ``run`` is the function ``argent.tables.run.run`` (as when it was imported
    eagerly), not the submodule the import system binds to that name when it first loads it."""

    @property
    def run(self) -> Any:
        from argent.tables.run import run
        return run

    @run.setter
    def run(self, value: Any) -> None:
        pass  # the submodule being bound by the import system: the function stays the package's `run`

    @property
    def TablesOptions(self) -> Any:  # noqa: N802 - the class's name
        from argent.tables.run import TablesOptions
        return TablesOptions

    @property
    def main(self) -> Any:
        from argent.tables.cli import main
        return main


sys.modules[__name__].__class__ = _Tables
