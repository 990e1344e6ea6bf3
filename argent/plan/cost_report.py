"""What ``argent plan`` and the DAG build print of the groups' cost (argent/plan/cost.py computes it):
the per-size table, the FLOP-model estimates in a table of their own under a heading that says what
they are, and the one-line total. A measured hour and an estimated one are never added together.
"""

from __future__ import annotations

from pathlib import Path

from argent.config import WorkflowConfig
from argent.plan.cost import GroupCost, group_costs
from argent.plan.groups import Plan


def cost_line(workflow: WorkflowConfig, plan: Plan, base_dir: Path = Path(".")) -> str:
    """The one line the DAG build prints: the groups' cost (``summary_line`` of ``group_costs``)."""
    return summary_line(group_costs(workflow, plan, base_dir), plan)


def _span(values: dict[str, float], fmt: str) -> str:
    """"lo–hi" of the values in format ``fmt`` (one value when both read the same)."""
    lo, hi = format(min(values.values()), fmt), format(max(values.values()), fmt)
    return lo if lo == hi else f"{lo}–{hi}"


def _hours(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.1f}"


def summary_line(costs: list[GroupCost], plan: Plan) -> str:
    """The one-line total the Snakefile prints at DAG build: the measured total, and apart from it,
    labelled, the FLOP-model estimate of the groups without a measured step time (GPU configs)."""
    runs = sum(c.runs for c in costs)
    borrowed = sum(c.borrowed for c in costs)
    by_unit: dict[str, float] = {}
    estimated: dict[str, float] = {}
    unknown = sorted({s for c in costs for s, st in c.step_time.items() if st.seconds is None})
    for c in costs:
        h, e = c.hours(), c.estimated_hours()
        if h is not None:
            by_unit[c.unit] = by_unit.get(c.unit, 0.0) + h
        if e is not None:
            estimated[c.unit] = estimated.get(c.unit, 0.0) + e
    hours = ", ".join(f"≈ {v:,.1f} {u}" for u, v in by_unit.items()) or (
        "no measured step time" if estimated else "no estimate")
    tail = f"; step time unknown for size(s) {', '.join(unknown)} (left out of the total)" if unknown else ""
    if estimated:
        n = sum(1 for c in costs if c.estimated_hours() is not None)
        labels = "; ".join(sorted({est.label() for c in costs for est in c.estimate.values()}))
        tail += (f"; FLOP-model estimate at {labels} for the {n} group(s) not measured, not in the total: "
                 + ", ".join(f"≈ {v:,.1f} {u}" for u, v in estimated.items()))
    left = f"; {len(plan.left_out)} group(s) left out" if plan.left_out else ""
    return (f"argent plan: {runs} training runs ({borrowed} borrowed, not retrained) in {len(costs)} groups, "
            f"{hours}{tail}{left}")


def _columns(head: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = lambda r: "  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip()
    return [fmt(head), fmt(tuple("-" * w for w in widths))] + [fmt(r) for r in rows]


def estimate_table(costs: list[GroupCost]) -> list[str]:
    """The FLOP-model estimates of the sizes without a step time, as a table of their own under a
    heading that says what they are; [] when there are none (CPU configs, everything measured)."""
    rows = []
    for c in costs:
        scale = max(c.gpus or c.threads, 1) / 3600
        for size, est in c.estimate.items():
            rows.append((c.group, size, str(c.runs_by_size[size]), str(est.gpus), _span(est.tflop, ".1f"),
                         _span(est.seconds, ".3g"), f"{_hours(c.steps[size] * est.run_seconds() * scale)} {c.unit}"))
    if not rows:
        return []
    first = next(est for c in costs for est in c.estimate.values())
    head = ("group", "size", "runs", "GPUs/run", "TFLOP/step", "s/step (estimate)", "hours (estimate)")
    return ["", f"Estimate, not measured, for the sizes without a step time (in no total above): the FLOP model's "
                f"training FLOPs per step (argent/models/flops.py; a range over the variants) ÷ (GPUs/run × "
                f"cost.estimate_mfu {first.mfu:g} ({first.mfu_source}) × cost.gpu_peak_tflops "
                f"{first.peak_tflops:g} TFLOP/s)",
            *_columns(head, rows)]


def table(costs: list[GroupCost]) -> str:
    head = ("group", "size", "runs", "borrowed", "steps/run", "batch", "device", "GPUs/run", "s/step", "hours",
            "step time from")
    rows = []
    for c in costs:
        for i, size in enumerate(c.step_time):
            st = c.step_time[size]
            per_size = None if st.seconds is None else (
                c.runs_by_size[size] * c.steps[size] * st.seconds * max(c.gpus or c.threads, 1) / 3600)
            rows.append((c.group, size, str(c.runs_by_size[size]), str(c.borrowed) if i == 0 else "",
                         f"{c.steps[size]:,}", str(c.batch[size]), c.device, str(c.gpus),
                         "?" if st.seconds is None else f"{st.seconds:.4g}", f"{_hours(per_size)} {c.unit}", st.source))
        for note in c.notes:
            rows.append((c.group, "", "", "", "", "", "", "", "", "", note))
    lines = _columns(head, rows)
    lines.append("")
    for c in costs:
        estimated = c.estimated_hours()
        mfu = ", ".join(sorted({est.mfu_text for est in c.estimate.values()}))
        label = ("" if estimated is None
                 else f"; estimate (FLOP model at {mfu}, not measured) ≈ {estimated:,.1f} {c.unit}")
        lines.append(f"{c.group}: {c.runs} runs trained, {_hours(c.hours())} {c.unit}{label}")
    lines += estimate_table(costs)
    return "\n".join(lines)
