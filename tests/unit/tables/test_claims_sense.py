"""The claims file is checked for sense, not only shape (issue 45 B): a margin is finite, an amendment
is not dated ahead, a claim id fits in a table cell, and a file nested too deep for the parser is one
message naming it."""

from __future__ import annotations

import datetime
import math
from pathlib import Path

import pytest
import yaml

from argent.config import ConfigError
from argent.tablespec.claims import load_claims

CLAIM = {"id": "c1", "source": "T", "a": "argent", "b": "meru", "primary": "tie", "metrics": {"tie": {"expect": "better"}}}
AMENDMENT = {"change": "c", "why": "w", "decided_after": "no run"}


def claims_file(tmp_path: Path, text: str | None = None, **top) -> Path:
    path = tmp_path / "claims.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(
        {"margins": {"tie": {"delta": 0.05, "why": "t"}}, "claims": [CLAIM], **top}))
    return path


@pytest.mark.parametrize("delta", [".inf", ".nan"])
def test_a_margin_is_finite_and_positive(tmp_path, delta):
    """``delta: .inf`` made every row of the role test "equivalent" (0 and negatives were refused already)."""
    path = claims_file(tmp_path, f"margins:\n  tie: {{delta: {delta}, why: t}}\nclaims: []\n")
    with pytest.raises(ConfigError, match=rf"{path}: margins.tie.delta: must be a finite number > 0"):
        load_claims(path)


def test_a_published_value_is_finite(tmp_path):
    path = claims_file(tmp_path, claims=[{**CLAIM, "metrics": {"tie": {"expect": "better", "published": [math.nan, 1]}}}])
    with pytest.raises(ConfigError, match=r"claim c1, metrics.tie: published must be \[A, B\] finite numbers"):
        load_claims(path)


def test_an_amendment_dated_in_the_future_is_refused(tmp_path):
    path = claims_file(tmp_path, amendments=[{"date": "2099-01-01", **AMENDMENT}])
    with pytest.raises(ConfigError, match=rf"{path}: amendments\[0\].date: 2099-01-01 is in the future"):
        load_claims(path)
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    assert load_claims(claims_file(tmp_path, amendments=[{"date": today, **AMENDMENT}])).amendments[0].date == today


@pytest.mark.parametrize("claim_id", ["x | y", "a b", "**bold**", "c1\n"])
def test_a_claim_id_is_letters_digits_and_dashes(tmp_path, claim_id):
    """``x | y`` split the claims table's row into one more column."""
    path = claims_file(tmp_path, claims=[{**CLAIM, "id": claim_id}])
    with pytest.raises(ConfigError, match=rf"{path}: claims\[0\].id: .*letters, digits, '-', '_' and '.' only"):
        load_claims(path)
    assert load_claims(claims_file(tmp_path, claims=[{**CLAIM, "id": "T2-argent_v1.b"}])).claims[0].id == "T2-argent_v1.b"


def test_a_file_nested_too_deep_is_one_message_not_a_recursion_error(tmp_path):
    path = claims_file(tmp_path, "claims: " + "[" * 50_000)
    with pytest.raises(ConfigError, match=rf"{path}: not a claims file: nested deeper than the YAML parser"):
        load_claims(path)
