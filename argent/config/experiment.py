"""The experiment's typed sections: model sizes, optimisation, training, data, tracking, and the
``ExperimentConfig`` of one run that holds them with its variant (argent/config/variant.py).

Everything a run depends on is one ``ExperimentConfig``, built from the workflow's YAML config
(``config/config.yaml`` & co.) plus the variant catalogue (``config/variants.yaml``). Unknown or
mistyped keys fail with the key's full path and the allowed values; nothing is silently ignored.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from argent.config.convert import ConfigError, check_partial, check_range, from_dict
from argent.config.limits import check_device, check_model_arithmetic, check_schedule, check_seed
from argent.config.loading import deep_merge, load_yaml
from argent.config.registry import check_sections, section_of, setting
from argent.config.variant import VariantConfig, check_variant_keys
from argent.runs.identity import identity_hash, run_identity
from argent.runs.layout import NAME_RE, SIZE_RE

# --------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------


@dataclass
class ModelConfig:
    """Dual encoder dimensions. Named presets live in ``MODEL_SIZES``; any field can be overridden."""

    image_size: int = 224
    patch_size: int = 16
    vision_width: int = 384
    vision_layers: int = 12
    vision_heads: int = 12
    vision_mlp_ratio: float = 4.0
    text_width: int = 512
    text_layers: int = 12
    text_heads: int = 8
    context_length: int = 77
    vocab_size: int = 49408
    embed_dim: int = 512
    curv_init: float = 1.0
    learn_curv: bool = True
    logit_scale_init: float = 1.0 / 0.07
    logit_scale_max: float = 100.0
    # Channels of a convolutional stem before the ViT's patch projection (3×3 conv, GELU, then the
    # patch conv); 0 = the plain ViT patchify. A documented option for tiny models (docs/hiershapes.md).
    conv_stem: int = 0
    # With conv_stem > 0: a small convnet instead (3×3 conv, BatchNorm, GELU, 2×2 max-pool per halving
    # of the patch size, then a 1×1 projection), a hybrid ViT whose pooled map is the patch grid. The
    # tiny towers learn shape from whole scenes only with it (docs/hiershapes.md).
    conv_stem_pooled: bool = False

    def __post_init__(self) -> None:
        for key in ("image_size", "patch_size", "vision_width", "vision_layers", "vision_heads", "text_width",
                    "text_layers", "text_heads", "context_length", "vocab_size", "embed_dim"):
            check_range(key, getattr(self, key), low=1)
        for key in ("vision_mlp_ratio", "curv_init", "logit_scale_init", "logit_scale_max"):
            check_range(key, getattr(self, key), low=0.0, low_open=True)
        check_range("conv_stem", self.conv_stem, low=0)
        if self.conv_stem_pooled and (self.conv_stem < 1 or self.patch_size & (self.patch_size - 1)):
            raise ConfigError(f"conv_stem_pooled needs conv_stem >= 1 and a power-of-two patch_size "
                              f"(got conv_stem {self.conv_stem}, patch_size {self.patch_size})")
        check_model_arithmetic(self)


MODEL_SIZES: dict[str, dict[str, Any]] = {
    # CPU-sized: minutes on a laptop for the embedded benchmark.
    "tiny": dict(image_size=64, patch_size=8, vision_width=128, vision_layers=4, vision_heads=4,
                 text_width=128, text_layers=4, text_heads=4, context_length=32, embed_dim=128),
    # The paper's ViT-S/B/L at 224 px, patch 16, with the L12_W512 text encoder.
    "S": dict(vision_width=384, vision_layers=12, vision_heads=12),
    "B": dict(vision_width=768, vision_layers=12, vision_heads=12),
    "L": dict(vision_width=1024, vision_layers=24, vision_heads=16),
}


@dataclass
class OptimConfig:
    """AdamW + linear warm-up + half-cosine, the MERU/HyCoCLIP recipe (``schedule: cosine``), or
    warm-up, constant, and a linear decay over the last ``decay_fraction`` of the steps (``wsd``)."""

    lr: float = 5e-4
    betas: tuple[float, float] = (0.9, 0.98)
    weight_decay: float = 0.2
    # MERU/HyCoCLIP pass 0.0 through `x or weight_decay`, so their LayerNorm gains and biases are
    # decayed with 0.2. 0.2 here reproduces the published runs; 0.0 is the documented fix.
    norm_bias_decay: float = 0.2
    warmup_steps: int = 4000
    grad_clip: float = 0.0  # 0 = none (the recipe)
    schedule: Literal["cosine", "wsd"] = "cosine"
    decay_fraction: float = 0.2  # wsd only: the share of train.steps the final linear decay takes

    def __post_init__(self) -> None:
        check_range("lr", self.lr, low=0.0, low_open=True)
        for i, beta in enumerate(self.betas):
            check_range(f"betas[{i}]", beta, low=0.0, high=1.0, high_open=True)
        check_range("weight_decay", self.weight_decay, low=0.0)
        check_range("norm_bias_decay", self.norm_bias_decay, low=0.0)
        check_range("warmup_steps", self.warmup_steps, low=0)
        check_range("grad_clip", self.grad_clip, low=0.0)
        check_range("decay_fraction", self.decay_fraction, low=0.0, high=1.0, low_open=True)


@dataclass
class TrainConfig:
    batch_size: int = 768
    steps: int = 500_000
    device: str = "cpu"
    precision: Literal["fp32", "bf16"] = "fp32"
    deterministic: bool = False
    # Data streams per rank (argent/data/loaders.py): the batches depend on it, not on num_workers,
    # which only shares the streams out (so a resume with other workers reads the same batches).
    data_streams: int = 1
    num_workers: int = 0
    log_every: int = 50
    diagnostics_every: int = 50
    checkpoint_every: int = 1000
    nan_policy: Literal["stop", "skip"] = "stop"
    max_skipped_steps: int = 10
    shuffle_buffer: int = 4000
    # torch.compile the towers (inductor; falls back to eager with a logged reason). Same losses
    # to float tolerance, not bit for bit (docs/throughput.md).
    compile: bool = False

    def __post_init__(self) -> None:
        for key in ("batch_size", "steps", "data_streams", "log_every", "diagnostics_every", "checkpoint_every"):
            check_range(key, getattr(self, key), low=1)
        for key in ("num_workers", "max_skipped_steps", "shuffle_buffer"):
            check_range(key, getattr(self, key), low=0)
        check_device("device", self.device)


@dataclass
class BatchingConfig:
    """How training batches are composed (argent/data/batching.py; docs/hiershapes.md)."""

    mode: Literal["stream", "grouped"] = "stream"  # grouped: shape-contrast groups of one generic caption
    group_size: int = 12  # records per group, distinct captions
    pool_batches: int = 16  # records pooled for grouping, in batches
    max_wait: int = 32  # batches a pooled record may wait before it must leave

    def __post_init__(self) -> None:
        check_range("group_size", self.group_size, low=2)
        check_range("pool_batches", self.pool_batches, low=1)
        check_range("max_wait", self.max_wait, low=1)


@dataclass
class DataConfig:
    """Training data: grounded (GRIT-style) or plain image–caption webdataset shards."""

    train_shards: str = ""  # a glob or brace pattern of .tar files
    format: Literal["grounded", "plain"] = "grounded"
    min_box_area: int = 1024
    bad_data: Literal["skip", "strict"] = "skip"
    augment: bool = True
    negatives: str = ""  # parquet of mined hard negatives (``argent mine``), if any
    # The table's identity where the workflow mines it (argent/config/derived_paths.py), in the run identity in
    # place of the path; "" = the file's content hash.
    negatives_id: str = ""
    image_cache: str = ""  # decoded-image cache folder (argent/data/image_cache.py); "" = decode every time
    # JPEG DCT-domain downscaling on decode when every region the sample uses stays >= the output size
    # (argent/data/image_cache.py: draft_factor). Changes pixels, so it is part of the run identity.
    decode_draft: bool = False
    # The training data's identity, in the run identity in place of train_shards' path (set by the
    # workflow for the embedded data set; declare one for your own data to move it freely).
    dataset_hash: str = ""
    batching: BatchingConfig = field(default_factory=BatchingConfig)

    def __post_init__(self) -> None:
        check_range("min_box_area", self.min_box_area, low=0)


@dataclass
class TrackingConfig:
    enabled: bool = True
    uri: str = ""  # "" -> sqlite under the results folder
    experiment: str = "argent"
    tags: dict[str, str] = field(default_factory=dict)  # extra MLflow tags (argent train adds family, group)


@dataclass
class ExperimentConfig:
    variant_name: str
    size: str
    seed: int
    variant: VariantConfig
    model: ModelConfig
    optim: OptimConfig
    train: TrainConfig
    data: DataConfig
    tracking: TrackingConfig = field(default_factory=TrackingConfig)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def identity(self) -> dict[str, Any]:
        """The values that change the result and differ from their pinned default (argent/runs/identity.py)."""
        return run_identity(self)

    def result_hash(self) -> str:
        """The run's identity hash: pure, documented in argent/runs/identity.py; outside it are logging,
        checkpointing, loader workers, the image cache, tracking and descriptions."""
        return identity_hash(self.identity(), IDENTITY_VERSION)


IDENTITY_VERSION = 2
"""Version of the run identity (``ExperimentConfig.result_hash``; checkpoints record it). Bump it by
one only when the *meaning* of a value changes while the value stays the same (the code changes what
a default does: a loss formula fixed, a data order changed), or when the encoding changes. Not for a
new field (a neutral default changes no hash) nor a changed default value (the pinned defaults,
argent/resources/identity_defaults.json, make exactly the runs that take it change hash). A bump
changes every hash: the workflow retrains every run, and ``argent restamp`` carries over only the
stamps of ``CARRIED_VERSIONS`` (an encoding change). Say in the commit why; re-pin the
defaults (delete the pin file, run scripts/pin_identity_defaults.py) only together with a bump.

