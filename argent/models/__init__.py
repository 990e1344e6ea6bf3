"""Encoders, tokenizer and the dual encoder; ``pretrained/``: checkpoints argent did not train.

Names are imported on first use (``argent.lazy``), so the torch-free ``argent.models.pretrained.section``
(the workflow's ``pretrained:`` section) imports without torch.
"""

from argent.lazy import lazy_exports

_EXPORTS = {"DualEncoder": "argent.models.dual_encoder", "build_model": "argent.models.dual_encoder",
            "tokenize": "argent.models.tokenizer"}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
