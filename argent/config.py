"""Typed configuration: variants, model sizes, optimisation, data.

Everything a run depends on is one ``ExperimentConfig``, built from the workflow's YAML config
(``config/config.yaml`` & co.) plus the variant catalogue (``config/variants.yaml``). Unknown or
mistyped keys fail with the key's full path and the allowed values; nothing is silently ignored.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import re
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from argent.io import ArgentError

PAIR_TYPES = ("text_image", "phrase_crop", "crop_image", "phrase_text")
"""Entailment pairs, named parent_child: caption ⊒ image, phrase ⊒ crop (inter-modality);
crop ⊒ image, phrase ⊒ caption (intra-modality: a box is more general than its whole)."""
INTRA_PAIRS = ("crop_image", "phrase_text")


class ConfigError(ArgentError, ValueError):
    """A config value is missing, unknown or of the wrong type; the message names its key path."""


# --------------------------------------------------------------------------------------------
# Sections
# --------------------------------------------------------------------------------------------


def check_range(key: str, value: float, low: float | None = None, high: float | None = None,
                low_open: bool = False, high_open: bool = False) -> None:
    """Raise ``ConfigError`` naming ``key`` when ``value`` is outside [low, high] (open ends when asked).
    ``from_dict`` prefixes the section, so the message carries the key's full path."""
    too_low = low is not None and (value <= low if low_open else value < low)
    too_high = high is not None and (value >= high if high_open else value > high)
    if too_low or too_high:
        lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high is None else f"{'<' if high_open else '<='} {high:g}"
        raise ConfigError(f"{key}: {value!r} is out of range; must be {' and '.join(x for x in (lo, hi) if x)}")


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
    entailment: Literal["none", "cone", "adaptive"] = "none"
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

    def __post_init__(self) -> None:
        for key in ("image_size", "patch_size", "vision_width", "vision_layers", "vision_heads", "text_width",
                    "text_layers", "text_heads", "context_length", "vocab_size", "embed_dim"):
            check_range(key, getattr(self, key), low=1)
        for key in ("vision_mlp_ratio", "curv_init", "logit_scale_init", "logit_scale_max"):
            check_range(key, getattr(self, key), low=0.0, low_open=True)


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
    """AdamW + linear warm-up + half-cosine, the MERU/HyCoCLIP recipe."""

    lr: float = 5e-4
    betas: tuple[float, float] = (0.9, 0.98)
    weight_decay: float = 0.2
    # MERU/HyCoCLIP pass 0.0 through `x or weight_decay`, so their LayerNorm gains and biases are
    # decayed with 0.2. 0.2 here reproduces the published runs; 0.0 is the documented fix.
    norm_bias_decay: float = 0.2
    warmup_steps: int = 4000
    grad_clip: float = 0.0  # 0 = none (the recipe)

    def __post_init__(self) -> None:
        check_range("lr", self.lr, low=0.0, low_open=True)
        for i, beta in enumerate(self.betas):
            check_range(f"betas[{i}]", beta, low=0.0, high=1.0, high_open=True)
        check_range("weight_decay", self.weight_decay, low=0.0)
        check_range("norm_bias_decay", self.norm_bias_decay, low=0.0)
        check_range("warmup_steps", self.warmup_steps, low=0)
        check_range("grad_clip", self.grad_clip, low=0.0)


@dataclass
class TrainConfig:
    batch_size: int = 768
    steps: int = 500_000
    device: str = "cpu"
    precision: Literal["fp32", "bf16"] = "fp32"
    deterministic: bool = False
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
        for key in ("batch_size", "steps", "log_every", "diagnostics_every", "checkpoint_every"):
            check_range(key, getattr(self, key), low=1)
        for key in ("num_workers", "max_skipped_steps", "shuffle_buffer"):
            check_range(key, getattr(self, key), low=0)


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

    def result_hash(self) -> str:
        """Hash of everything that changes the result (not logging, checkpointing or tracking)."""
        d = self.to_dict()
        for key in ("log_every", "diagnostics_every", "checkpoint_every", "num_workers"):
            d["train"].pop(key)
        d.pop("tracking")
        d["variant"].pop("description")
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------
# Strict dict -> dataclass conversion
# --------------------------------------------------------------------------------------------


