"""The registry of entailment loss kinds: each kind's loss and the ``VariantConfig`` fields it reads.

It lives with the variant it checks, not with the losses: the workflow checks every variant against it
while it parses (argent/config/variant.py), torch-free, and a kind's loss is only imported, by name
(``"module:function"``, like the section types of ``SECTIONS``), when a run builds its objective
(``argent.losses.entailment.pair_losses``). A new kind is its loss function and one line in
``ENTAILMENT_KINDS`` (docs/architecture.md, "How to add"); a variant that sets a field its kind does
not read is refused (``argent.config.variant.check_variant_keys``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from argent.lazy import named

__all__ = ["ENTAILMENT_KINDS", "EntailmentKind", "KIND_FIELDS", "PAIR_FIELDS", "readers_of"]


@dataclass(frozen=True)
class EntailmentKind:
    """One entailment loss kind: the ``VariantConfig`` fields its loss reads, and the loss, named
    ``"module:function"`` and imported when a run builds its objective:
    ``loss(parent (B, D), child (B, D), curv, variant, pair) -> (B,)`` per-item losses."""

    reads: tuple[str, ...]
    loss: str = ""  # empty: no entailment term

    def loss_fn(self) -> Callable[..., Any]:
        return named(self.loss)


PAIR_FIELDS = ("entailment_pairs", "entailment_weight", "pair_reduction")  # read by every kind with a term

ENTAILMENT_KINDS: dict[str, EntailmentKind] = {
    "none": EntailmentKind(reads=()),
    "cone": EntailmentKind(PAIR_FIELDS + ("cone_k", "cone_eta"), "argent.losses.entailment:cone_pair_loss"),
    "adaptive": EntailmentKind(PAIR_FIELDS + ("adaptive_weight", "huber_beta", "huber_form", "detach_h", "h_tau",
                                              "angle_norm"), "argent.losses.entailment:adaptive_pair_loss"),
}
KIND_FIELDS = frozenset(f for kind in ENTAILMENT_KINDS.values() for f in kind.reads)


def readers_of(field: str) -> list[str]:
    """The kinds whose loss reads ``field``, sorted (what an error about a misplaced field suggests)."""
    return sorted(name for name, kind in ENTAILMENT_KINDS.items() if field in kind.reads)
