"""A clone with nothing beside it (no ../shared, no data, no results) plans every group of the default:
the hard negatives read the WordNet subset the repository ships (argent/resources/, issue 53), so
`snakemake -n` leaves no group out and plans the trainings the README promises."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.fixtures import ROOT


def _clone(dest: Path) -> Path:
    """The repository's files as a clone has them (tracked, and new files not yet committed), no ../shared."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    assert not (dest.parent / "shared").exists()
    return dest


def test_a_fresh_clone_plans_every_group_of_the_default(tmp_path):
    clone = _clone(tmp_path / "clone")
    proc = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--nolock", "--cores", "1"], cwd=clone,
                          capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(clone)})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert not re.search(r"group \S+ left out", out), [line for line in out.splitlines() if "left out:" in line]
    plan = next(line for line in out.splitlines() if line.startswith("argent plan:"))
    trained = int(re.search(r"(\d+) training runs", plan).group(1))
    promised = re.search(r"it trains (\d+) models", (ROOT / "README.md").read_text())
    assert promised, "README.md no longer says how many models the default trains ('it trains N models')"
    assert trained == int(promised.group(1)), plan
    assert "rule mine_negatives:" in out
    assert re.search(r"wildcards: group=negatives, variant=argent_negs_cement", out), "the negatives group is not planned"
