"""`argent synth --overwrite` (the workflow's synth rule always passes it) replaces only a folder that
argent synth made: its output holds a marker; an existing non-empty folder without it (the user's own
data behind a mistyped ``hiershapes.out``) is an error naming it, and is left as it was."""

from __future__ import annotations

import json

from argent.data.hiershapes.generate import MARKER, content_hash
from tests.fixtures import checksums

SMALL = ["--train-scenes", "4", "--val-scenes", "0", "--test-scenes", "4", "--per-class", "1", "--shard-size", "4",
         "--image-size", "32", "--max-objects", "2", "--jobs", "1", "--classes", "square.n.01", "circle.n.01",
         "--colours", "red.n.01", "blue.n.01"]


def test_overwrite_refuses_a_folder_synth_did_not_make(tmp_path, argent):
    mine = tmp_path / "grit"
    (mine / "shards").mkdir(parents=True)
    (mine / "shards" / "grit-000000.tar").write_bytes(b"the user's data")
    before = checksums(mine)
    code, err = argent("synth", "--out", mine, *SMALL, "--overwrite")
    assert code == 2 and "Traceback" not in err
    assert f"{mine}: exists, is not empty and was not made by argent synth (no {MARKER} in it)" in err
    assert checksums(mine) == before and not list(tmp_path.glob(".grit.*"))


def test_synth_marks_its_folder_and_replaces_it(tmp_path, argent):
    out = tmp_path / "hs"
    assert argent("synth", "--out", out, *SMALL)[0] == 0
    assert (out / MARKER).is_file()
    manifest = json.loads((out / "manifest.json").read_text())
    assert content_hash(out) == manifest["content_hash"]  # the marker is outside the content hash
    code, err = argent("synth", "--out", out, *SMALL, "--overwrite")
    assert code == 0, err
    assert (out / MARKER).is_file()


def test_a_folder_made_before_the_marker_is_still_replaced(tmp_path, argent):
    out = tmp_path / "hs"
    assert argent("synth", "--out", out, *SMALL)[0] == 0
    (out / MARKER).unlink()  # as written by an argent synth of before the marker
    code, err = argent("synth", "--out", out, *SMALL, "--overwrite")
    assert code == 0, err
    assert (out / MARKER).is_file()


def test_an_empty_folder_is_filled(tmp_path, argent):
    out = tmp_path / "hs"
    out.mkdir()
    assert argent("synth", "--out", out, *SMALL, "--overwrite")[0] == 0
    assert (out / MARKER).is_file()