v2: no path enters the hash; the training data's and the hard negatives' identities do (argent/runs/identity.py
``run_identity``), and ``train.data_streams`` (v1 split the data by loader worker)."""

CARRIED_VERSIONS = (0, 1)
"""Stamps ``argent restamp`` carries over: 0, the legacy hash; 1, paths hashed (argent/restamp/)."""


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------

def check_name(name: str, what: str) -> str:
    """``name`` when it may become a path component (argent.runs.layout ``NAME_RE``, ``SIZE_RE`` for a size)."""
    pattern = SIZE_RE if what.endswith("size") else NAME_RE
    if not isinstance(name, str) or not pattern.match(name) or ".." in name:
        raise ConfigError(f"{what}: {name!r} is not a valid name (letters, digits, _ . + -; no '/' or '..')")
    return name


def load_variants(path: str | Path) -> dict[str, dict[str, Any]]:
    """The variant catalogue: name -> raw dict. An entry may ``extends:`` another one."""
    raw = load_yaml(path)
    resolved: dict[str, dict[str, Any]] = {}

    def resolve(name: str, chain: tuple[str, ...] = ()) -> dict[str, Any]:
        if name in resolved:
            return resolved[name]
        if name not in raw:
            raise ConfigError(f"{path}: variant {name!r} not found; known: {sorted(raw)}")
        if name in chain:
            raise ConfigError(f"{path}: cyclic 'extends' through {chain + (name,)}")
        entry = dict(raw[name] or {})
        entry.pop("tags", None)  # MLflow metadata (argent.tracking.variant_tags), not a training field
        parent = entry.pop("extends", None)
        base = resolve(parent, chain + (name,)) if parent else {}
        resolved[name] = deep_merge(base, entry)
        return resolved[name]

    for name in raw:
        check_name(name, f"{path}: variant")
        done = resolve(name)
        own = set(raw[name] or {}) - {"tags", "extends"}
        check_variant_keys(own, done.get("entailment", "none"), done.get("hard_negatives", "none"), f"{path}: {name}")
    return resolved


def variant_from(catalogue: dict[str, dict[str, Any]], name: str, overrides: dict | None = None) -> VariantConfig:
    if name not in catalogue:
        raise ConfigError(f"variant {name!r} not in the catalogue; known: {sorted(catalogue)}")
    merged = deep_merge(catalogue[name], overrides or {})
    check_variant_keys(overrides or {}, merged.get("entailment", "none"), merged.get("hard_negatives", "none"),
                       f"variant overrides of {name}")
    return from_dict(VariantConfig, merged, f"variants.{name}")


def model_from(size: str, overrides: dict[str, Any] | None = None) -> ModelConfig:
    """The preset ``MODEL_SIZES[size]`` with the config's ``model.<size>`` keys over it."""
    if size not in MODEL_SIZES:
        raise ConfigError(f"size: {size!r} unknown; known: {sorted(MODEL_SIZES)}")
    return from_dict(ModelConfig, deep_merge(MODEL_SIZES[size], overrides or {}), f"model.{size}")