def _convert(value: Any, tp: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping, got {type(value).__name__}")
        return from_dict(tp, value, path)
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{path}: {value!r} is not allowed; allowed: {list(args)}")
        return value
    if origin in (typing.Union, types.UnionType):
        errors = []
        for arm in args:
            try:
                return _convert(value, arm, path)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(f"{path}: {value!r} matches none of {args}")
    if origin is list:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"{path}: expected a list, got {value!r}")
        return [_convert(v, args[0], f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is tuple:
        if not isinstance(value, (list, tuple)) or len(value) != len(args):
            raise ConfigError(f"{path}: expected {len(args)} values, got {value!r}")
        return tuple(_convert(v, a, f"{path}[{i}]") for i, (v, a) in enumerate(zip(value, args)))
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{path}: expected a mapping, got {value!r}")
        return {str(k): _convert(v, args[1], f"{path}.{k}") for k, v in value.items()}
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{path}: expected true/false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, str):
            # PyYAML reads 1e-3 (no dot) as a string; accept what float() reads.
            try:
                value = float(value)
            except ValueError:
                raise ConfigError(f"{path}: expected a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}: expected a number, got {value!r}")
        if not math.isfinite(value):
            raise ConfigError(f"{path}: expected a finite number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{path}: expected a string, got {value!r}")
        return value
    if tp is Any:
        return value
    if tp is type(None):  # the null arm of an optional key (``x: float | None``)
        if value is not None:
            raise ConfigError(f"{path}: expected null, got {value!r}")
        return None
    raise ConfigError(f"{path}: unsupported type {tp}")


def from_dict(cls: type, data: dict[str, Any], path: str = "") -> Any:
    """Build dataclass ``cls`` from ``data``; unknown keys and wrong types raise ``ConfigError``."""
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(data) - set(names))
    if unknown:
        where = path or cls.__name__
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {names}")
    kwargs = {k: _convert(v, hints[k], f"{path}.{k}" if path else k) for k, v in data.items()}
    try:
        return cls(**kwargs)
    except TypeError as err:  # a required field is missing
        raise ConfigError(f"{path or cls.__name__}: {err}") from None
    except ConfigError as err:
        raise ConfigError(f"{path}.{err}" if path else str(err)) from None


def deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """Recursive dict merge; ``override`` wins; neither input is modified."""
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def parse_override(text: str) -> dict[str, Any]:
    """``a.b.c=value`` (value parsed as YAML) -> nested dict."""
    if "=" not in text:
        raise ConfigError(f"override {text!r}: expected key.path=value")
    key, raw = text.split("=", 1)
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError as err:
        raise ConfigError(f"override {text!r}: the value is not valid YAML ({err})") from None
    if not key.strip() or any(not part for part in key.strip().split(".")):
        raise ConfigError(f"override {text!r}: expected key.path=value (an empty part in {key!r})")
    out: dict[str, Any] = {}
    node = out
    parts = key.strip().split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = value
    return out


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------

WORKFLOW_SECTIONS = (
    "variants_file", "results", "hiershapes", "hiershapes_templates", "runs", "model", "optim", "train",
    "train_by_size", "data", "tracking", "variant", "variant_overrides", "evaluate", "benchmarks", "clean",
    "negatives", "tune", "probe", "tables",
)
"""Top-level sections of the workflow config (workflow/schemas/config.schema.yaml: a test keeps the
two lists equal). Anything else is a typo, and an error."""


def check_sections(cfg: dict[str, Any], where: str = "config") -> None:
    unknown = sorted(set(cfg) - set(WORKFLOW_SECTIONS))
    if unknown:
        raise ConfigError(f"{where}: unknown top-level section(s) {unknown}; allowed: {list(WORKFLOW_SECTIONS)}")


NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
SIZE_RE = re.compile(r"^[A-Za-z0-9]+$")
"""Names that become path components (variants, benchmarks, studies): no '/', nothing that
escapes ``results/``. Sizes have no '-' so that the run folder ``<variant>-<size>`` splits."""


def check_name(name: str, what: str) -> str:
    pattern = SIZE_RE if what.endswith("size") else NAME_RE
    if not isinstance(name, str) or not pattern.match(name) or ".." in name:
        raise ConfigError(f"{what}: {name!r} is not a valid name (letters, digits, _ . + -; no '/' or '..')")
    return name


def load_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    return data


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
        resolve(name)
    return resolved


def variant_from(catalogue: dict[str, dict[str, Any]], name: str, overrides: dict | None = None) -> VariantConfig:
    if name not in catalogue:
        raise ConfigError(f"variant {name!r} not in the catalogue; known: {sorted(catalogue)}")
    return from_dict(VariantConfig, deep_merge(catalogue[name], overrides or {}), f"variants.{name}")


