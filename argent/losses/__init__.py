"""Training losses: contrastive, entailment (cone / adaptive), norm regulariser, Cement margin.

``Objective(variant)`` composes them from a ``VariantConfig``; ``diagnostics`` reports geometry
health (angles, cone collapse, norms). The registry of entailment loss kinds, which names the per-pair
losses of ``entailment``, is argent/config/loss_kinds.py (torch-free: the workflow checks every variant
with it while it parses). Names are imported on first use (``argent.lazy``).
"""

from typing import TYPE_CHECKING

from argent.lazy import lazy_exports

if TYPE_CHECKING:  # the public names, imported on first use (argent.lazy); import-linter sees them
    from argent.losses.objective import LossOutput, Objective, diagnostics

__all__ = ["LossOutput", "Objective", "diagnostics"]
__getattr__, __dir__ = lazy_exports(__name__)
