"""The workflow config's derived paths: filled in from ``results:`` and ``hiershapes.out`` once, where the
config is read (``argent.config.load_config`` and the Snakefile), so no config spells them.

A config spells a path only where the user's own data lives. What the workflow makes, it names:

- ``benchmarks.<name>.dataset: hiershapes`` (with ``split: val`` for the validation split): the
  entry's data paths under ``hiershapes.out`` (``argent.runs.embedded.HiershapesFolder``);
- ``clean.datasets.<name>: {dataset: hiershapes, split: ...}``: the split's ``csv`` and ``images``;
- every PEP entry's ``clean_csv`` and ``negative_pool``: ``<results>/data/<dataset>/`` of the
  ``clean.datasets`` entry that cleans its ``hierarcaps_csv`` (none: PEP reads the whole split);
- ``data.train_shards: hiershapes`` and ``probe.data: hiershapes``: the generated shards / image folders;
- ``data.negatives: <name>`` -> ``<results>/data/negatives/<name>.parquet`` and ``data.image_cache:
  <name>`` -> ``<results>/data/image_cache/<name>`` (also in ``groups.<g>.overrides.data``).

A key the config spells is kept (the user's data), except a path the layout owns: a cleaned file,
or a negatives parquet or cache under ``results:`` (or in another results folder's layout), unless it
is exactly the path derived here. Those are refused, naming the key: a path spelled by hand does not
follow ``results:``, and a run would read another run's files. Filling in is idempotent, so a
derived config (``<results>/workflow_config.yaml``, a group's) reads back unchanged.

Beside the paths it fills in the identities of the data the workflow makes, which the run identity
hashes in their place (argent/runs/identity.py ``run_identity``), so a moved or renamed results or data
folder keeps every run: ``data.dataset_hash`` of the embedded data set (its generator's parameters)
and ``data.negatives_id`` of a mined table (the mining options and WordNet's content).
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from argent.config.convert import ConfigError
from argent.runs.embedded import DEFAULT_HIERSHAPES, EMBEDDED, VAL, HiershapesFolder
from argent.runs.identity import content_digest, stable_hash
from argent.runs.layout import (
    DEFAULT_RESULTS,
    IMAGE_CACHE_DIR,
    NEGATIVES_DIR,
    RESERVED_DATA_NAMES,
    Results,
    is_under,
)

__all__ = ["derive_paths"]

# A name, not a path: no '/', no '.' (``negs.parquet`` is a file in the working folder).
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
CLEANED_KEYS = ("clean_csv", "negative_pool")  # a PEP entry's files from argent clean (CleanFolder)


def derive_paths(raw: dict[str, Any]) -> dict[str, Any]:
    """A copy of the merged workflow config ``raw`` with every derived path filled in (module docstring).
    Raises ``ConfigError`` naming the key for a spelled path the layout owns."""
    cfg = copy.deepcopy(raw)  # YAML anchors share mappings between groups: fill each copy on its own
    results = Results(Path(str(cfg.get("results") or DEFAULT_RESULTS)))
    hiershapes = cfg.get("hiershapes")
    hs = HiershapesFolder(Path(str((hiershapes if isinstance(hiershapes, dict) else {}).get("out")
                                   or DEFAULT_HIERSHAPES)))
    _clean_datasets(cfg, hs)
    _benchmarks(cfg, hs, results)
    ids = DataIds(_generated_data_id(hiershapes), _negatives_id(cfg.get("negatives")))
    _data(cfg.get("data"), "data", hs, results, ids)
    groups = cfg.get("groups")
    for name, group in (groups.items() if isinstance(groups, dict) else ()):
        overrides = group.get("overrides") if isinstance(group, dict) else None
        if isinstance(overrides, dict):
            _data(overrides.get("data"), f"groups.{name}.overrides.data", hs, results, ids)
    probe = cfg.get("probe")
    if isinstance(probe, dict) and probe.get("data", EMBEDDED) == EMBEDDED:
        probe["data"] = str(hs.classification())
    return cfg


def _split(entry: dict[str, Any], where: str) -> str:
    split = entry.get("split", "test")
    if split not in (VAL, "test"):
        raise ConfigError(f"{where}.split: {split!r}; the {EMBEDDED} data set has the splits 'test' (default) and 'val'")
    return split


def _dataset(entry: dict[str, Any], where: str) -> bool:
    """Pop ``dataset:``; True when it names the embedded data set (anything else is an error)."""
    if "dataset" not in entry:
        return False
    name = entry.pop("dataset")
    if name != EMBEDDED:
        raise ConfigError(f"{where}.dataset: {name!r}; the workflow generates one data set, {EMBEDDED!r} "
                          f"(under hiershapes.out). For other data, spell its paths instead")
    return True


def _fill(entry: dict[str, Any], paths: dict[str, str]) -> None:
    for key, value in paths.items():
        entry.setdefault(key, value)  # a spelled key is the user's own data


def _clean_datasets(cfg: dict[str, Any], hs: HiershapesFolder) -> None:
    datasets = (cfg.get("clean") or {}).get("datasets") if isinstance(cfg.get("clean"), dict) else None
    for name, entry in (datasets.items() if isinstance(datasets, dict) else ()):
        where = f"clean.datasets.{name}"
        if name in RESERVED_DATA_NAMES:
            raise ConfigError(f"{where}: {name!r} is a folder of the results layout (<results>/data/{name}/); "
                              f"name the data set otherwise")
        if isinstance(entry, dict) and _dataset(entry, where):
            _fill(entry, hs.clean_source(_split(entry, where)))
            entry.pop("split", None)


def _benchmarks(cfg: dict[str, Any], hs: HiershapesFolder, results: Results) -> None:
    entries = cfg.get("benchmarks")
    for name, entry in (entries.items() if isinstance(entries, dict) else ()):
        if not isinstance(entry, dict):
            continue  # parse_benchmark names it
        where = f"benchmarks.{name}"
        if _dataset(entry, where):
            protocol, split = entry.get("protocol"), _split(entry, where)
            paths = hs.benchmark_paths(str(protocol), split)
            if not paths:
                raise ConfigError(f"{where}: the {EMBEDDED} data set has no {split} split for protocol {protocol!r}; "
                                  f"spell the entry's paths instead of dataset: {EMBEDDED}")
            _fill(entry, paths)
        if entry.get("protocol") == "pep":
            _cleaned(entry, where, cfg, results)


def _same_file(a: str, b: str) -> bool:
    """The same path once normalised by its parts (relative ones from the working folder)."""
    return os.path.abspath(a) == os.path.abspath(b)


def _cleaned(entry: dict[str, Any], where: str, cfg: dict[str, Any], results: Results) -> None:
    """``clean_csv`` / ``negative_pool`` of a PEP entry: argent clean's outputs for its split, always derived."""
    csv = entry.get("hierarcaps_csv")
    if not isinstance(csv, str):
        return  # parse_benchmark names it
    datasets = ((cfg.get("clean") or {}).get("datasets") or {}) if isinstance(cfg.get("clean"), dict) else {}
    names = [n for n, d in datasets.items() if isinstance(d, dict) and _same_file(str(d.get("csv", "")), csv)]
    derived = {key: [str(getattr(results.clean(n), key)) for n in names] for key in CLEANED_KEYS}
    for key in CLEANED_KEYS:
        spelled = entry.get(key)
        if spelled is None:
            continue
        if not any(_same_file(str(spelled), path) for path in derived[key]):
            source = (f"<results>/data/<dataset>/ of clean.datasets {names}: {derived[key]}" if names else
                      f"none: no clean.datasets entry reads {csv}, so PEP reads the whole split")
            raise ConfigError(f"{where}.{key}: {spelled!r} is spelled by hand, but argent clean's outputs are derived "
                              f"from `results:` ({results.root}) and the clean.datasets entry whose csv is this "
                              f"entry's hierarcaps_csv ({source}). Remove {key}")
    if len(names) > 1 and not all(key in entry for key in CLEANED_KEYS):
        raise ConfigError(f"{where}: clean.datasets {names} all clean its hierarcaps_csv {csv}; keep one of them "
                          f"(the PEP entry reads the cleaned files of the one that does)")
    if names:
        for key in CLEANED_KEYS:
            entry.setdefault(key, derived[key][0])


