"""Benchmark argent.geometry against geoopt's Lorentz manifold: values and speed.

Conventions. argent: curvature −c, points stored as the space part x̃ ∈ R^D (x_t recomputed).
geoopt: ``geoopt.Lorentz(k)`` has curvature −1/k and stores full points [x_t, x̃] ∈ R^{D+1}; so
k = 1/c, and argent's x̃ corresponds to geoopt's point [time_component(x̃), x̃]. Tangent vectors at
the origin are [0, v] in geoopt.

Cases (float32 unless --dtype): ``exp_map0`` on n tangent vectors; ``pairwise_dist`` between n and
n points (geoopt has no matrix form, so its broadcast (n, 1, D+1) × (1, n, D+1) is run in row chunks
that fit --chunk-mb); ``pairwise_dist_self`` (x against itself, where the diagonal shows each
library's clamp floor). Each result is also compared with a float64 reference written inline
(matmul Minkowski inner product, acosh), independent of both libraries.

    python bench/geometry.py                 # n = 4096, D = 512, c ∈ {1, 0.1}
    python bench/geometry.py --quick         # n = 512, D = 64
Prints a table and writes JSON to --out (default results/bench/geometry.json).
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from argent import geometry as geo  # noqa: E402


def _time(fn: Callable[[], torch.Tensor], repeats: int, device: torch.device) -> tuple[float, torch.Tensor]:
    """Median wall time of ``fn`` over ``repeats`` runs after one warm-up, and its last output."""
    out = fn()
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        out = fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def _diff(a: torch.Tensor, b: torch.Tensor) -> dict[str, float]:
    a, b = a.double(), b.double()
    err = (a - b).abs()
    # relative to |b| with a floor: distances of identical points are ~0 in both libraries
    rel = err / b.abs().clamp(min=1e-6)
    return {"max_abs": err.max().item(), "max_rel": rel.max().item()}


def _ref_pairwise_dist(x: torch.Tensor, y: torch.Tensor, c: float) -> torch.Tensor:
    """float64 reference: arcosh(−c⟨x, y⟩_L)/√c with ⟨x, y⟩_L = x̃·ỹ − x_t·y_t."""
    x, y = x.double(), y.double()
    xt = torch.sqrt(1.0 / c + (x * x).sum(-1))
    yt = torch.sqrt(1.0 / c + (y * y).sum(-1))
    inner = x @ y.T - xt[:, None] * yt[None, :]
    return torch.acosh((-c * inner).clamp(min=1.0)) / math.sqrt(c)


def _ref_exp_map0(v: torch.Tensor, c: float) -> torch.Tensor:
    v = v.double()
    n = v.norm(dim=-1, keepdim=True)
    return torch.sinh(math.sqrt(c) * n) * v / (math.sqrt(c) * n)


def _geoopt_pairwise(manifold, xa: torch.Tensor, ya: torch.Tensor, chunk_rows: int) -> torch.Tensor:
    return torch.cat([manifold.dist(xa[i:i + chunk_rows, None, :], ya[None, :, :])
                      for i in range(0, xa.shape[0], chunk_rows)])


def _import_geoopt():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # geoopt 0.5 uses torch.jit.script
        import geoopt
    return geoopt


def run(n: int, d: int, curvs: list[float], dtype: torch.dtype, device: torch.device, repeats: int,
        chunk_mb: int, seed: int) -> list[dict]:
    geoopt = _import_geoopt()

    g = torch.Generator().manual_seed(seed)
    # Tangent vectors like a freshly initialised model's (norm ≈ 1: α = 1/√D times a unit-variance
    # projection), with a spread of norms so that small and large radii are both covered.
    radii = torch.empty(n, 1).uniform_(0.05, 2.5, generator=g)
    v = torch.randn(n, d, generator=g)
    v = (radii * v / v.norm(dim=-1, keepdim=True)).to(device=device, dtype=dtype)
    w = torch.randn(n, d, generator=g)
    w = (radii.flip(0) * w / w.norm(dim=-1, keepdim=True)).to(device=device, dtype=dtype)
    zeros = torch.zeros(n, 1, device=device, dtype=dtype)
    chunk_rows = max(1, (chunk_mb * 2**20) // (n * (d + 1) * torch.finfo(dtype).bits // 8))

    rows = []
    for c in curvs:
        manifold = geoopt.Lorentz(k=1.0 / c).to(device=device, dtype=dtype)

        # exp_map0
        t_ours, x = _time(functools.partial(geo.exp_map0, v, c), repeats, device)
        va = torch.cat([zeros, v], dim=-1)
        t_geo, xa_geo = _time(functools.partial(manifold.expmap0, va), repeats, device)
        y = geo.exp_map0(w, c)
        ref = _ref_exp_map0(v, c)
        rows.append({
            "op": "exp_map0", "curv": c, "shape": [n, d],
            "ours_s": t_ours, "geoopt_s": t_geo, "ratio_ours_over_geoopt": t_ours / t_geo,
            "ours_vs_geoopt": _diff(x, xa_geo[:, 1:]),
            "time_component_ours_vs_geoopt": _diff(geo.time_component(x, c), xa_geo[:, 0]),
            "ours_vs_f64": _diff(x, ref), "geoopt_vs_f64": _diff(xa_geo[:, 1:], ref),
        })

        # pairwise_dist on the same points, in each library's own storage
        xa = torch.cat([geo.time_component(x, c)[:, None], x], dim=-1)
        ya = torch.cat([geo.time_component(y, c)[:, None], y], dim=-1)
        for name, (p, q, pa, qa) in {"pairwise_dist": (x, y, xa, ya), "pairwise_dist_self": (x, x, xa, xa)}.items():
            reps = repeats if name == "pairwise_dist" else 1
            t_ours, d_ours = _time(functools.partial(geo.pairwise_dist, p, q, c), reps, device)
            t_geo, d_geo = _time(functools.partial(_geoopt_pairwise, manifold, pa, qa, chunk_rows), reps, device)
            ref = _ref_pairwise_dist(p, q, c)
            rows.append({
                "op": name, "curv": c, "shape": [n, n, d],
                "ours_s": t_ours, "geoopt_s": t_geo, "ratio_ours_over_geoopt": t_ours / t_geo,
                "ours_vs_geoopt": _diff(d_ours, d_geo),
                "ours_vs_f64": _diff(d_ours, ref), "geoopt_vs_f64": _diff(d_geo, ref),
                "diag_ours_mean": d_ours.diagonal().double().mean().item() if name.endswith("self") else None,
                "diag_geoopt_mean": d_geo.diagonal().double().mean().item() if name.endswith("self") else None,
            })
    return rows


def print_table(rows: list[dict]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title="argent.geometry vs geoopt.Lorentz (k = 1/c)")
    for col in ("op", "c", "ours ms", "geoopt ms", "ours/geoopt", "max abs Δ", "max rel Δ",
                "ours vs f64", "geoopt vs f64"):
        table.add_column(col, justify="right" if col not in ("op",) else "left")
    for r in rows:
        table.add_row(
            r["op"], f"{r['curv']:g}", f"{1e3 * r['ours_s']:.3f}", f"{1e3 * r['geoopt_s']:.3f}",
            f"{r['ratio_ours_over_geoopt']:.3f}", f"{r['ours_vs_geoopt']['max_abs']:.2e}",
            f"{r['ours_vs_geoopt']['max_rel']:.2e}", f"{r['ours_vs_f64']['max_abs']:.2e}",
            f"{r['geoopt_vs_f64']['max_abs']:.2e}",
        )
    Console(width=150).print(table)
    for r in rows:
        if r.get("diag_ours_mean") is not None:
            print(f"c={r['curv']:g}: d(x, x) floor ours {r['diag_ours_mean']:.3e}, geoopt {r['diag_geoopt_mean']:.3e}")


def _write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(payload, fh, indent=2)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=4096, help="points per side (n × n pairs)")
    ap.add_argument("--dim", type=int, default=512)
    ap.add_argument("--quick", action="store_true", help="n = 512, D = 64")
    ap.add_argument("--curv", type=float, nargs="+", default=[1.0, 0.1])
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--chunk-mb", type=int, default=256, help="memory per geoopt broadcast chunk")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("results/bench/geometry.json"))
    args = ap.parse_args(argv)
    if args.quick:
        args.n, args.dim = 512, 64
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    rows = run(args.n, args.dim, args.curv, dtype, device, args.repeats, args.chunk_mb, args.seed)
    print_table(rows)
    geoopt = _import_geoopt()

    _write_json(args.out, {
        "bench": "geometry",
        "n": args.n, "dim": args.dim, "dtype": args.dtype, "device": str(device), "repeats": args.repeats,
        "torch": torch.__version__, "geoopt": geoopt.__version__, "threads": torch.get_num_threads(),
        "machine": platform.platform(), "processor": platform.processor(),
        "rows": rows,
    })
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