def model_from(size: str, overrides: dict[str, Any] | None = None) -> ModelConfig:
    if size not in MODEL_SIZES:
        raise ConfigError(f"size: {size!r} unknown; known: {sorted(MODEL_SIZES)}")
    return from_dict(ModelConfig, deep_merge(MODEL_SIZES[size], overrides or {}), f"model.{size}")


def load_experiment(
    config_path: str | Path,
    variant: str,
    size: str,
    seed: int,
    overrides: list[str] | tuple[str, ...] = (),
    variant_overrides: dict[str, Any] | None = None,
) -> ExperimentConfig:
    """Resolve one run's config from the workflow config file.

    Sections read: ``variants_file`` (a relative path is taken from the working directory, the
    project root when the workflow runs it), ``variant_overrides.<name>``, ``model.<size>``, ``optim``, ``train``,
    ``train_by_size.<size>``, ``data``, ``tracking``. ``overrides`` are ``key.path=value`` strings
    applied last (e.g. ``train.steps=10``, ``variant.huber_beta=0.5``).
    """
    config_path = Path(config_path)
    cfg = load_yaml(config_path)
    check_sections(cfg, str(config_path))
    for text in overrides:
        override = parse_override(text)
        check_sections(override, f"--set {text}")
        cfg = deep_merge(cfg, override)
    return experiment_from_dict(cfg, variant, size, seed, base_dir=Path.cwd(), variant_overrides=variant_overrides)


def experiment_from_dict(
    cfg: dict[str, Any],
    variant: str,
    size: str,
    seed: int,
    base_dir: Path = Path("."),
    variant_overrides: dict[str, Any] | None = None,
) -> ExperimentConfig:
    check_name(variant, "variant")
    check_name(size, "size")
    check_sections(cfg)
    variants_file = Path(cfg.get("variants_file", "config/variants.yaml"))
    if not variants_file.is_absolute():
        variants_file = base_dir / variants_file
    if not variants_file.is_file():
        raise ConfigError(f"variants_file: {variants_file} not found (a relative path is taken from {base_dir}); "
                          f"run from the project root or give an absolute path")
    catalogue = load_variants(variants_file)
    for section, allowed in (("model", MODEL_SIZES), ("train_by_size", MODEL_SIZES), ("variant_overrides", catalogue)):
        value = cfg.get(section) or {}
        if not isinstance(value, dict):
            raise ConfigError(f"{section}: expected a mapping, got {value!r}")
        unknown = sorted(set(value) - set(allowed))
        if unknown:
            raise ConfigError(f"{section}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    v_over = deep_merge((cfg.get("variant_overrides") or {}).get(variant, {}), cfg.get("variant", {}) or {})
    v_over = deep_merge(v_over, variant_overrides or {})
    train = deep_merge(cfg.get("train", {}) or {}, (cfg.get("train_by_size") or {}).get(size, {}) or {})
    return ExperimentConfig(
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


def experiment_from_resolved(data: dict[str, Any]) -> ExperimentConfig:
    """Rebuild an ``ExperimentConfig`` from a run folder's ``config.yaml`` (``to_dict`` output)."""
    return from_dict(ExperimentConfig, data, "")


# --------------------------------------------------------------------------------------------
# One stage's section of the workflow config (argent clean, argent mine)
# --------------------------------------------------------------------------------------------


def section_of(raw: dict[str, Any], section: str) -> dict[str, Any]:
    """``raw[section]`` as a mapping (absent or null: empty, so every default applies)."""
    value = raw.get(section)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConfigError(f"{section}: expected a mapping, got {value!r}")
    return value


def load_section(config: str | Path | None, overrides: list[str] | tuple[str, ...], section: str,
                 parse: typing.Callable[[dict[str, Any]], Any]) -> Any:
    """Read the workflow config file (None: empty), apply ``--set section.key=value`` overrides, parse.

    A stage reads only its own section, so an override elsewhere would do nothing: it is refused.
    Errors name the file (and ``--set`` when overrides were given) before the key path.
    """
    raw = load_yaml(config) if config is not None else {}
    for text in overrides:
        override = parse_override(text)
        if set(override) != {section}:
            raise ConfigError(f"--set {text}: this verb reads only the {section}: section; "
                              f"use {section}.<key>=<value>")
        raw = deep_merge(raw, override)
    where = f"{config}{' with --set' if overrides else ''}: " if config is not None else ("--set: " if overrides else "")
    try:
        return parse(raw)
    except ConfigError as err:
        raise ConfigError(f"{where}{err}") from None
