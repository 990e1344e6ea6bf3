"""The ``hiershapes:`` section of the workflow config: where the embedded benchmark is generated and
with which generator parameters (``argent synth``; docs/hiershapes.md).

Torch-free: the DAG build types it. ``params`` are ``HiershapesParams`` keys
(argent/data/hiershapes/generate.py), checked by ``argent synth`` when it reads the parameters file
the workflow writes from them (the generator's module imports torch).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from argent.runs import DEFAULT_HIERSHAPES

__all__ = ["HiershapesSection"]


@dataclass
class HiershapesSection:
    """``hiershapes:``: the output folder and the generator's parameters."""

    out: str = DEFAULT_HIERSHAPES  # the generated data set's folder
    params: dict[str, Any] = field(default_factory=dict)  # argent synth's HiershapesParams keys
