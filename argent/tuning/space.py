"""The search space: which variant fields a study samples, and how a sample becomes a variant."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any, Literal

from argent.config import ConfigError, VariantConfig

__all__ = ["ParamSpace", "check_space", "sample_params", "variant_overrides"]


@dataclass
class ParamSpace:
    """One searched variant field: a float/int range (``low``, ``high``, ``log``, ``step``) or ``choices``."""

    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: list[Any] | None = None
    type: Literal["auto", "float", "int", "categorical"] = "auto"


def _variant_field_type(name: str) -> Any:
    """Type of a (dotted) VariantConfig field, e.g. ``huber_beta`` or ``cement.margin_max``."""
    cls: Any = VariantConfig
    parts = name.split(".")
    for i, part in enumerate(parts):
        hints = typing.get_type_hints(cls)
        if part not in hints:
            raise ConfigError(f"{'.'.join(parts[: i + 1])}: not a variant field; allowed: {sorted(hints)}")
        cls = hints[part]
        if i < len(parts) - 1 and not dataclasses.is_dataclass(cls):
            raise ConfigError(f"{'.'.join(parts[: i + 1])}: has no sub-fields")
    if dataclasses.is_dataclass(cls):
        raise ConfigError(f"{name}: is a section; search its fields ({name}.<field>)")
    return cls


def check_space(name: str, spec: ParamSpace, path: str) -> None:
    """``name`` must be a variant field and ``spec`` a range or choice list Optuna can sample."""
    try:
        tp = _variant_field_type(name)
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None
    if spec.type == "auto":
        spec.type = "categorical" if spec.choices is not None else ("int" if tp is int else "float")
    if spec.type == "categorical":
        if not spec.choices:
            raise ConfigError(f"{path}.choices: a categorical parameter needs a non-empty list of choices")
        if spec.low is not None or spec.high is not None or spec.log or spec.step is not None:
            raise ConfigError(f"{path}: give either choices or low/high/log/step, not both")
        for choice in spec.choices:  # what Optuna can store as a categorical value
            if choice is not None and not isinstance(choice, (bool, int, float, str)):
                raise ConfigError(f"{path}.choices: {choice!r} is not a scalar (null, bool, number or string)")
        return
    # An int range of a float field is allowed (e.g. h_tau in {1, 2, 3}); a range of a str/bool field is not.
    if tp not in (int, float):
        raise ConfigError(f"{path}: field type {tp} is not numeric; give choices: [...] instead of low/high")
    if spec.choices is not None:
        raise ConfigError(f"{path}: give either choices or low/high/log/step, not both")
    if spec.low is None or spec.high is None:
        raise ConfigError(f"{path}: low and high are required for a {spec.type} range")
    if not spec.low < spec.high:
        raise ConfigError(f"{path}: low ({spec.low}) must be < high ({spec.high})")
    if spec.log and spec.low <= 0:
        raise ConfigError(f"{path}.low: a log-scale range needs low > 0")
    if spec.log and spec.step is not None:
        raise ConfigError(f"{path}: step and log cannot be combined (Optuna)")
    if spec.type == "int":
        for key in ("low", "high", "step"):
            value = getattr(spec, key)
            if value is not None and float(value) != int(value):
                raise ConfigError(f"{path}.{key}: an int range needs integer bounds, got {value}")


def sample_params(trial: Any, space: dict[str, ParamSpace]) -> dict[str, Any]:
    """Draw every searched field for ``trial`` (an ``optuna.Trial``): name -> value."""
    out: dict[str, Any] = {}
    for name, spec in space.items():
        if spec.type == "categorical":
            out[name] = trial.suggest_categorical(name, spec.choices)
        elif spec.type == "int":
            out[name] = trial.suggest_int(name, int(spec.low), int(spec.high), step=int(spec.step or 1), log=spec.log)
        else:
            out[name] = trial.suggest_float(name, spec.low, spec.high, step=spec.step, log=spec.log)
    return out


def variant_overrides(params: dict[str, Any]) -> dict[str, Any]:
    """Flat (dotted) parameter names -> the nested mapping ``VariantConfig`` / ``best.yaml`` take."""
    out: dict[str, Any] = {}
    for name, value in params.items():
        node = out
        parts = name.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out
