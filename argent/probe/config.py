"""The probe's part of the workflow config: the ``probe:`` section, typed and checked.

``probe.options`` holds every protocol and projector setting (docs/probe.md explains each); the
other keys say which trained runs the workflow probes and on which image folder. Parsing goes
through ``argent.config.from_dict``, so an unknown key names its full path and the allowed keys,
and a wrongly typed value names its path, the value and the expected type.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from argent.config import ConfigError, from_dict, load_config
from argent.runs import DEFAULT_HIERSHAPES, HiershapesFolder

ABLATIONS = ("random", "systematic")
SHUFFLES = ("none", "across", "within")


@dataclass
class ProbeOptions:
    """``probe.options``: the protocol (seeds, ablations, shuffles, split) and the projector's training."""

    seeds: list[int] = field(default_factory=lambda: [42, 218, 7])
    ablations: list[Literal["random", "systematic"]] = field(default_factory=lambda: list(ABLATIONS))
    levels: list[float] = field(default_factory=lambda: [0.0, 10.0, 30.0, 50.0, 70.0, 90.0, 100.0])
    shuffles: list[Literal["none", "across", "within"]] = field(default_factory=lambda: list(SHUFFLES))
    shuffle_levels: list[float] = field(default_factory=lambda: [100.0])  # shuffles are run at these levels
    train_fraction: float = 0.7
    val_fraction: float = 0.05
    image_features: Literal["tangent", "lifted"] = "tangent"  # encode_image(project=False) | (project=True)
    hidden: int = 0  # projector width; 0 = the text embedding width (Prismatic: out → out)
    epochs: int = 5
    batch_size: int = 16
    lr: float = 1e-3
    weight_decay: float = 0.0
    warmup: float = 0.03  # fraction of the steps
    grad_clip: float = 1.0
    encode_batch_size: int = 64
    eval_chunk: int = 4096
    per_class: int = 0  # the first N images of each class folder (sorted by name); 0 = all

    def __post_init__(self) -> None:
        # Values the types cannot express. Messages start with the key: from_dict prefixes the section path.
        if not self.seeds:
            raise ConfigError("seeds: give at least one seed")
        for name, allowed in (("ablations", ABLATIONS), ("shuffles", SHUFFLES)):
            bad = [v for v in getattr(self, name) if v not in allowed]
            if bad:  # reached only when the dataclass is built directly, not through from_dict
                raise ConfigError(f"{name}: {bad} unknown; allowed: {list(allowed)}")
        if self.image_features not in ("tangent", "lifted"):
            raise ConfigError(f"image_features: {self.image_features!r} unknown; allowed: ['tangent', 'lifted']")
        if not self.levels:
            raise ConfigError("levels: give at least one level (percent, 0 = full exposure, 100 = leaf-only)")
        for name in ("levels", "shuffle_levels"):
            bad = [v for v in getattr(self, name) if not 0.0 <= v <= 100.0]
            if bad:
                raise ConfigError(f"{name}: {bad} outside [0, 100] (percent)")
        if not (0 < self.train_fraction and 0 <= self.val_fraction and self.train_fraction + self.val_fraction < 1):
            raise ConfigError(
                f"train_fraction: {self.train_fraction} with val_fraction {self.val_fraction} must leave a test share"
            )
        if self.per_class < 0:
            raise ConfigError(f"per_class: must be >= 0 (0: every image), got {self.per_class}")
        for name in ("epochs", "batch_size", "encode_batch_size", "eval_chunk"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name}: must be >= 1, got {getattr(self, name)}")
        for name, ok, rule in (
            ("hidden", self.hidden >= 0, ">= 0"),
            ("lr", self.lr > 0, "> 0"),
            ("weight_decay", self.weight_decay >= 0, ">= 0"),
            ("warmup", 0 <= self.warmup < 1, "in [0, 1)"),
            ("grad_clip", self.grad_clip > 0, "> 0"),
        ):
            if not ok:
                raise ConfigError(f"{name}: must be {rule}, got {getattr(self, name)}")


@dataclass
class ProbeSection:
    """The workflow config's ``probe:`` section."""

    enabled: bool = False
    variants: list[str] = field(default_factory=list)  # runs the workflow probes
    seeds: list[int] = field(default_factory=lambda: [0])  # their training seeds (not the probe's seeds)
    sizes: list[str] = field(default_factory=list)  # empty: the sizes of runs.sizes
    # labelled image folder: <id>/<image>, class_names.tsv; absent or `hiershapes`: derived from hiershapes.out
    data: str = field(default_factory=lambda: str(HiershapesFolder(Path(DEFAULT_HIERSHAPES)).classification()))
    options: ProbeOptions = field(default_factory=ProbeOptions)


def probe_section(raw: dict[str, Any], base_dir: Path | None = None) -> ProbeSection:
    """Check a workflow config mapping's ``probe:`` section (absent: every default)."""
    section = raw.get("probe")
    if section is None:
        section = {}
    if not isinstance(section, dict):
        raise ConfigError(f"probe: expected a mapping, got {section!r}")
    return from_dict(ProbeSection, section, "probe")


def load_probe_section(config: str | Path | None, overrides: list[str] | tuple[str, ...] = (),
                       merge_default: bool = True) -> ProbeSection:
    """The ``probe:`` section of the workflow config file merged over config/config.yaml as Snakemake
    merges it (``merge_default=False``: the file alone; none: defaults), after
    ``probe.<key>=<value>`` overrides (argent.config.workflow, the one door). The probe reads no
    other section, so an override elsewhere would do nothing; it is refused."""
    return load_config(config, overrides, merge_default=merge_default, only="probe").probe
