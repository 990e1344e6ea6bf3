"""The mechanism table: does cone collapse happen here?

ARGENT explains AdaEnt's gain by cone collapse: a parent embedding with ‖x̃‖ < 2K/√c has an
aperture of π/2, its cone is a half-space, and the cone loss stops shaping the pair. Per variant
and pair type, at the end of training: the share of parent embeddings inside that radius and the
mean exterior angle φ of the positive pairs, mean ± 95 % CI over seeds.

Source: the trainer's diagnostics in each run's metrics.jsonl (``diag/collapse/<parent item>``,
``diag/phi/<pair type>``, see argent/losses/objective.py ``diagnostics``), from the last step that
logged them, measured on that step's training batch (no evaluation set). The share is logged per
parent *item*, so pair types with the same parent (phrase ⊒ crop, phrase ⊒ text) show the same
share. Euclidean variants (CLIP) log neither: their rows say n/a.
"""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from argent.losses.entailment import PAIR_ITEMS
from argent.tables.collect import INVALID_KEY
from argent.tables.paper import PARTIAL_MARK
from argent.tables.run_readers import INVALID
from argent.tables.stats import Summary, fmt_summary, mean_ci

PAIR_SYMBOL = {pair: f"{parent} ⊒ {child}" for pair, (parent, child) in PAIR_ITEMS.items()}


def median_aperture(keys: dict[str, dict[int, float]], parent: str) -> dict[int, float]:
    """Per seed, the half-aperture asin(min(1, 2K/(√c·m))) at the median parent norm m.

    The aperture falls monotonically with the norm, so this is exactly the median aperture over
    the batch's parents (before any per-pair η scaling of the cone loss)."""
    q50, curv, cone_k = keys.get(f"norm/{parent}/q50", {}), keys.get("curv", {}), keys.get("cone_k", {})
    out = {}
    for seed in q50.keys() & curv.keys() & cone_k.keys():
        denom = math.sqrt(curv[seed]) * q50[seed]
        out[seed] = math.pi / 2 if denom <= 0 else math.asin(min(1.0, 2.0 * cone_k[seed] / denom))
    return out


def mechanism_rows(diag: pl.DataFrame, variants: list[str], sizes: list[str],
                   seeds: dict[str, list[int]]) -> list[dict[str, Any]]:
    """One record per (variant, size, pair type); variants without runs get a 'not run' record."""
    by_run: dict[tuple[str, str], dict[str, dict[int, float]]] = {}
    steps: dict[tuple[str, str], set[int]] = {}
    notes: dict[tuple[str, str], dict[str, list[str]]] = {}  # run -> key ("" for the run) -> what was wrong
    for r in diag.iter_rows(named=True):
        run = (r["variant"], r["size"])
        if r.get("note"):  # a trained run with nothing to read, or a value out of its range (collect.py)
            notes.setdefault(run, {}).setdefault(r["key"].removeprefix(INVALID_KEY), []).append(r["note"])
            continue
        by_run.setdefault(run, {}).setdefault(r["key"], {})[r["seed"]] = r["value"]
        steps.setdefault(run, set()).add(r["step"])
    rows = []
    for size in sizes:
        for variant in variants:
            keys = by_run.get((variant, size))
            n_conf = len(seeds.get(variant, []))
            base = {"variant": variant, "size": size, "n_configured": n_conf}
            said = notes.get((variant, size), {})
            if keys is None:
                status, note = ("no diagnostics", "; ".join(said.get("", []) or said_all(said))) if said \
                    else ("not run", "")
                rows.append({**base, "pair": "", "parent": "", "status": status, "n": 0, "partial": False,
                             **({"note": note} if note else {})})
                continue
            step = ",".join(str(s) for s in sorted(steps[(variant, size)]))
            curv = mean_ci(keys.get("curv", {}).values())
            pairs = [p for p in PAIR_ITEMS if f"phi/{p}" in keys]
            if not pairs:
                rows.append({**base, "pair": "", "parent": "", "status": "n/a", "n": 0, "partial": False,
                             "step": step, "note": "Euclidean variant: no cones, no Lorentz diagnostics"})
                continue
            for pair in pairs:
                parent = PAIR_ITEMS[pair][0]
                share = mean_ci(keys.get(f"collapse/{parent}", {}).values())
                phi = mean_ci(keys[f"phi/{pair}"].values())
                omega = mean_ci(median_aperture(keys, parent).values())
                n = max(share.n, phi.n)
                bad = [k for k in said if k in (f"collapse/{parent}", f"phi/{pair}", "curv", f"norm/{parent}/q50")]
                rows.append({**base, "pair": pair, "parent": parent, "status": "ok", "n": n,
                             "partial": n < n_conf, "step": step,
                             "invalid": "; ".join(note for k in bad for note in said[k]),
                             "invalid_keys": ",".join(bad),
                             "collapse_mean": share.mean, "collapse_ci95": share.half_width, "collapse_n": share.n,
                             "phi_mean": phi.mean, "phi_ci95": phi.half_width, "phi_n": phi.n,
                             "omega_mean": omega.mean, "omega_ci95": omega.half_width, "omega_n": omega.n,
                             "curv_mean": curv.mean, "curv_ci95": curv.half_width, "curv_n": curv.n})
    return rows


