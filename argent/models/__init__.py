"""Encoders, tokenizer and the dual encoder; ``pretrained/``: checkpoints argent did not train.

Names are imported on first use (``argent.lazy``), so the torch-free ``argent.models.pretrained.section``
(the workflow's ``pretrained:`` section) imports without torch.
"""

from typing import TYPE_CHECKING

from argent.lazy import lazy_exports

if TYPE_CHECKING:  # the public names, imported on first use (argent.lazy); import-linter sees them
    from argent.models.dual_encoder import DualEncoder, build_model
    from argent.models.tokenizer import tokenize

__all__ = ["DualEncoder", "build_model", "tokenize"]
__getattr__, __dir__ = lazy_exports(__name__)
