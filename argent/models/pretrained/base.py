"""What every checkpoint adapter shares: the evaluation's model interface, strict layout checks, safe reading.

An adapter is an ``nn.Module`` with the interface ``argent.evaluation`` uses on a trained
``DualEncoder`` (``encode_image`` on pixels in [0, 1], ``encode_text`` on token ids, ``project``,
``lift_image`` / ``lift_text``, ``similarity``, ``curv``, ``geometry``, ``config.embed_dim`` /
``context_length`` / ``image_size``), plus the two things a released model brings itself:
``image_transform(kind)`` (its own resize and crop; normalisation stays inside ``encode_image``)
and ``tokenize(texts)`` (its own tokenizer and context length).

A checkpoint is read with ``weights_only=True`` (no pickled code runs) and compared, key by key and
shape by shape, with the layout declared for it before a single tensor is copied: a file that does
not fit is refused with one message naming the first missing / unexpected key or mismatched shape.
"""

from __future__ import annotations

import abc
import pickle
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from argent import geometry
from argent.io import ArgentError
from argent.models.dual_encoder import DualEncoder

Shape = tuple[int, ...]
Layout = dict[str, Shape]  # state-dict key -> shape, in the checkpoint's own key order
Transform = Callable[[Any], Tensor]

# Top-level entries that wrap a state dict: MERU's CheckpointManager saves {"model": ..., "iteration": ...}
# (optimizer and scheduler too when training), open_clip's trainer {"state_dict": ..., "epoch": ...}.
WRAPPER_KEYS = ("model", "state_dict")


class PretrainedError(ArgentError):
    """A released checkpoint cannot be used: missing, unreadable, or not in its declared layout."""


@dataclass(frozen=True)
class PretrainedConfig:
    """The ``model.config`` fields the evaluation reads (a trained run's ``ModelConfig`` has them too)."""

    embed_dim: int
    context_length: int
    image_size: int


class PretrainedModel(nn.Module, abc.ABC):
    """Base of every adapter: lift, similarity and scalars from the checkpoint's own values.

    Subclasses set ``geometry``, ``config``, ``layout_name``, and implement ``image_features`` and
    ``text_features`` (projected, before any lift), ``image_transform`` and ``tokenize``.
    ``log_curv`` / ``visual_alpha`` / ``textual_alpha`` / ``log_logit_scale`` are read raw, unclamped:
    the released codebases use them so at inference (MERU clamps only inside its training forward).
    """

    geometry: str
    config: PretrainedConfig
    layout_name: str

    @abc.abstractmethod
    def image_features(self, images: Tensor) -> Tensor:
        ...

    @abc.abstractmethod
    def text_features(self, tokens: Tensor) -> Tensor:
        ...

    @abc.abstractmethod
    def image_transform(self, kind: str = "eval") -> Transform:
        ...

    @abc.abstractmethod
    def tokenize(self, texts: list[str]) -> Tensor:
        ...

    # ---- scalars ----
    def curv(self) -> Tensor:
        """c (curvature −c) as a 0-d float32 tensor; 1 for a Euclidean model (unused there)."""
        log_curv = getattr(self, "log_curv", None)
        return log_curv.float().exp() if log_curv is not None else torch.tensor(1.0)

    def alphas(self) -> tuple[Tensor, Tensor]:
        if self.geometry == "euclidean":
            return torch.tensor(1.0), torch.tensor(1.0)
        return self.visual_alpha.float().exp(), self.textual_alpha.float().exp()

    def logit_scale(self) -> Tensor:
        return self.log_logit_scale.float().exp()

    # A trained run's arithmetic, shared: both read only geometry, curv(), alphas() and logit_scale().
    scalars = DualEncoder.scalars
    similarity = DualEncoder.similarity

    # ---- the evaluation's interface ----
    def _lift(self, v: Tensor, log_alpha: Tensor | None) -> Tensor:
        v = v.float()
        if self.geometry == "euclidean":
            return F.normalize(v, dim=-1)
        with torch.autocast(device_type=v.device.type, enabled=False):
            return geometry.exp_map0(v * log_alpha.float().exp(), self.curv())

    def lift_image(self, v: Tensor) -> Tensor:
        return self._lift(v, getattr(self, "visual_alpha", None))

    def lift_text(self, v: Tensor) -> Tensor:
        return self._lift(v, getattr(self, "textual_alpha", None))

    def encode_image(self, images: Tensor, project: bool = True) -> Tensor:
        """(B, 3, S, S) in [0, 1] (after ``image_transform``) -> (B, D): lifted, or the projection."""
        v = self.image_features(images).float()
        return self.lift_image(v) if project else v

    def encode_text(self, tokens: Tensor, project: bool = True) -> Tensor:
        """(B, L) token ids from ``tokenize`` -> (B, D): lifted, or the projection."""
        v = self.text_features(tokens).float()
        return self.lift_text(v) if project else v


# ---- reading and checking a checkpoint ----------------------------------------------------------