def _by_size(raw: dict[str, Any], section: str, cls: type) -> dict[str, dict[str, Any]]:
    """``raw[section]``: model sizes -> some keys of ``cls`` each (checked as a partial mapping:
    ranges follow on the merged run config)."""
    value = section_of(raw, section)
    unknown = sorted(set(value) - set(MODEL_SIZES), key=str)
    if unknown:
        raise ConfigError(f"{section}: unknown key(s) {unknown}; allowed: {sorted(MODEL_SIZES)}")
    for size, keys in value.items():
        check_partial(cls, keys or {}, f"{section}.{size}")
    return value


def model_section(raw: dict[str, Any], base_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """``model:``: per size, the ``ModelConfig`` keys set over its preset (``MODEL_SIZES``)."""
    return _by_size(raw, "model", ModelConfig)


def train_by_size_section(raw: dict[str, Any], base_dir: Path | None = None) -> dict[str, dict[str, Any]]:
    """``train_by_size:``: per size, the ``TrainConfig`` keys set over ``train:``."""
    return _by_size(raw, "train_by_size", TrainConfig)


def variant_layers(cfg: dict[str, Any], variant: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The overrides of the catalogue entry ``variant``, general to specific: the global ``variant:``,
    then the variant's own ``variant_overrides.<variant>``, then ``extra`` (a tuned best.yaml, a
    study trial's sampled fields). docs/config.md lists every merge layer."""
    own = (cfg.get("variant_overrides") or {}).get(variant) or {}
    return deep_merge(deep_merge(cfg.get("variant") or {}, own), extra or {})


def experiment_from_dict(
    cfg: dict[str, Any],
    variant: str,
    size: str,
    seed: int,
    base_dir: Path = Path("."),
    variant_overrides: dict[str, Any] | None = None,
) -> ExperimentConfig:
    """One run's config from the workflow mapping ``cfg``: every section over its type's defaults,
    ``train_by_size.<size>`` over ``train``, ``model.<size>`` over the size's preset, the variant's
    layers over its catalogue entry (``variant_layers``; ``variant_overrides``: a best.yaml or a
    trial's fields, the most specific). docs/config.md lists every layer."""
    check_name(variant, "variant")
    check_name(size, "size")
    check_sections(cfg)
    variants_file = Path(setting(cfg, "variants_file"))
    if not variants_file.is_absolute():
        variants_file = base_dir / variants_file
    if not variants_file.is_file():
        raise ConfigError(f"variants_file: {variants_file} not found (a relative path is taken from {base_dir}); "
                          f"run from the project root or give an absolute path")
    catalogue = load_variants(variants_file)
    model_section(cfg)
    train_by_size_section(cfg)
    unknown = sorted(set(section_of(cfg, "variant_overrides")) - set(catalogue), key=str)
    if unknown:
        raise ConfigError(f"variant_overrides: unknown key(s) {unknown}; allowed: {sorted(catalogue)}")
    check_seed(seed, "seed")
    v_over = variant_layers(cfg, variant, variant_overrides)
    train = deep_merge(cfg.get("train", {}) or {}, (cfg.get("train_by_size") or {}).get(size, {}) or {})
    exp = ExperimentConfig(
        variant_name=variant,
        size=size,
        seed=seed,
        variant=variant_from(catalogue, variant, v_over),
        model=model_from(size, (cfg.get("model") or {}).get(size)),
        optim=from_dict(OptimConfig, cfg.get("optim", {}) or {}, "optim"),
        train=from_dict(TrainConfig, train, "train"),
        data=from_dict(DataConfig, cfg.get("data", {}) or {}, "data"),
        tracking=from_dict(TrackingConfig, cfg.get("tracking", {}) or {}, "tracking"),
    )
    check_schedule(exp.optim.warmup_steps, exp.train.steps)  # here, not in the types: stored runs still load
    return exp


def experiment_from_resolved(data: dict[str, Any]) -> ExperimentConfig:
    """Rebuild an ``ExperimentConfig`` from a run folder's ``config.yaml`` (``to_dict`` output)."""
    return from_dict(ExperimentConfig, data, "")
