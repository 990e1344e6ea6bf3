"""Training losses: contrastive, entailment (cone / adaptive), norm regulariser, Cement margin.

``Objective(variant)`` composes them from a ``VariantConfig``; ``diagnostics`` reports geometry
health (angles, cone collapse, norms).
"""

from argent.losses.objective import LossOutput, Objective, diagnostics

__all__ = ["Objective", "LossOutput", "diagnostics"]