def said_all(said: dict[str, list[str]]) -> list[str]:
    return [n for found in said.values() for n in found]


def mechanism_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["# Mechanism: cone collapse at the end of training", "",
             "Share of parent embeddings inside the cone-collapse radius ‖x̃‖ < 2K/√c (where the entailment cone "
             "is a half-space) and mean exterior angle φ (radians) of positive pairs, per pair type. Each run "
             "contributes the trainer's diagnostics at its last logged step, on that step's training batch; cells "
             "are mean ± 95 % CI over seeds (Student t), n = seeds, n=1 without CI. The share is logged per parent "
             "item, so pairs with the same parent repeat it. Median ω: the cone half-aperture asin(min(1, 2K/(√c·m))) "
             "at the median parent norm m (logged), i.e. the median aperture; the cone loss of HyCoCLIP scales it by "
             "η per pair type. φ above ω: the typical positive pair lies outside its parent's cone (a mean against a "
             f"median: a guide, not a count). {PARTIAL_MARK} = fewer seeds than configured.", "",
             "| variant | size | pair (parent ⊒ child) | share inside 2K/√c | mean φ (rad) | median ω (rad) | "
             "curvature c | step |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["status"] != "ok":
            note = r["status"] + (f": {r['note']}" if r.get("note") else "")
            lines.append(f"| {r['variant']} | {r['size']} | {note} | | | | | {r.get('step', '')} |")
            continue
        mark = f" {PARTIAL_MARK}" if r["partial"] else ""
        bad = set(filter(None, r.get("invalid_keys", "").split(",")))
        share = _flag(fmt_summary(_summary(r, "collapse"), 100.0, 1).replace(" (n=", " % (n=", 1) + mark, bad,
                      f"collapse/{r['parent']}")
        phi = _flag(fmt_summary(_summary(r, "phi"), 1.0, 3) + mark, bad, f"phi/{r['pair']}")
        omega = _flag(fmt_summary(_summary(r, "omega"), 1.0, 3), bad, "curv", f"norm/{r['parent']}/q50")
        curv = _flag(fmt_summary(_summary(r, "curv"), 1.0, 3), bad, "curv")
        lines.append(f"| {r['variant']} | {r['size']} | {PAIR_SYMBOL.get(r['pair'], r['pair'])} | {share} | {phi} | "
                     f"{omega} | {curv} | {r['step']} |")
    invalid = list(dict.fromkeys(r["invalid"] for r in rows if r.get("invalid")))
    if invalid:
        lines += ["", f"{INVALID}: a seed's value outside its range in the run's metrics.jsonl, left out of the cell "
                      f"(n counts the others), never printed: " + "; ".join(invalid)]
    return "\n".join(lines) + "\n"


def _flag(text: str, bad: set[str], *keys: str) -> str:
    """A cell one of whose seeds' values was out of range (left out of it): marked ``INVALID``."""
    return f"{text} {INVALID}" if any(k in bad for k in keys) else text


def _summary(r: dict[str, Any], prefix: str) -> Summary:
    return Summary(r.get(f"{prefix}_mean"), r.get(f"{prefix}_ci95"), r.get(f"{prefix}_n") or 0)
