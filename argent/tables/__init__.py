"""`argent tables`: tables and figures from evaluation JSON and run folders.

collect (inputs -> long frames), stats (CIs, paired differences, verdicts), paper (main and
ablation tables), claims, mechanism, probe, figures; run(options) builds them all, cli is the verb.
"""

from argent.tables.cli import main
from argent.tables.run import TablesOptions, run

__all__ = ["main", "run", "TablesOptions"]
