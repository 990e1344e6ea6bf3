"""`argent tables`: tables and figures from evaluation JSON and run folders.

collect (inputs -> long frames), stats (CIs, paired differences, verdicts), paper (main and
ablation tables), claims, mechanism, probe, pretrained (the pretrained models' table), figures;
``argent.tables.run.run(options)`` builds them all, cli is the verb.

Names are imported on first use (``argent.lazy``): the DAG build parses the claims file through
``argent.tables.claims_spec`` (torch- and polars-free) and must not pay for the rest. The function
``run`` is not a package name (the submodule ``argent.tables.run`` is): ``from argent.tables.run import run``.
"""

from argent.lazy import lazy_exports

_EXPORTS = {"main": "argent.tables.cli", "TablesOptions": "argent.tables.run"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