@dataclass(frozen=True)
class DataIds:
    """The identities (argent/runs/identity.py ``run_identity``) of the data the workflow makes."""

    generated: str  # the embedded data set's: its generator's parameters
    negatives: str  # a mined negatives table's: the mining options and the WordNet it reads


def _generated_data_id(hiershapes: Any) -> str:
    """``hiershapes-<hash of hiershapes.params>``: what argent synth writes depends on them, not on ``out``."""
    params = hiershapes.get("params") if isinstance(hiershapes, dict) else None
    return f"hiershapes-{stable_hash(params or {})}"


def _negatives_id(negatives: Any) -> str:
    """``mined-<hash>`` of the ``negatives:`` options, with WordNet's content in place of its path."""
    options = dict(negatives) if isinstance(negatives, dict) else {}
    wordnet = options.pop("wordnet_zip", "")
    return f"mined-{stable_hash({'options': options, 'wordnet': content_digest(str(wordnet)) if wordnet else ''})}"


def _data(data: Any, where: str, hs: HiershapesFolder, results: Results, ids: DataIds) -> None:
    """``train_shards: hiershapes``; ``negatives`` / ``image_cache``: a name under ``results:``; the
    identities of the data the workflow makes (``dataset_hash``, ``negatives_id``)."""
    if not isinstance(data, dict):
        return
    shards = data.get("train_shards")
    if shards == EMBEDDED or (isinstance(shards, str) and shards and _same_file(shards, hs.train_shards)):
        data["train_shards"] = hs.train_shards
        data["dataset_hash"] = ids.generated
    elif shards:
        data.setdefault("dataset_hash", "")  # a base's embedded-data identity is not this data's
    layouts = {"negatives": (NEGATIVES_DIR, results.negatives, lambda p: p.name.removesuffix(".parquet")),
               "image_cache": (IMAGE_CACHE_DIR, results.image_cache, lambda p: p.name)}
    for key, (folder, of_name, name_of) in layouts.items():
        value = data.get(key)
        if not isinstance(value, str) or not value:
            continue
        if NAME.match(value) or _same_file(value, str(of_name(name_of(Path(value))))):  # a name, or read back
            data[key] = str(of_name(value if NAME.match(value) else name_of(Path(value))))
            if key == "negatives":
                data["negatives_id"] = ids.negatives
            continue
        path = Path(value)
        name = name_of(path)
        other_layout = path.parent.name == folder and path.parent.parent.name == "data"
        if is_under(value, results.root) or other_layout:
            where_it_is = (f"it lies in this config's results folder {results.root}" if is_under(value, results.root)
                           else f"it is in the layout of another results folder ({path.parent.parent.parent})")
            raise ConfigError(f"{where}.{key}: {value!r}: {where_it_is}, and paths there are derived from "
                              f"`results:`. Write the name only ({key}: {name} means {of_name(name)}), or a path "
                              f"outside any results folder for files of your own")
        if key == "negatives":
            data["negatives_id"] = ""  # a file of the user's own: its content is its identity
