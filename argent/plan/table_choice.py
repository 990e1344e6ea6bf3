"""Which tables a config's tables job writes, and one line for each it leaves out.

A table that could hold nothing but "not run" rows or untested claims is left out, named in one
printed line, rather than written empty: the ablation table when none of its rows' groups runs
(config/quick.yaml switches ablations off), the claims table when no claim compares two runs of two
paired seeds or more (a single seed gives no interval and no test; ``tables.claims.min_paired_seeds``).
``main`` and ``mechanism`` are always written (the mechanism table lists the active groups' variants
only). The DAG build (``argent.plan.dag.Dag.tables``: the rule's outputs) and ``argent tables`` (what
it writes) ask this one question, so the two always agree. Torch- and polars-free.
"""

from __future__ import annotations

from argent.plan.groups import Plan
from argent.tablespec.claims import ClaimsSpec
from argent.tablespec.outputs import TABLES, TableChoice
from argent.tablespec.section import DEFAULT_GROUP, TablesSection, qualified


def trained_seeds(plan: Plan, name: str) -> set[int]:
    """The seeds an active group lists ``<group>/<variant>`` with (borrowed runs included)."""
    return {key.seed for key in plan.home if key.qualified == name}


def _switched_off(plan: Plan, groups: set[str]) -> str:
    """Why ``groups`` do not run: each one's reason from the plan, or "not a group of this config"."""
    reasons = dict(plan.left_out)
    return "; ".join(f"{g}: {reasons.get(g, 'not a group of this config')}" for g in sorted(groups))


def ablations_left_out(section: TablesSection, plan: Plan) -> str:
    """Why the ablation table would hold no run ("" when one of its rows' groups is active)."""
    table = section.ablations
    groups = {qualified(r.variant, table.group).partition("/")[0] for g in table.groups for r in g.rows}
    if groups & set(plan.configs):
        return ""
    return f"none of its rows' groups runs ({_switched_off(plan, groups)})"


def claims_left_out(section: TablesSection, claims: ClaimsSpec, plan: Plan) -> str:
    """Why no claim could be tested ("" when a claim's two runs share ``tables.claims.min_paired_seeds`` seeds)."""
    least = section.claims.min_paired_seeds
    paired = [trained_seeds(plan, qualified(c.a, DEFAULT_GROUP)) & trained_seeds(plan, qualified(c.b, DEFAULT_GROUP))
              for c in claims.claims]
    if any(len(seeds) >= least for seeds in paired):
        return ""
    if not any(paired):
        return "no claim compares two runs this config trains"
    most = max(len(seeds) for seeds in paired)
    return (f"each claim's two runs share {most} seed at most, and a claim is tested on {least} paired seeds or "
            "more (raise runs.seeds or a group's seeds, as config/config.yaml does for every group; or lower "
            "tables.claims.min_paired_seeds)")


def choose_tables(section: TablesSection, plan: Plan, claims: ClaimsSpec, probe: bool) -> TableChoice:
    """The tables of this config (its typed ``tables:`` section); ``probe``: probe results exist (``argent
    tables``) or will (the DAG). The cost table is always chosen: its writer names the one case it cannot be
    written (no job records)."""
    left_out = {"claims": claims_left_out(section, claims, plan), "ablations": ablations_left_out(section, plan),
                "probe": "" if probe else "the probe did not run (probe.enabled is false, or no probe result)"}
    left_out = {name: why for name, why in left_out.items() if why}
    return TableChoice(tuple(t for t in TABLES if t not in left_out), left_out)
