"""The tables' reader accepts every value the evaluation really writes (a check too strict refuses a
finished run: the default run of 2026-12-03 stopped at its tables job on this case)."""

import json

import numpy as np

from argent.evaluation.analysis import norm_summary
from argent.tables.readers import read_evaluation


def test_a_histogram_of_equal_norms_reads_back(tmp_path):
    summary = norm_summary(np.full(40, 0.42))  # numpy spans equal values by ± 0.5: edges from -0.08
    assert summary["histogram"]["edges"][0] < 0
    path = tmp_path / "hs_analysis.json"
    path.write_text(json.dumps({"protocol": "analysis", "metrics": {"radius": {"caption_L1": summary}}}))
    assert read_evaluation(path)["metrics"]["radius"]["caption_L1"]["histogram"]["edges"][0] < 0
