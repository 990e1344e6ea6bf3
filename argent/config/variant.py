"""A variant: a model family or ablation as data (``config/variants.yaml``).

Torch-free (the workflow builds every run's config while it parses). The training code never
branches on a variant's name, only on these fields; the entailment kind a variant names, and the
fields that kind reads, come from the registry ``ENTAILMENT_KINDS`` (argent/config/loss_kinds.py, torch-free
too), through which ``argent.losses.entailment.pair_losses`` calls the kind's loss.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from argent.config.convert import ConfigError, check_range
from argent.config.loss_kinds import ENTAILMENT_KINDS, KIND_FIELDS, readers_of

__all__ = ["PAIR_TYPES", "INTRA_PAIRS", "CementConfig", "VariantConfig", "check_variant_keys"]

PAIR_TYPES = ("text_image", "phrase_crop", "crop_image", "phrase_text")
"""Entailment pairs, named parent_child: caption ⊒ image, phrase ⊒ crop (inter-modality);
crop ⊒ image, phrase ⊒ caption (intra-modality: a box is more general than its whole)."""
INTRA_PAIRS = ("crop_image", "phrase_text")


def check_variant_keys(keys: Any, entailment: str, hard_negatives: str, where: str) -> None:
    """Refuse a key that an entry (or an override) sets but that does nothing for the variant it
    makes: an entailment field its kind does not read, or ``cement`` without hard negatives.

    Only the keys written at this level are checked: a value inherited through ``extends:`` from a
    parent of another kind is carried along unused (and stays in the run's identity, which predates
    this check), so that ``argent`` can extend ``hycoclip``.
    """
    kind = ENTAILMENT_KINDS.get(entailment)
    for key in keys:
        if kind is not None and key in KIND_FIELDS and key not in kind.reads:
            raise ConfigError(f"{where}.{key}: does nothing for entailment: {entailment} (it reads "
                              f"{list(kind.reads) or 'no entailment field'}); remove it, or use a kind that "
                              f"reads it: {readers_of(key)}")
        if key == "cement" and hard_negatives == "none":
            raise ConfigError(f"{where}.cement: the Cement margin acts on hard negatives, and this variant "
                              f"trains without them (hard_negatives: none); remove it or set hard_negatives")


@dataclass
class CementConfig:
    """Concreteness-calibrated margin on hard negatives (argent's documented stand-in)."""

    enabled: bool = False
    margin_mode: Literal["logit", "hinge"] = "logit"
    margin_max: float = 0.1
    margin_direction: Literal["increasing", "decreasing"] = "increasing"
    hinge_weight: float = 0.2

    def __post_init__(self) -> None:
        check_range("margin_max", self.margin_max, low=0.0)
        check_range("hinge_weight", self.hinge_weight, low=0.0)


@dataclass
class VariantConfig:
    """A model family or ablation, as data. The training code never branches on its name."""

    description: str = ""
    geometry: Literal["euclidean", "lorentz"] = "lorentz"
    use_boxes: bool = False  # crops & phrases: HyCoCLIP's 4-term contrastive + box pairs
    entailment: str = "none"  # a kind of ENTAILMENT_KINDS (config/loss_kinds.py); it decides which fields below apply
    entailment_pairs: list[str] = field(default_factory=lambda: ["text_image"])
    entailment_weight: float = 0.2  # λ (MERU, HyCoCLIP) or γ₁ (ARGENT)
    pair_reduction: Literal["sum", "half_sum", "mean"] = "sum"
    cone_k: float = 0.1
    cone_eta: dict[str, float] = field(default_factory=dict)  # per pair type; missing -> 1.0
    adaptive_weight: Literal["none", "any", "intra"] = "intra"
    huber_beta: float = 1.0
    huber_form: Literal["smooth_l1", "huber"] = "smooth_l1"
    detach_h: bool = True
    h_tau: float = 1.0
    angle_norm: Literal["none", "pi"] = "none"
    norm_reg_weight: float = 0.0  # γ₂; 0 disables the term
    hard_negatives: Literal["none", "concrete", "abstract", "random"] = "none"
    cement: CementConfig = field(default_factory=CementConfig)

    def __post_init__(self) -> None:
        if self.entailment not in ENTAILMENT_KINDS:
            raise ConfigError(f"entailment: {self.entailment!r} is not a loss kind; allowed: {sorted(ENTAILMENT_KINDS)}")
        for pair in self.entailment_pairs:
            if pair not in PAIR_TYPES:
                raise ConfigError(f"entailment_pairs: unknown pair {pair!r}; allowed: {PAIR_TYPES}")
            if pair != "text_image" and not self.use_boxes:
                raise ConfigError(f"entailment_pairs: {pair!r} needs use_boxes: true")
        for pair in self.cone_eta:
            if pair not in PAIR_TYPES:
                raise ConfigError(f"cone_eta: unknown pair {pair!r}; allowed: {PAIR_TYPES}")
        if self.geometry == "euclidean" and (self.entailment != "none" or self.norm_reg_weight):
            raise ConfigError("geometry: euclidean variants take no entailment or norm regulariser")
        check_range("huber_beta", self.huber_beta, low=0.0, low_open=True)
        for key in ("entailment_weight", "cone_k", "h_tau", "norm_reg_weight"):
            check_range(key, getattr(self, key), low=0.0)
