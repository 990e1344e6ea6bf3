"""What a data set's manifest lists against what its shards hold: a missing or short shard is found
before training, not as a quietly smaller data set.

The manifest is hiershapes' (``argent synth``, argent/data/hiershapes/generate.py): the shards of a
split live in ``<root>/<split>/shard-%06d.tar`` and ``<root>/manifest.json`` lists
``counts.<split>`` (samples), ``counts.<split>_shards`` and ``parameters.shard_size``, so shard i
holds ``min(shard_size, samples - i·shard_size)`` samples. Shards without such a manifest beside
their folder are not checked here (real data sets ship none).

Only the shards the pattern names are compared: a shard the pattern names (by brace or glob) that the
manifest lists but that is not on disk is a ``missing_shard`` (also when the pattern matches no file
at all: its folder's manifest still says what is missing); a shard whose sample count differs from
the manifest's is a ``count_mismatch``. Counting reads tar headers only (a sample is a run of members
with the same key, as webdataset groups them); no image is decoded. Bad-data policy as everywhere:
strict mode raises one error listing every difference, skip mode counts one per shard.
"""

from __future__ import annotations

import fnmatch
import glob
import logging
import os
import tarfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from braceexpand import braceexpand

from argent.data.policy import BadDataError, BadDataPolicy
from argent.data.shards import expand_shards
from argent.io import read_json

log = logging.getLogger("argent.data")
MANIFEST = "manifest.json"
SHARD_NAME = "shard-{:06d}.tar"  # argent synth's shard names (generate.py writes them through this)
FIX = ("re-create the data set: `argent synth --out {root} --params <your config> --overwrite`, or in the "
       "workflow delete {root} and run snakemake again (its synth rule re-creates it); or restore the files. "
       "bad_data: skip trains on what is there and counts the difference")


@dataclass
class ManifestCheck:
    """The comparison for one split: what the manifest lists for the shards named, and what is there."""

    manifest: Path
    split: str
    expected: dict[Path, int]  # shard named by the pattern and listed by the manifest -> its samples
    found: dict[Path, int | None] = field(default_factory=dict)  # None: the file is missing

    @property
    def differences(self) -> list[tuple[str, Path, str]]:
        """(reason, shard, detail) for every shard that is not as listed."""
        out = []
        for path, want in self.expected.items():
            got = self.found.get(path)
            if got is None:
                out.append(("missing_shard", path, f"{path.name}: missing ({want} samples listed)"))
            elif got != want:
                out.append(("count_mismatch", path, f"{path.name}: {got} samples, {want} listed"))
        return out

    def summary(self) -> str:
        want = sum(self.expected.values())
        got = sum(n for n in self.found.values() if n)
        present = sum(n is not None for n in self.found.values())
        return (f"{self.manifest}: split {self.split!r}: {want} samples in {len(self.expected)} shard(s) listed "
                f"for the shards named, {got} samples in {present} shard(s) found")


def count_samples(path: str | Path) -> int:
    """Samples in a shard, from its tar headers alone (consecutive members sharing a key, as
    webdataset groups them; the key is the member name up to the first dot of its base name).
    A tar torn inside a member counts the samples before the damage."""
    n, last = 0, None
    try:
        with tarfile.open(path, "r:") as tar:
            for member in tar:
                if not member.isfile():
                    continue
                folder, _, base = member.name.rpartition("/")
                key = (folder, base.split(".", 1)[0])
                if key != last:
                    n, last = n + 1, key
    except (tarfile.TarError, OSError, EOFError):
        pass
    return n


def _named(pattern: str | Path | Sequence[str | Path], path: Path) -> bool:
    """Whether the shard pattern names ``path`` (brace and glob expanded by name, not by the disk)."""
    patterns = [pattern] if isinstance(pattern, (str, Path)) else list(pattern)
    target = os.path.normpath(str(path))
    for pat in patterns:
        for expanded in braceexpand(str(pat)):
            expanded = os.path.normpath(expanded)
            if (fnmatch.fnmatchcase(target, expanded) if glob.has_magic(expanded) else target == expanded):
                return True
    return False


def _named_folders(pattern: str | Path | Sequence[str | Path]) -> set[Path]:
    """The folders a pattern names by itself (none when a folder part is a glob): where to look for
    the manifest of a pattern that matches no file."""
    patterns = [pattern] if isinstance(pattern, (str, Path)) else list(pattern)
    folders = set()
    for pat in patterns:
        for expanded in braceexpand(str(pat)):
            if not expanded.strip():
                continue
            folder = Path(os.path.normpath(expanded)).parent
            if glob.has_magic(str(folder)):
                return set()
            folders.add(folder)
    return folders


def manifest_check(pattern: str | Path | Sequence[str | Path], shards: Sequence[Path]) -> ManifestCheck | None:
    """The comparison for ``shards`` (matched by ``pattern``; none: the folder the pattern names), or
    None when no manifest lists them: shards in several folders, no ``manifest.json`` above their
    folder, or no counts for that split."""
    folders = {Path(s).parent for s in shards} if shards else _named_folders(pattern)
    if len(folders) != 1:
        return None
    folder = folders.pop()
    path = folder.parent / MANIFEST
    if not path.is_file():
        return None
    manifest: Any = read_json(path)  # a torn manifest is an error naming it
    counts = manifest.get("counts") if isinstance(manifest, dict) else None
    size = (manifest.get("parameters") or {}).get("shard_size") if isinstance(manifest, dict) else None
    split = folder.name
    if not isinstance(counts, dict) or not isinstance(size, int) or size < 1:
        return None
    total, n_shards = counts.get(split), counts.get(f"{split}_shards")
    if not isinstance(total, int) or not isinstance(n_shards, int):
        return None
    expected = {}
    for i in range(n_shards):
        shard = folder / SHARD_NAME.format(i)
        if _named(pattern, shard):
            expected[shard] = min(size, total - i * size)
    check = ManifestCheck(path, split, expected)
    check.found = {s: (count_samples(s) if s.is_file() else None) for s in expected}
    return check


def mismatch_message(check: ManifestCheck) -> str:
    """The manifest, the split, expected against found for every differing shard, and the fix."""
    details = "; ".join(detail for _, _, detail in check.differences)
    return f"{check.summary()} ({details}). " + FIX.format(root=check.manifest.parent)


def check_against_manifest(pattern: str | Path | Sequence[str | Path], shards: Sequence[Path],
                           policy: BadDataPolicy) -> ManifestCheck | None:
    """Compare ``shards`` with their manifest (module doc): strict mode raises one ``BadDataError``
    naming the manifest, the split, expected against found and the fix; skip mode counts each
    differing shard under its reason. None when no manifest lists the shards."""
    check = manifest_check(pattern, shards)
    if check is None or not check.differences:
        return check
    message = mismatch_message(check)
    if policy.mode == "strict":
        raise BadDataError(message)
    for reason, _shard, detail in check.differences:
        policy.bad(reason, f"{check.manifest}: {detail}")
    log.warning("%s; counted (bad_data: skip)", message)
    return check


def check_named_shards(pattern: str | Path | Sequence[str | Path], policy: BadDataPolicy) -> ManifestCheck | None:
    """``check_against_manifest`` for a reader that expands ``pattern`` itself (the evaluation sets
    read from shards): call it once, before reading. A pattern that matches no file is compared too,
    so that strict mode names the manifest and the missing shards; the reader then says "no match"."""
    try:
        shards = expand_shards(pattern)
    except BadDataError:
        shards = []
    return check_against_manifest(pattern, shards, policy)
