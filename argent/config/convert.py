"""Strict dict -> dataclass conversion, the one every config section goes through: an unknown or
mistyped key is a ``ConfigError`` naming its full key path and the allowed keys (``from_dict``,
``check_partial`` for an override merged later); ``check_range`` the range check every type's
``__post_init__`` makes; ``named`` the ``"module:attribute"`` strings registries name their types and
functions by (argent.config.registry ``SECTIONS``, argent.config.loss_kinds).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from typing import Any, Literal

from argent.io import ArgentError


class ConfigError(ArgentError, ValueError):
    """A config value is missing, unknown or of the wrong type; the message names its key path."""



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
        arms = [arm for arm in args if arm is not type(None)]
        if value is None and len(arms) < len(args):
            return None
        if len(arms) == 1:  # an optional key: the one type's own message (``expected a list``)
            return _convert(value, arms[0], path)
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
    return _scalar(value, tp, path)


def _scalar(value: Any, tp: Any, path: str) -> Any:
    """A value of a plain type (bool, int, float, str, Any, the null of an optional key), checked."""
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


def config_keys(cls: type) -> dict[str, str]:
    """{config key: field name} of dataclass ``cls``. A field's key is its name unless its metadata
    gives one (``field(metadata={"key": "from"})``: a key that is a Python keyword)."""
    return {f.metadata.get("key", f.name): f.name for f in dataclasses.fields(cls)}


def _check_keys(cls: type, data: dict[str, Any], path: str) -> dict[str, str]:
    """The keys of ``data`` that ``cls`` knows; a removed key (``cls.REMOVED``: key -> what to do
    instead) or an unknown one is a ``ConfigError`` naming its path and the allowed keys."""
    keys = config_keys(cls)
    where = path or cls.__name__
    for key, why in getattr(cls, "REMOVED", {}).items():
        if key in data:
            raise ConfigError(f"{where}.{key}: removed; {why}")
    unknown = sorted(set(data) - set(keys), key=str)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; allowed: {list(keys)}")
    return keys


def from_dict(cls: type, data: dict[str, Any], path: str = "") -> Any:
    """Build dataclass ``cls`` from ``data``; unknown keys and wrong types raise ``ConfigError``."""
    hints = typing.get_type_hints(cls)
    keys = _check_keys(cls, data, path)
    kwargs = {keys[k]: _convert(v, hints[keys[k]], f"{path}.{k}" if path else k) for k, v in data.items()}
    try:
        return cls(**kwargs)
    except TypeError as err:  # a required field is missing
        raise ConfigError(f"{path or cls.__name__}: {err}") from None
    except ConfigError as err:
        raise ConfigError(f"{path}.{err}" if path else str(err)) from None


def check_partial(cls: type, data: Any, path: str) -> None:
    """Check ``data``, a partial mapping of dataclass ``cls`` (an override merged over a base later):
    every key a field of ``cls`` and every value of its field's type, named by its full key path.
    Range checks that need the whole object are left to ``from_dict`` on the merged mapping."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    keys = _check_keys(cls, data, path)
    for key, value in data.items():
        tp = hints[keys[key]]
        if dataclasses.is_dataclass(tp) and isinstance(value, dict):
            check_partial(tp, value, f"{path}.{key}")
        else:
            _convert(value, tp, f"{path}.{key}")


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

