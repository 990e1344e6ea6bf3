"""What a reader does with a bad sample: skip it and count it by reason, or stop (strict).

Bad data is a missing or corrupt image, malformed JSON, an empty caption, a box outside its image,
a span outside its caption, ... Every reader takes a ``BadDataPolicy``:

- ``skip`` (default): the sample is dropped, ``counts[reason]`` goes up by one and the first place
  each reason was seen is kept for the report;
- ``strict``: the first bad sample raises ``BadDataError`` naming its file, row and key.

``drop(reason)`` counts a sample that a *rule* removes (e.g. HyCoCLIP's crop rule keeps no box); it is
reported with the rest but never raises, because the data is not broken.
A data set with nothing usable is always an error (``require_usable``).
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

from argent.io import ArgentError

Mode = Literal["skip", "strict"]
MODES: tuple[str, ...] = ("skip", "strict")


class BadDataError(ArgentError, ValueError):
    """Bad input data; the message names the file, row or key and what to do."""


class BadDataPolicy:
    """Skip-and-count or stop-at-first handling of bad samples.

    >>> policy = BadDataPolicy("skip")
    >>> policy.bad("empty_caption", "train/shard-000000.tar: row 3 (key a)")
    >>> policy.counts
    {'empty_caption': 1}
    """

    def __init__(self, mode: Mode = "skip") -> None:
        if mode not in MODES:
            raise ValueError(f"bad_data: {mode!r} is not allowed; allowed: {list(MODES)}")
        self.mode: Mode = mode
        self._bad: Counter[str] = Counter()
        self._dropped: Counter[str] = Counter()
        self._first: dict[str, str] = {}

    # -- recording ---------------------------------------------------------------------------
    def bad(self, reason: str, where: str) -> None:
        """A broken sample: count it (skip) or raise ``BadDataError`` naming ``where`` (strict)."""
        if self.mode == "strict":
            raise BadDataError(
                f"{where}: {reason.replace('_', ' ')}. Fix or remove this sample, or set "
                f"bad_data: skip to skip and count such samples."
            )
        self._bad[reason] += 1
        self._first.setdefault(reason, where)

    def drop(self, reason: str, where: str = "") -> None:
        """A sample removed by a data rule (not broken): counted in both modes, never raises."""
        self._dropped[reason] += 1
        if where:
            self._first.setdefault(reason, where)

    def merge(self, other: BadDataPolicy) -> None:
        """Add ``other``'s counts (e.g. from a loader worker) to this policy."""
        self._bad.update(other._bad)
        self._dropped.update(other._dropped)
        for reason, where in other._first.items():
            self._first.setdefault(reason, where)

    # -- reading -----------------------------------------------------------------------------
    @property
    def counts(self) -> dict[str, int]:
        """Skipped bad samples by reason."""
        return dict(sorted(self._bad.items()))

    @property
    def dropped(self) -> dict[str, int]:
        """Samples removed by a data rule, by reason."""
        return dict(sorted(self._dropped.items()))

    @property
    def total(self) -> int:
        return sum(self._bad.values())

    def report(self) -> str:
        """One line: every reason with its count and the first place it was seen."""
        if not self._bad and not self._dropped:
            return "no sample skipped"
        parts = []
        for label, counter in (("skipped (bad data)", self._bad), ("dropped by rule", self._dropped)):
            if counter:
                items = ", ".join(
                    f"{reason} {n}" + (f" (first: {self._first[reason]})" if reason in self._first else "")
                    for reason, n in sorted(counter.items())
                )
                parts.append(f"{label}: {items}")
        return "; ".join(parts)

    def require_usable(self, n_usable: int, what: str) -> None:
        """A data set with nothing usable is an error, whatever the mode."""
        if n_usable <= 0:
            raise BadDataError(f"{what}: nothing usable ({self.report()}); check the path and the data")

    def __repr__(self) -> str:
        return f"BadDataPolicy({self.mode!r}, counts={self.counts}, dropped={self.dropped})"


def resolve_policy(policy: BadDataPolicy | None) -> BadDataPolicy:
    """``None`` means the default: a fresh skip-and-count policy."""
    return policy if policy is not None else BadDataPolicy("skip")
