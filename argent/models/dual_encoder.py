"""The dual encoder: two towers, bias-free projections, and the lift into the embedding space.

Lorentz: v = α·W f, x̃ = exp₀(v) (space components), α learnable (stored as log α, init 1/√D,
kept ≤ 1), curvature c learnable in log space (kept in [c_init/10, 10·c_init]).
Euclidean (CLIP): x = W f / ‖W f‖. Both: a learnable logit scale s = exp(t), capped.
The bounds are enforced on the stored parameters: the trainer calls ``clamp_scalars_()`` after
every optimiser step (MERU's way). A clamp on read alone would zero the gradient past a bound and
let the stored value drift there for good. The getters clamp the value as well, only as a guard,
with the gradient passed straight through (``_guard``).
The lift and everything after it run in float32, even under autocast.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from argent import geometry
from argent.config import ModelConfig
from argent.models.encoders import ImageEncoder, TextEncoder, init_projection


def _f32(x: float) -> float:
    return float(torch.tensor(x, dtype=torch.float32))


def _guard(x: Tensor, lo: float | None, hi: float | None) -> Tensor:
    """The value clamped to [lo, hi], the gradient passed straight through: a plain clamp has zero
    gradient at and past its bound, so a scalar clamped in place onto its bound could never leave it."""
    return x + (x.clamp(lo, hi) - x).detach()


class DualEncoder(nn.Module):
    def __init__(self, cfg: ModelConfig, geometry_name: str) -> None:
        super().__init__()
        if geometry_name not in ("euclidean", "lorentz"):
            raise ValueError(f"geometry must be 'euclidean' or 'lorentz', got {geometry_name!r}")
        self.config = cfg
        self.geometry = geometry_name
        self.visual = ImageEncoder(cfg)
        self.textual = TextEncoder(cfg)
        self.visual_proj = nn.Linear(self.visual.width, cfg.embed_dim, bias=False)
        self.textual_proj = nn.Linear(self.textual.width, cfg.embed_dim, bias=False)
        init_projection(self.visual_proj, self.visual.width)
        init_projection(self.textual_proj, self.textual.width)
        # Parameter names contain logit_scale / visual_alpha / textual_alpha / curv: the optimiser
        # excludes them from weight decay by these substrings.
        self.log_logit_scale = nn.Parameter(torch.tensor(math.log(cfg.logit_scale_init)))
        alpha0 = math.log(cfg.embed_dim**-0.5)
        self.visual_alpha = nn.Parameter(torch.tensor(alpha0))
        self.textual_alpha = nn.Parameter(torch.tensor(alpha0))
        self.log_curv = nn.Parameter(torch.tensor(math.log(cfg.curv_init)), requires_grad=cfg.learn_curv)
        # Bounds rounded to float32: a stored value clamped in place to a bound must not read as
        # past it (float32(log 10) > log 10 in double), or the read clamp would zero its gradient.
        self._curv_bounds = (_f32(math.log(cfg.curv_init / 10)), _f32(math.log(cfg.curv_init * 10)))
        self._max_logit = _f32(math.log(cfg.logit_scale_max))
        if geometry_name == "euclidean":
            # Unused by CLIP; frozen so DDP does not wait for their gradients.
            for p in (self.log_curv, self.visual_alpha, self.textual_alpha):
                p.requires_grad_(False)

    # ---- learnable scalars ----
    @torch.no_grad()
    def clamp_scalars_(self) -> None:
        """Project the stored scalars back into their bounds, in place; call after every optimiser step."""
        self.log_curv.clamp_(*self._curv_bounds)
        self.log_logit_scale.clamp_(max=self._max_logit)
        self.visual_alpha.clamp_(max=0)
        self.textual_alpha.clamp_(max=0)

    def curv(self) -> Tensor:
        """c as a 0-d float32 tensor in [c_init/10, 10·c_init] (read clamp: a guard only)."""
        return _guard(self.log_curv.float(), *self._curv_bounds).exp()

    def logit_scale(self) -> Tensor:
        """Logit scale s = exp(t), t ≤ log(logit_scale_max) (no lower clamp, as in MERU)."""
        return _guard(self.log_logit_scale.float(), None, self._max_logit).exp()

    def alphas(self) -> tuple[Tensor, Tensor]:
        """α_img, α_txt; log α ≤ 0, so the lift can only shrink tangent norms."""
        return _guard(self.visual_alpha.float(), None, 0.0).exp(), _guard(self.textual_alpha.float(), None, 0.0).exp()

    # ---- encoding ----
    def _lift(self, v: Tensor, log_alpha: Tensor) -> Tensor:
        v = v.float()
        if self.geometry == "euclidean":
            return F.normalize(v, dim=-1)
        with torch.autocast(device_type=v.device.type, enabled=False):
            return geometry.exp_map0(v * _guard(log_alpha.float(), None, 0.0).exp(), self.curv())

    def lift_image(self, v: Tensor) -> Tensor:
        return self._lift(v, self.visual_alpha)

    def lift_text(self, v: Tensor) -> Tensor:
        return self._lift(v, self.textual_alpha)

    def encode_image(self, images: Tensor, project: bool = True) -> Tensor:
        """(B, 3, S, S) in [0, 1] -> (B, D): lifted embedding, or W f when ``project=False``."""
        v = self.visual_proj(self.visual(images))
        return self.lift_image(v) if project else v.float()

    def encode_text(self, tokens: Tensor, project: bool = True) -> Tensor:
        """(B, L) token ids -> (B, D): lifted embedding, or W f when ``project=False``."""
        v = self.textual_proj(self.textual(tokens))
        return self.lift_text(v) if project else v.float()

    def similarity(self, x: Tensor, y: Tensor) -> Tensor:
        """(B1, D), (B2, D) -> (B1, B2): cosine (euclidean) or −d (lorentz); larger is closer."""
        if self.geometry == "euclidean":
            return x.float() @ y.float().T
        return -geometry.pairwise_dist(x.float(), y.float(), self.curv())

    def scalars(self) -> dict[str, float]:
        a_img, a_txt = self.alphas()
        out = {"logit_scale": self.logit_scale().item(), "alpha_img": a_img.item(), "alpha_txt": a_txt.item()}
        if self.geometry == "lorentz":
            out["curv"] = self.curv().item()
        return out


def build_model(cfg: ModelConfig, geometry_name: str) -> DualEncoder:
    return DualEncoder(cfg, geometry_name)
