"""A damaged ``tables/claims.csv`` read back by the end-of-run summary (issue 54, item 2) is one line of the
summary; it never raises (the workflow's ``onsuccess`` handler: a raise there made a workflow whose jobs
all succeeded exit 1 with a ``UnicodeDecodeError``)."""

from __future__ import annotations

import os

import pytest

from argent.tables.summary import RunInfo, print_summary, summary_lines


@pytest.mark.parametrize("damage", ["not utf-8", "a folder"])
def test_a_damaged_claims_table_is_one_line_of_the_summary(tmp_path, capsys, damage):
    tables = tmp_path / "results" / "tables"
    tables.mkdir(parents=True)
    claims = tables / "claims.csv"
    if damage == "not utf-8":
        claims.write_bytes(b"id,family,verdict\n" + os.urandom(2000))
    else:
        claims.mkdir()
    lines = summary_lines(RunInfo(tmp_path / "results"))
    said = [line for line in lines if line.startswith("claims:")]
    assert len(said) == 1 and "claims table is damaged" in said[0] and str(claims) in said[0], lines
    print_summary(RunInfo(tmp_path / "results"))  # the handler itself: prints, never raises
    assert "claims table is damaged" in capsys.readouterr().err
