"""Pretrained checkpoints (released by other codebases) as evaluation models (issue 28; docs/pretrained.md).

``load_pretrained("meru:/ckpt/hycoclip_vit_s.pth", "vit_s")`` (``load``) -> an adapter with the
interface the evaluation uses on a trained run (``base``). Layouts:

- ``meru``: MERU / HyCoCLIP (hyperbolic), ``--arch vit_s | vit_b | vit_l``;
- ``meru_clip``: the CLIP baselines released with MERU / HyCoCLIP (Euclidean), same archs;
- ``open_clip``: any open_clip architecture name (``ViT-B-32``, ``RN50``, ...), Euclidean.

Nothing is downloaded: the path is a local file, read with ``weights_only=True`` and refused unless
its keys and shapes fit the declared layout exactly. ``section`` types the workflow config's
``pretrained:`` section and holds ``LAYOUTS``, torch-free (the Snakefile parses it on every job);
names are imported on first use (``argent.lazy``), so importing it does not import torch.
"""

from typing import TYPE_CHECKING

from argent.lazy import lazy_exports

if TYPE_CHECKING:  # the public names, imported on first use (argent.lazy); import-linter sees them
    from argent.models.pretrained.base import PretrainedConfig, PretrainedError, PretrainedModel
    from argent.models.pretrained.load import load_pretrained, parse_spec
    from argent.models.pretrained.section import LAYOUTS

__all__ = ["LAYOUTS", "PretrainedConfig", "PretrainedError", "PretrainedModel", "load_pretrained", "parse_spec"]
__getattr__, __dir__ = lazy_exports(__name__)
