"""Training losses: contrastive, entailment (cone / adaptive), norm regulariser, Cement margin.

``Objective(variant)`` composes them from a ``VariantConfig``; ``diagnostics`` reports geometry
health (angles, cone collapse, norms). The registry of entailment loss kinds, which names the per-pair
losses of ``entailment``, is argent/config/loss_kinds.py (torch-free: the workflow checks every variant
with it while it parses). Names are imported on first use (``argent.lazy``).
"""

from argent.lazy import lazy_exports

_EXPORTS = {"Objective": "argent.losses.objective", "LossOutput": "argent.losses.objective",
            "diagnostics": "argent.losses.objective"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
