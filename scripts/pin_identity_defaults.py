"""Record the defaults of config fields added since the last pin (argent/runs/identity.py).

Run after adding a field to a config dataclass (its default must be neutral: the behaviour before
the field existed). Adds missing fields only; a pinned value is never changed here (that is an
identity version bump, argent/config/experiment.py IDENTITY_VERSION).

    PYTHONPATH=. python scripts/pin_identity_defaults.py
"""

from __future__ import annotations

from argent.config import ExperimentConfig
from argent.runs import PINNED_FILE, pin_new

if __name__ == "__main__":
    added = pin_new(ExperimentConfig)
    print(f"{PINNED_FILE}: " + (f"pinned {', '.join(added)}" if added else "nothing new to pin"))
