"""The claims table: each claim of the papers, our paired difference with its 95 % CI, a verdict.

Claims are data (config/claims.yaml, documented there and in docs/statistics.md): an id, the
source, variant A vs variant B, and per metric *role* (zeroshot, tie, pep_auc, ...) the published
values of A and B. The workflow config maps each role to the benchmarks that measure it here
(``tables.claims.metrics``), with its direction. One output row per claim × role × benchmark ×
size; a claim whose variants did not run, or whose metric has no benchmark here, still gets its
row ("not run", "not evaluated"), never dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from argent.tables.collect import values_by_seed
from argent.tables.paper import PARTIAL_MARK
from argent.tables.stats import Summary, fmt_summary, mean_ci, paired_differences, verdict

EXPECT = ("better", "worse")


@dataclass(frozen=True)
class MetricSpec:
    """One benchmark/metric that measures a role, as the workflow config maps it."""

    benchmark: str
    metric: str
    scale: float = 1.0
    lower_is_better: bool = False

    @property
    def key(self) -> str:
        return f"{self.benchmark}/{self.metric}"


@dataclass(frozen=True)
class ClaimMetric:
    role: str
    published: tuple[float, float] | None     # (A, B) as printed in the source
    expect: str                               # better | worse: A relative to B, as the source shows

    @property
    def published_diff(self) -> float | None:
        return None if self.published is None else self.published[0] - self.published[1]


@dataclass(frozen=True)
class Claim:
    id: str
    source: str
    statement: str
    a: str
    b: str
    metrics: tuple[ClaimMetric, ...]
    note: str = ""


@dataclass
class ClaimsSpec:
    claims: list[Claim]
    roles: dict[str, list[MetricSpec]] = field(default_factory=dict)


def _fail(where: str, what: str) -> ValueError:
    return ValueError(f"{where}: {what}")


def parse_roles(section: dict[str, Any], where: str = "tables.claims.metrics") -> dict[str, list[MetricSpec]]:
    roles: dict[str, list[MetricSpec]] = {}
    for role, entries in (section or {}).items():
        entries = entries if isinstance(entries, list) else [entries]
        specs = []
        for i, e in enumerate(entries):
            if not isinstance(e, dict) or "benchmark" not in e or "metric" not in e:
                raise _fail(f"{where}.{role}[{i}]", "needs {benchmark: <name>, metric: <key>}")
            unknown = set(e) - {"benchmark", "metric", "scale", "lower_is_better"}
            if unknown:
                raise _fail(f"{where}.{role}[{i}]", f"unknown keys {sorted(unknown)}")
            specs.append(MetricSpec(str(e["benchmark"]), str(e["metric"]), float(e.get("scale", 1.0)),
                                    bool(e.get("lower_is_better", False))))
        roles[role] = specs
    return roles


def _parse_metric(claim_id: str, role: str, entry: Any, where: str) -> ClaimMetric:
    entry = entry or {}
    if not isinstance(entry, dict):
        raise _fail(f"{where}: claim {claim_id}, metric {role}", "expected {published: [A, B]} and/or {expect: better|worse}")
    published = entry.get("published")
    if published is not None:
        if not (isinstance(published, list) and len(published) == 2 and all(isinstance(v, (int, float)) for v in published)):
            raise _fail(f"{where}: claim {claim_id}, metric {role}", f"published must be [A, B] numbers, got {published!r}")
        published = (float(published[0]), float(published[1]))
    expect = entry.get("expect")
    if expect is not None and expect not in EXPECT:
        raise _fail(f"{where}: claim {claim_id}, metric {role}", f"expect must be one of {EXPECT}, got {expect!r}")
    if expect is None:
        raise _fail(f"{where}: claim {claim_id}, metric {role}",
                    "give expect: better|worse (A relative to B as the source reports it)")
    return ClaimMetric(role, published, expect)


def load_claims(path: Path) -> list[Claim]:
    """Parse and check config/claims.yaml (see the file's header for the format)."""
    try:
        data = yaml.safe_load(Path(path).read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: claims file not found; set tables.claims.file in the workflow config") from None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise _fail(str(path), "expected a top-level 'claims:' list")
    claims, seen = [], set()
    for i, c in enumerate(data["claims"]):
        missing = [k for k in ("id", "source", "a", "b", "metrics") if k not in c]
        if missing:
            raise _fail(f"{path}: claims[{i}]", f"missing keys {missing}")
        if c["id"] in seen:
            raise _fail(f"{path}: claims[{i}]", f"duplicate id {c['id']!r}")
        seen.add(c["id"])
        metrics = tuple(_parse_metric(c["id"], role, e, str(path)) for role, e in c["metrics"].items())
        claims.append(Claim(str(c["id"]), str(c["source"]), str(c.get("claim", "")), str(c["a"]), str(c["b"]),
                            metrics, str(c.get("note", ""))))
    return claims


def expected_sign(cm: ClaimMetric, spec: MetricSpec, claim_id: str) -> int:
    """The sign of A − B in raw metric units that the claim predicts (TIE: lower is better).

    Checks that the published numbers agree with ``expect`` under the metric's direction."""
    better_sign = -1 if spec.lower_is_better else 1
    sign = better_sign if cm.expect == "better" else -better_sign
    diff = cm.published_diff
    if diff is not None and diff != 0 and (diff > 0) != (sign > 0):
        raise ValueError(f"claim {claim_id}, metric {cm.role}: published A − B = {diff:+g} contradicts "
                         f"expect: {cm.expect} for {spec.key} ({'lower' if spec.lower_is_better else 'higher'} is "
                         "better); fix config/claims.yaml or the metric's lower_is_better")
    return sign


def _row(claim: Claim, cm: ClaimMetric, size: str) -> dict[str, Any]:
    return {"id": claim.id, "source": claim.source, "claim": claim.statement, "role": cm.role, "size": size,
            "variant_a": claim.a, "variant_b": claim.b, "expect": f"A {cm.expect}",
            "published_a": None if cm.published is None else cm.published[0],
            "published_b": None if cm.published is None else cm.published[1],
            "published_diff": cm.published_diff, "benchmark": None, "metric": None, "lower_is_better": None,
            "expected_sign": None, "a_mean": None, "b_mean": None, "diff_mean": None, "ci95": None,
            "ci_low": None, "ci_high": None, "n": 0, "n_configured": 0, "partial": False, "seeds": "",
            "verdict": "", "note": claim.note}


def evaluate_claim(claim: Claim, cm: ClaimMetric, spec: MetricSpec | None, size: str, long: pl.DataFrame,
                   present: set[tuple[str, str]], seeds: dict[str, list[int]],
                   configured: set[str] | None = None) -> dict[str, Any]:
    row = _row(claim, cm, size)
    if spec is None:
        row.update(verdict="not evaluated",
                   note=f"metric role {cm.role!r} has no benchmark in tables.claims.metrics of this config")
        return row
    sign = expected_sign(cm, spec, claim.id)
    row.update(benchmark=spec.benchmark, metric=spec.metric, lower_is_better=spec.lower_is_better, expected_sign=sign,
               expect=f"A {cm.expect} (Δ {'>' if sign > 0 else '<'} 0)")
    absent = [v for v in (claim.a, claim.b) if (v, size) not in present]
    if absent:
        why = [f"{v}: " + ("configured, but no evaluation (failed or skipped; hard-negative variants need WordNet)"
                           if configured and v in configured else "not trained by an active group of this config (a group left out, or not listed)")
               for v in absent]
        row.update(verdict="not run", note=f"size {size}: " + "; ".join(why))
        return row
    a = values_by_seed(long, claim.a, size, spec.benchmark, spec.metric)
    b = values_by_seed(long, claim.b, size, spec.benchmark, spec.metric)
    if not a or not b:
        row.update(verdict="not evaluated", note=f"{spec.key} did not run for {claim.a if not a else claim.b}")
        return row
    diffs = paired_differences(a, b)
    both_seeds = set(seeds.get(claim.a, [])) & set(seeds.get(claim.b, []))
    summary = mean_ci(diffs.values())
    row.update(a_mean=mean_ci(a[k] for k in diffs).mean, b_mean=mean_ci(b[k] for k in diffs).mean,
               n=summary.n, n_configured=len(both_seeds), partial=summary.n < len(both_seeds),
               seeds=" ".join(str(k) for k in diffs))
    if summary.n == 0:
        undefined = [v for v, vals in ((claim.a, a), (claim.b, b)) if all(x is None for x in vals.values())]
        why = f"{spec.key} is not defined for {' and '.join(undefined)}" if undefined else "no seed has both values"
        row.update(verdict="n/a", note=why)
        return row
    row.update(diff_mean=summary.mean, ci95=summary.half_width, ci_low=summary.low, ci_high=summary.high,
               verdict=verdict(summary, sign))
    if summary.n < 2:
        row["note"] = "; ".join(filter(None, [row["note"], "n=1: no CI, no verdict"]))
    for key in ("a_mean", "b_mean", "diff_mean", "ci95", "ci_low", "ci_high"):
        if row[key] is not None:
            row[key] *= spec.scale
    return row


def claims_rows(spec: ClaimsSpec, long: pl.DataFrame, sizes: list[str], seeds: dict[str, list[int]],
                configured: set[str] | None = None) -> list[dict[str, Any]]:
    present = set(zip(long["variant"].to_list(), long["size"].to_list()))
    rows = []
    for size in sizes:
        for claim in spec.claims:
            for cm in claim.metrics:
                for ms in spec.roles.get(cm.role) or [None]:
                    rows.append(evaluate_claim(claim, cm, ms, size, long, present, seeds, configured))
    return rows


def _num(v: float | None, signed: bool = False) -> str:
    return "–" if v is None else (f"{v:+.2f}" if signed else f"{v:.2f}")


def claims_markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["# Claims of the papers, tested with paired seeds", "",
             "Δ = A − B in the metric's units. Ours: mean over seeds of the per-seed difference (seed k of A "
             "against seed k of B, same data order and shared initialisation), ± 95 % CI half-width (Student t, "
             "n − 1 degrees of freedom), n = paired seeds. Verdict: **reproduced** = the CI excludes 0 on the side "
             "the paper reports; **contradicted** = it excludes 0 on the other side; **inconclusive** = it covers 0 "
             f"or n < 2. {PARTIAL_MARK} = fewer paired seeds than the config trains. Published Δ: the source's S-size "
             "numbers, other data and budget — compare signs, not digits. ↓ = lower is better.", "",
             "| id | source | metric | size | A vs B | expected | published Δ | ours Δ (95 % CI) | verdict | note |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        metric = r["role"] if r["benchmark"] is None else f"{r['benchmark']}/{r['metric']}" + ("↓" if r["lower_is_better"] else "")
        pub = "not published" if r["published_diff"] is None else \
            f"{_num(r['published_diff'], True)} ({_num(r['published_a'])} vs {_num(r['published_b'])})"
        if r["diff_mean"] is None:
            ours = "–"
        else:
            ours = fmt_summary(Summary(r["diff_mean"], r["ci95"], r["n"]), signed=True)
            ours += f" {PARTIAL_MARK}" if r["partial"] else ""
        lines.append(f"| {r['id']} | {r['source']} | {metric} | {r['size']} | {r['variant_a']} vs {r['variant_b']} | "
                     f"{r['expect']} | {pub} | {ours} | **{r['verdict']}** | {r['note']} |")
    summary = ", ".join(f"{v or 'none'}: {k}" for v, k in sorted(counts.items()))
    lines.insert(4, f"Rows by verdict — {summary}.\n")
    return "\n".join(lines) + "\n"
