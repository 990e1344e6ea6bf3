"""Reading a workflow config file: strict YAML (a repeated key is an error, not "the last wins"), the
merge layers as Snakemake applies them (``config/config.yaml``, the file, ``--set key.path=value``
overrides; ``deep_merge``), the top-level sections checked against the registry (argent.config.registry).
docs/config.md lists the merge layers.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any

import yaml

from argent.config.convert import ConfigError
from argent.config.registry import check_sections

# --------------------------------------------------------------------------------------------
# Strict YAML: every config file argent or the workflow reads goes through ``strict_yaml``
# --------------------------------------------------------------------------------------------

MERGE_TAG = "tag:yaml.org,2002:merge"


class StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses a key repeated in one mapping: PyYAML keeps the last one
    silently (a second ``train:`` section, ``{steps: 12, steps: 2}``). ``<<`` merges may still be
    overridden by an explicit key, as YAML intends."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:
                continue
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            try:
                if key in first:
                    raise ConfigError(f"{key_node.start_mark.name}:{line}: duplicate key {key!r} (first at line "
                                      f"{first[key]}); YAML would keep the last one silently: keep one of them")
                first[key] = line
            except TypeError:  # an unhashable key: SafeLoader's own error names it
                continue
        return super().construct_mapping(node, deep=deep)


def strict_yaml(text: str, where: str | Path) -> Any:
    """``text`` parsed as YAML by ``StrictLoader``; ``where`` (the file) names it in every error mark."""
    loader = StrictLoader(text)
    loader.name = str(where)  # the marks (line numbers) of every error carry this name
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def check_duplicate_keys(paths: typing.Iterable[str | Path]) -> None:
    """Raise ``ConfigError`` for the first repeated key in any of ``paths`` (files that exist and parse;
    other errors are left to the reader that owns the file). For readers that parse YAML themselves:
    Snakemake's ``configfile:``."""
    for path in paths:
        path = Path(path)
        if not path.is_file():
            continue
        try:
            strict_yaml(path.read_text(), path)
        except yaml.YAMLError:
            continue


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
        value = strict_yaml(raw, f"--set {key}")
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



def load_workflow_config(path: str | Path, overrides: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    """The workflow config every verb reads: the file, ``--set key.path=value`` overrides on top, its
    top-level sections checked (a typo is an error naming the key and the allowed sections)."""
    cfg = load_yaml(path)
    check_sections(cfg, str(path))
    for text in overrides:
        override = parse_override(text)
        check_sections(override, f"--set {text}")
        cfg = deep_merge(cfg, override)
    return cfg


DEFAULT_CONFIG = Path("config") / "config.yaml"
"""The Snakefile's ``configfile:``; ``snakemake --configfile FILE`` merges FILE over it."""


def load_merged_config(path: str | Path, overrides: list[str] | tuple[str, ...] = (),
                       base_dir: str | Path | None = None, merge_default: bool = True) -> dict[str, Any]:
    """The workflow config as Snakemake sees it: ``<base_dir>/config/config.yaml`` (base_dir: the
    working folder), ``path`` merged over it, then the ``--set`` overrides. Every verb that reads a
    workflow config uses this, so ``--config config/quick.yaml`` means the same to each as to
    Snakemake. ``merge_default=False`` (``--no-default``) reads ``path`` alone; so does a ``path``
    that is the default itself, or a project without a default."""
    default = Path.cwd() / DEFAULT_CONFIG if base_dir is None else Path(base_dir) / DEFAULT_CONFIG
    cfg: dict[str, Any] = {}
    if merge_default and default.is_file() and default.resolve() != Path(path).resolve():
        cfg = load_yaml(default)
        check_sections(cfg, str(default))
    cfg = deep_merge(cfg, load_workflow_config(path, overrides))
    check_sections(cfg)
    return cfg


def load_yaml(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: config file not found")
    try:
        data = strict_yaml(path.read_text(), path) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    return data