def read_state_dict(path: str | Path) -> dict[str, Tensor]:
    """The tensors of a checkpoint file (``weights_only``; ``.safetensors`` too), unwrapped from
    ``{"model": ...}`` / ``{"state_dict": ...}`` and from a DDP ``module.`` prefix."""
    path = Path(path)
    if not path.is_file():
        raise PretrainedError(f"{path}: checkpoint not found; download the released file and give its local path")
    if path.suffix == ".safetensors":
        try:
            from safetensors.torch import load_file  # optional: only for .safetensors files
        except ImportError:
            raise PretrainedError(f"{path}: reading .safetensors needs the safetensors package") from None
        try:
            state: Any = load_file(str(path), device="cpu")
        except Exception as err:  # noqa: BLE001 - safetensors raises its own SafetensorError (not exported), or OSError
            if isinstance(err, OSError) and err.errno is not None:
                raise
            raise PretrainedError(f"{path}: not a readable .safetensors file ({type(err).__name__}: "
                                  f"{str(err)[:200]}); download the released file again") from None
    else:
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as err:
            raise PretrainedError(f"{path}: refused by weights_only loading ({str(err).splitlines()[0][:200]}); "
                                  f"argent never unpickles code. Re-save the weights alone "
                                  f"(torch.save(model.state_dict(), ...)) with the codebase that made it") from None
        except (RuntimeError, EOFError, zipfile.BadZipFile, ValueError, KeyError) as err:
            raise PretrainedError(f"{path}: not a readable torch checkpoint ({type(err).__name__}: "
                                  f"{str(err)[:200]})") from None
    state = unwrap_state_dict(state, str(path))
    check_finite(state, str(path))
    return state


def check_finite(state: Mapping[str, Tensor], where: str) -> None:
    """Refuse weights holding NaN or infinity: a model computed from them scores at chance on every
    benchmark, and would be written as a result like any other."""
    for key, value in state.items():
        if value.is_floating_point() or value.is_complex():
            bad = int((~torch.isfinite(value)).sum())
            if bad:
                raise PretrainedError(f"{where}: key {key!r} holds {bad} NaN/infinite value(s) of {value.numel()}; "
                                      f"these weights would score at chance, not as the released model: download "
                                      f"the released file again (or re-save it from a finite copy)")


def unwrap_state_dict(state: Any, where: str) -> dict[str, Tensor]:
    """The state dict inside a training checkpoint, every value a tensor."""
    for key in WRAPPER_KEYS:
        if isinstance(state, Mapping) and isinstance(state.get(key), Mapping):
            state = state[key]
            break
    if not isinstance(state, Mapping) or not state:
        raise PretrainedError(f"{where}: holds no state dict (expected a dict of tensors, or one under "
                              f"{' / '.join(repr(k) for k in WRAPPER_KEYS)})")
    not_tensor = next((k for k, v in state.items() if not isinstance(v, Tensor)), None)
    if not_tensor is not None:
        raise PretrainedError(f"{where}: entry {not_tensor!r} is a {type(state[not_tensor]).__name__}, not a "
                              f"tensor; this is not a state dict (top-level keys: {sorted(state)[:8]})")
    # A model saved from inside DistributedDataParallel has every key under "module.".
    if all(k.startswith("module.") for k in state):
        state = {k.removeprefix("module."): v for k, v in state.items()}
    return dict(state)


def layout_of(module: nn.Module) -> Layout:
    """A module's own layout: its state-dict keys and shapes."""
    return {k: tuple(v.shape) for k, v in module.state_dict().items()}


def dtypes_of(module: nn.Module) -> dict[str, torch.dtype]:
    """A module's own state-dict dtypes (a model built on the meta device has them too)."""
    return {k: v.dtype for k, v in module.state_dict().items()}


def _kind(dtype: torch.dtype) -> str:
    """bool, integer or floating: the kind a state-dict entry is used as (a float is widened on load)."""
    if dtype == torch.bool:
        return "bool"
    return "floating" if dtype.is_floating_point or dtype.is_complex else "integer"


def layout_mismatch(state: Mapping[str, Tensor], expected: Layout,
                    dtypes: Mapping[str, torch.dtype] | None = None) -> str | None:
    """The first difference between a state dict and a layout, in words; None when it fits exactly.
    ``dtypes`` (the model's own): an entry of another kind (bool, integer, floating) is a difference
    too; a causal mask stored as 0/1 floats would be *added* to the attention scores, not applied."""
    for key, shape in expected.items():
        if key not in state:
            return f"missing key {key!r} (shape {list(shape)})"
        if tuple(state[key].shape) != shape:
            return f"key {key!r} has shape {list(state[key].shape)}, the layout expects {list(shape)}"
        if dtypes is not None and key in dtypes and _kind(state[key].dtype) != _kind(dtypes[key]):
            return (f"key {key!r} has dtype {state[key].dtype}, the layout expects a {_kind(dtypes[key])} "
                    f"tensor ({dtypes[key]})")
    extra = next((k for k in state if k not in expected), None)
    if extra is not None:
        return f"unexpected key {extra!r} (shape {list(state[extra].shape)})"
    return None


def check_layout(state: Mapping[str, Tensor], expected: Layout, layout_name: str, where: str,
                 hint: str = "", dtypes: Mapping[str, torch.dtype] | None = None) -> None:
    """Refuse, with one message, a state dict that does not fit ``expected`` exactly (and, given
    ``dtypes``, an entry of another dtype kind)."""
    problem = layout_mismatch(state, expected, dtypes)
    if problem is not None:
        raise PretrainedError(f"{where}: does not fit layout {layout_name} ({len(expected)} keys): {problem}; "
                              f"nothing was loaded.{' ' + hint if hint else ''}")


def load_strict(module: nn.Module, state: Mapping[str, Tensor], layout_name: str, where: str, hint: str = "") -> None:
    """Check the whole layout first, then copy: a file that does not fit leaves no partial load behind."""
    check_layout(state, layout_of(module), layout_name, where, hint, dtypes_of(module))
    module.load_state_dict(state, strict=True)
