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

from argent.lazy import lazy_exports

_EXPORTS = {
    "LAYOUTS": "argent.models.pretrained.section",
    "PretrainedConfig": "argent.models.pretrained.base",
    "PretrainedError": "argent.models.pretrained.base",
    "PretrainedModel": "argent.models.pretrained.base",
    "load_pretrained": "argent.models.pretrained.load",
    "parse_spec": "argent.models.pretrained.load",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
