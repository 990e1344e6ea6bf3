"""Hard negatives for training: the mined parquet (``argent mine``) as a key -> (negative, ĉ) lookup.

Parquet columns used: ``key`` (training sample key), ``negative`` (text), ``c_hat`` (ĉ ∈ [0,1] of
the edited word), ``mode`` (concrete | abstract | random); one row per (key, mode) at most. A file
holding several modes needs ``mode`` to pick one. A row with an empty negative or a null/out-of-range
ĉ goes through the ``BadDataPolicy`` (skip: that key gets no negative; strict: error naming it).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from argent.data.policy import BadDataError, BadDataPolicy, resolve_policy

REQUIRED_COLUMNS = ("key", "negative", "c_hat", "mode")


@dataclass(frozen=True)
class HardNegatives:
    """{sample key: (negative caption, ĉ)}."""

    by_key: dict[str, tuple[str, float]]
    source: str
    mode: str

    def __len__(self) -> int:
        return len(self.by_key)

    def get(self, key: str) -> tuple[str, float] | None:
        return self.by_key.get(key)

    @classmethod
    def from_parquet(cls, path: str | Path, mode: str | None = None, policy: BadDataPolicy | None = None) -> HardNegatives:
        policy = resolve_policy(policy)
        path = Path(path)
        if not path.is_file():
            raise BadDataError(f"{path}: hard-negatives parquet not found (data.negatives); run `argent mine` first")
        try:
            schema = pl.read_parquet_schema(path)
        except Exception as err:  # polars raises several error types for a bad file
            raise BadDataError(f"{path}: not a readable parquet file ({err})") from None
        missing = [c for c in REQUIRED_COLUMNS if c not in schema]
        if missing:
            raise BadDataError(f"{path}: missing column(s) {missing}; found {list(schema)}")
        frame = pl.read_parquet(path, columns=list(REQUIRED_COLUMNS))
        modes = sorted(m for m in frame["mode"].unique().to_list() if m is not None)
        if mode is None:
            if len(modes) != 1:
                raise BadDataError(f"{path}: holds modes {modes}; pass the variant's hard_negatives mode")
            mode = modes[0]
        frame = frame.filter(pl.col("mode") == mode)
        if frame.height == 0:
            raise BadDataError(f"{path}: no row with mode {mode!r} (modes present: {modes})")
        duplicated = frame.filter(pl.col("key").is_duplicated())["key"].unique().to_list()
        if duplicated:
            raise BadDataError(f"{path}: several rows for key(s) {sorted(duplicated)[:5]} in mode {mode!r}")
        by_key: dict[str, tuple[str, float]] = {}
        for row, (key, negative, c_hat) in enumerate(frame.select("key", "negative", "c_hat").iter_rows()):
            where = f"{path}: row {row} of mode {mode!r} (key {key})"
            if not isinstance(negative, str) or not negative.strip():
                policy.bad("empty_negative", where)
                continue
            if c_hat is None or not 0.0 <= float(c_hat) <= 1.0:
                policy.bad("bad_c_hat", f"{where}: c_hat {c_hat!r} is not in [0, 1]")
                continue
            by_key[str(key)] = (negative, float(c_hat))
        policy.require_usable(len(by_key), f"{path} (hard negatives, mode {mode})")
        return cls(by_key, str(path), mode)
