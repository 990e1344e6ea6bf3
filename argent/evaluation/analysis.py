"""Embedding analysis (docs/method.md §6.8; ARGENT §6.2): norms per item type and a 2-D projection.

Norms: for Lorentz models the hyperbolic radius d(O, x) = asinh(√c‖x̃‖)/√c (and ‖x̃‖); for
Euclidean (CLIP) models the norm of W f before normalisation (projected CLIP embeddings all have
norm 1, so their norm says nothing). Item types: image, caption, HierarCaps caption levels 1–4,
crop and phrase when the benchmark gives them.

2-D projection. HoroPCA (Chami et al., ICML 2021) is not an installable package; argent uses a
documented stand-in that keeps what the figure is read for, the distance from the root:
1. log map at the origin: v = log₀(x) (tangent vectors, ‖v‖ = d(O, x));
2. PCA (sklearn, centred) of the tangent vectors to 2 components; u = the 2-D coordinates;
3. place each point in the unit Poincaré disk at angle atan2(u) and Euclidean radius
   tanh(√c·d(O, x)/2), i.e. its true hyperbolic radius on the disk of curvature −1 rescaled by c.
Angles are therefore PCA angles about the data mean (not geodesic-preserving like HoroPCA);
radii are exact. Euclidean models get a plain 2-D PCA of their normalised embeddings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from sklearn.decomposition import PCA
from torch import Tensor

from argent import geometry
from argent.colours import item_colour

__all__ = ["norm_summary", "poincare_projection", "euclidean_projection", "plot_norms", "plot_projection"]

_QUANTILES = {"q05": 0.05, "q25": 0.25, "median": 0.5, "q75": 0.75, "q95": 0.95}


def norm_summary(values: np.ndarray | Tensor, bins: int = 30) -> dict:
    """Summary statistics and a histogram of a 1-D array of norms."""
    v = np.asarray(values, dtype=np.float64).ravel()
    if v.size == 0:
        raise ValueError("norm_summary: no values")
    counts, edges = np.histogram(v, bins=bins)
    out = {"n": int(v.size), "mean": float(v.mean()), "std": float(v.std()), "min": float(v.min()), "max": float(v.max())}
    out.update({name: float(np.quantile(v, q)) for name, q in _QUANTILES.items()})
    out["histogram"] = {"counts": counts.tolist(), "edges": edges.tolist()}
    return out


def poincare_projection(x: Tensor, curv: float, seed: int = 0) -> np.ndarray:
    """Hyperboloid space components (N, D) -> (N, 2) points in the unit disk (see module doc)."""
    x = x.detach().to(torch.float64).cpu()
    tangent = geometry.log_map0(x, curv).numpy()
    radius = geometry.dist0(x, curv).numpy()
    coords = _pca2(tangent, seed)
    angle = np.arctan2(coords[:, 1], coords[:, 0])
    rho = np.tanh(math.sqrt(curv) * radius / 2.0)  # < 1: inside the disk
    return np.stack([rho * np.cos(angle), rho * np.sin(angle)], axis=1)


def euclidean_projection(x: Tensor, seed: int = 0) -> np.ndarray:
    """Plain 2-D PCA of (N, D) embeddings -> (N, 2)."""
    return _pca2(x.detach().to(torch.float64).cpu().numpy(), seed)


def _pca2(data: np.ndarray, seed: int) -> np.ndarray:
    if data.shape[0] < 2:
        raise ValueError("projection: needs at least 2 points")
    return PCA(n_components=2, random_state=seed).fit_transform(data)


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")  # files only; no display on workers
    import matplotlib.pyplot as plt

    return plt


def plot_norms(norms: Mapping[str, np.ndarray], path: Path, xlabel: str, title: str = "") -> None:
    """Overlaid density histograms of norms per item type -> PNG at ``path`` (atomic)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 4), dpi=120)
    # Shared bin edges so the item types are comparable bar for bar.
    edges = np.histogram_bin_edges(np.concatenate([np.asarray(v, dtype=np.float64) for v in norms.values()]), bins=40)
    for name, values in norms.items():
        ax.hist(np.asarray(values), bins=edges, density=True, histtype="step", linewidth=1.5, color=item_colour(name),
                label=f"{name} (n={len(values)})")
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title, fontsize=9)
    ax.set_ylabel("density")
    ax.legend(fontsize=7)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def plot_projection(points: Mapping[str, np.ndarray], path: Path, disk: bool, title: str) -> None:
    """Scatter of 2-D points per item type (in the unit disk when ``disk``) -> PNG at ``path``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 5), dpi=120)
    if disk:
        ax.add_patch(plt.Circle((0, 0), 1.0, fill=False, color="black", linewidth=0.8))
        ax.set_xlim(-1.05, 1.05)
        ax.set_ylim(-1.05, 1.05)
    for name, xy in points.items():
        ax.scatter(xy[:, 0], xy[:, 1], s=4, alpha=0.6, color=item_colour(name), label=name)
    ax.set_aspect("equal")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, markerscale=3)
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)


def _save(fig, path: Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png")
    tmp.replace(path)
