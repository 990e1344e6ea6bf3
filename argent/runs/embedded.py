"""The embedded data set's layout: what ``argent synth`` writes under ``hiershapes.out`` (argent/data/hiershapes/
generate.py), and which of it each evaluation protocol reads (``HiershapesFolder.benchmark_paths``, from the
protocol's record). The results layout beside it (argent/runs/layout.py) derives every path of a results folder;
this one every path of the data set the workflow generates itself. Paths only, torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from argent.protocols.registry import PROTOCOLS

DEFAULT_HIERSHAPES = "data/hiershapes"  # ``hiershapes.out`` when the config leaves it out (the schema's default)
EMBEDDED = "hiershapes"  # the one data set the workflow generates itself (argent synth, under hiershapes.out)
VAL = "val"  # the validation split of the embedded data set (``split: val``); anything else is its test split


@dataclass(frozen=True)
class HiershapesFolder:
    """What ``argent synth`` writes under ``hiershapes.out`` (argent/data/hiershapes/generate.py),
    and which of it each evaluation protocol reads. Test split by default, ``val`` for tuning."""

    root: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "root", Path(self.root))

    @property
    def manifest(self) -> Path:
        """Written last: the data set is complete."""
        return self.root / "manifest.json"

    @property
    def train_shards(self) -> str:
        """The training shards, as a glob (``data.train_shards: hiershapes``)."""
        return str(self.root / "train" / "shard-*.tar")

    def classification(self, split: str = "test") -> Path:
        """Image folders by class id with ``taxonomy.txt`` (zero-shot; the probe's images)."""
        return self.root / ("classification_val" if split == VAL else "classification")

    def hierarcaps(self, split: str = "test") -> Path:
        """HierarCaps format: ``hierarcaps_test.csv`` + ``images/`` (PEP, HierarCaps, analysis; cleaning)."""
        return self.root / ("hierarcaps_val" if split == VAL else "hierarcaps")

    def benchmark_paths(self, protocol: str, split: str = "test") -> dict[str, str]:
        """{entry key: path} of a ``benchmarks:`` entry with ``dataset: hiershapes``: the protocol record's
        ``embedded`` files (argent/protocols/registry.py) in this split's folders (empty: no such split)."""
        record = PROTOCOLS.get(protocol)
        if record is None or (VAL if split == VAL else "test") not in record.splits:
            return {}
        folders = {"classification": self.classification(split).name, "hierarcaps": self.hierarcaps(split).name}
        return {key: str(self.root / path.format(**folders)) for key, path in record.embedded.items()}

    def clean_source(self, split: str = "test") -> dict[str, str]:
        """A ``clean.datasets`` entry's ``csv`` and ``images`` for one split."""
        caps = self.hierarcaps(split)
        return {"csv": str(caps / "hierarcaps_test.csv"), "images": str(caps / "images")}
