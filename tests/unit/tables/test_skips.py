"""The tables name every nonzero skip count (training summary and evaluation JSON), and say nothing
when every input was read whole."""

import json

from argent.runs import eval_dir, run_dir
from argent.tables.collect import collect_skips, skips_footnote


def _write(path, data):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_nonzero_skip_counts_are_named_with_their_run_source_and_reason(tmp_path):
    _write(run_dir(tmp_path, "main", "argent", "tiny", 1) / "summary.json",
           {"steps": 3, "skipped_samples": {"corrupt_image": 3, "blank_caption": 0}, "dropped_samples": {}})
    _write(run_dir(tmp_path, "main", "clip", "tiny", 0) / "summary.json", {"steps": 3, "skipped_samples": {}})
    _write(eval_dir(tmp_path, "main", "clip", "tiny", 0) / "hs_pep.json",
           {"metrics": {"auc": 0.7}, "counts": {"n_items": 18, "skipped": {}, "dropped": {"unbalanced_quote": 2}}})
    rows = collect_skips(tmp_path)
    assert rows == [
        {"run": "main/argent-tiny/seed1", "source": "training", "kind": "skipped", "reason": "corrupt_image", "n": 3},
        {"run": "main/clip-tiny/seed0", "source": "hs_pep", "kind": "dropped", "reason": "unbalanced_quote", "n": 2},
    ]
    note = skips_footnote(rows)
    assert "| main/argent-tiny/seed1 | training | skipped | corrupt_image | 3 |" in note
    assert "| main/clip-tiny/seed0 | hs_pep | dropped | unbalanced_quote | 2 |" in note


def test_no_footnote_when_nothing_was_skipped(tmp_path):
    _write(run_dir(tmp_path, "main", "clip", "tiny", 0) / "summary.json", {"steps": 3, "skipped_samples": {}})
    _write(eval_dir(tmp_path, "main", "clip", "tiny", 0) / "hs_zeroshot.json",
           {"metrics": {"top1": 0.5}, "counts": {"skipped": {}, "dropped": {}}})
    assert collect_skips(tmp_path) == [] and skips_footnote([]) == ""
