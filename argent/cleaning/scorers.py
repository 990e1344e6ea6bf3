"""Reference scorers for cleaning HierarCaps: build one from its spec.

Scorers (``make_scorer(spec)``; ``SCORER_SPECS`` lists the forms):
- ``text``: the offline sentence embedder, other captions standing in for the image (``text_scorer``);
- ``checkpoint:<run dir>``, ``open_clip:<arch>:<checkpoint file>``, ``hf:<folder>``: image models
  (``image_scorers``), optional ones loaded only when named.
Verifier (``make_verifier(spec)``): ``hf:<folder>`` holding a BLIP-ITM model; its match probability
replaces the scorer's alignment score. The interface all of them share is in ``scorer_base``.
"""

from __future__ import annotations

from pathlib import Path

from argent.cleaning.image_scorers import CheckpointScorer, HFDualEncoderScorer, HFITMVerifier, OpenClipScorer
from argent.cleaning.scorer_base import DEFAULT_BATCH, SCORER_SPECS, Scorer, ScorerUnavailable, Verifier
from argent.cleaning.text_scorer import TextScorer, captions_by_image


def make_scorer(
    spec: str,
    *,
    expanded: str | Path | None = None,
    image_ids: set[int] | None = None,
    device: str = "cpu",
    batch_size: int = DEFAULT_BATCH,
) -> Scorer:
    """Build the scorer a spec names (see ``SCORER_SPECS``); optional ones only when named."""
    kind, _, arg = spec.partition(":")
    if kind == "text" and not arg:
        return TextScorer(captions_by_image(expanded, image_ids), device=device, batch_size=batch_size)
    if kind == "checkpoint" and arg:
        return CheckpointScorer.from_run_dir(arg, device=device, batch_size=batch_size)
    if kind == "open_clip" and ":" in arg:
        arch, _, path = arg.partition(":")
        return OpenClipScorer(arch, path, device=device, batch_size=batch_size)
    if kind == "hf" and arg:
        return HFDualEncoderScorer(arg, device=device, batch_size=batch_size)
    raise ScorerUnavailable(f"scorer {spec!r} not understood; expected {SCORER_SPECS}")


def make_verifier(spec: str, *, device: str = "cpu", batch_size: int = 16) -> Verifier:
    kind, _, arg = spec.partition(":")
    if kind == "hf" and arg:
        return HFITMVerifier(arg, device=device, batch_size=batch_size)
    raise ScorerUnavailable(f"verifier {spec!r} not understood; expected hf:<folder of a BLIP-ITM model>")
