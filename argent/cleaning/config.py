"""The cleaning stage's part of the workflow config: the ``clean:`` section, typed and checked.

Parsing goes through ``argent.config.from_dict``: an unknown key names its full path and the allowed
keys; a wrongly typed value names its path, the value and the expected type. docs/method.md
§6.4 explains what each setting does to the kept set and the negative pool.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from argent.config import ConfigError, check_device, from_dict, load_config, section_of


@dataclass
class CleanDataset:
    """One HierarCaps-format data set the workflow cleans: its CSV, its image folder and, where it
    differs from the section's, its own ``keep`` (ARGENT's 522 is the real HierarCaps' cleaned size;
    a split of another size names its own)."""

    csv: str
    images: str
    keep: int | Literal["all"] | None = None  # None: the section's keep

    def __post_init__(self) -> None:
        if isinstance(self.keep, int) and self.keep < 0:
            raise ConfigError(f"keep: must be >= 0, 'all' or null (the section's keep), got {self.keep}")


@dataclass
class CleanSection:
    """``clean:``: which data sets the workflow cleans and every option of ``argent clean``."""

    datasets: dict[str, CleanDataset] = field(default_factory=dict)
    scorer: str = "text"  # text | checkpoint:<run dir> | open_clip:<arch>:<file> | hf:<folder>
    verifier: str = ""  # "" = none; hf:<BLIP-ITM folder> replaces the alignment score
    keep: int | Literal["all"] = 522  # most unambiguous samples kept, best alignment first
    min_margin: float = 0.0  # unambiguous iff own score − best rival > this (0: mutual top-1)
    min_alignment: float | None = None  # also require alignment ≥ this (null: no floor)
    pool_size: int = 100  # captions in the rarely-retrieved negative pool
    degree_k: int = 10  # top-k captions per image counted for the retrieval degree
    table1: bool = True  # run the Table 1 false-negative analysis
    table1_ks: list[int] = field(default_factory=lambda: [0, 5, 10])  # neighbour counts
    table1_steps: int = 50  # radius thresholds swept by the protocol
    table1_scorer: str = ""  # model evaluated in Table 1 ("" = the scorer); neighbours come from the scorer
    seed: int = 0  # torch/numpy seed (recorded; scoring is deterministic)
    bad_data: Literal["skip", "strict"] = "skip"
    batch_size: int = 64
    device: str = "cpu"

    def __post_init__(self) -> None:
        # Messages start with the key: from_dict prefixes the section path.
        if isinstance(self.keep, int) and self.keep < 0:
            raise ConfigError(f"keep: must be >= 0 or 'all', got {self.keep}")
        for name, low in (("pool_size", 0), ("degree_k", 1), ("table1_steps", 2), ("batch_size", 1)):
            if getattr(self, name) < low:
                raise ConfigError(f"{name}: must be >= {low}, got {getattr(self, name)}")
        if any(k < 0 for k in self.table1_ks):
            raise ConfigError(f"table1_ks: neighbour counts must be >= 0, got {self.table1_ks}")
        if not self.scorer:
            raise ConfigError("scorer: give a scorer spec (e.g. text)")
        check_device("device", self.device)  # as train.device: a name torch knows, at argent check / DAG build

    @property
    def keep_count(self) -> int | None:
        """``keep`` as the selection rule takes it: None = every sample passing the thresholds."""
        return None if self.keep == "all" else self.keep

    def for_dataset(self, name: str) -> CleanSection:
        """The options that clean data set ``name``: this section's, with the data set's own keep."""
        if name not in self.datasets:
            raise ConfigError(f"clean.datasets: no data set {name!r}; known: {sorted(self.datasets)}")
        own = self.datasets[name].keep
        return self if own is None else dataclasses.replace(self, keep=own)

    def dataset_of(self, csv: str | Path) -> str | None:
        """The name of the data set whose ``csv`` is this file (paths compared once resolved against
        the working directory, as the workflow passes them), or None. Several entries on one file
        must agree on their options, else the caller has to name one (``argent clean --dataset``)."""
        target = Path(csv).resolve()
        names = [n for n, d in self.datasets.items() if Path(d.csv).resolve() == target]
        if len({self.for_dataset(n).keep for n in names}) > 1:
            raise ConfigError(f"clean.datasets: {names} all read {csv} with different keep values; "
                              "name one with --dataset")
        return names[0] if names else None


def clean_section(raw: dict[str, Any], base_dir: Path | None = None) -> CleanSection:
    """Check a workflow config mapping's ``clean:`` section (absent: every default)."""
    return from_dict(CleanSection, section_of(raw, "clean"), "clean")


def load_clean_section(config: str | Path | None, overrides: list[str] | tuple[str, ...] = (),
                       merge_default: bool = True) -> CleanSection:
    """The ``clean:`` section of the workflow config file merged over config/config.yaml as Snakemake
    merges it (``merge_default=False``: the file alone; none: defaults), after
    ``clean.<key>=<value>`` overrides (argent.config.workflow, the one door)."""
    return load_config(config, overrides, merge_default=merge_default, only="clean").clean
