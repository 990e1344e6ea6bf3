"""The claims file's declarations besides its claims (argent/tablespec/claims.py), and the workflow config's role
map: each role's equivalence **margin** (``margins:``), the **amendments** log, and what a claims row needs
besides its test (docs/statistics.md, "What a verdict needs"): a role's **sensitivity** role (the same comparison
ranked another way), the **degenerate** rule (when a metric cannot rank on an arm), and a claim's **premise** (the
measured quantity its mechanism needs, written from the source's words). Parsed here; measured and applied by
argent/tables/protocol_card.py. Torch-free.
"""

from __future__ import annotations

import dataclasses
import datetime
import math
import re
from dataclasses import dataclass
from typing import Any

from argent.config import ConfigError

PREMISE_KEYS = ("quantity", "above", "source", "why")   # required; `roles:` is optional
AMENDMENT_KEYS = ("date", "change", "why", "decided_after")   # required; `claims:` is optional


def fail(where: str, what: str) -> ConfigError:
    return ConfigError(f"{where}: {what}")


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


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
class Margin:
    """The equivalence margin of a role, in the units the tables print (the published units)."""

    delta: float
    why: str


@dataclass(frozen=True)
class Amendment:
    """One change to the claims file made after a run was seen: the honest form of a
    pre-registration amendment says when, what changed, why, and what had been seen."""

    date: str                                 # ISO date
    change: str
    why: str
    decided_after: str                        # the run (and what it showed) the change was decided after
    claims: tuple[str, ...] = ()              # the ids of the claims it changes (optional)


@dataclass(frozen=True)
class Sensitivity:
    """The secondary role every claim on ``of`` also gets, exploratory: the same comparison ranked
    another way (PEP: the unclamped angle instead of the clamped score), with the reason."""

    of: str
    role: str
    why: str


@dataclass(frozen=True)
class SizeCalibration:
    """Primary rows with fewer than ``below_seeds`` paired seeds are decided at ``factor`` × Holm's levels:
    the factor at which the test's size holds on the recipe's measured seed law (bench/seed_law.py
    calibrate); ``evidence`` names the measurement."""

    factor: float
    below_seeds: int
    evidence: str

    def factor_at(self, seeds: int) -> float:
        return self.factor if seeds < self.below_seeds else 1.0


@dataclass(frozen=True)
class Degenerate:
    """When a metric cannot rank on an arm: more than ``tied_above`` of the comparisons it averages
    tied (a rank metric), or the arm's mean within the role's δ of the metric's best value."""

    tied_above: float
    why: str


@dataclass(frozen=True)
class Premise:
    """The measured quantity a claim's mechanism needs: the trainer's ``diag/<quantity>`` at the end
    of training, present on an arm when its mean over seeds is at least ``above``; ``source`` quotes the
    paper's words the premise is written from."""

    quantity: str
    above: float
    source: str
    why: str
    roles: tuple[str, ...] = ()   # the roles whose rows test the mechanism; () = every role of the claim
    name: str = ""                # its name under premises:


def why_text(value: Any, at: str, ask: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise fail(at, ask)
    return value.strip()


def parse_sensitivity(data: Any, margins: dict[str, Any], where: str) -> dict[str, Sensitivity]:
    """``sensitivity: {<declared role>: {role: <its sensitivity role>, why: ...}}``; both need a margin."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise fail(where, "expected a map <declared role>: {role: <sensitivity role>, why: <reason>}")
    out = {}
    for of, entry in data.items():
        at = f"{where}.{of}"
        if not isinstance(entry, dict) or set(entry) != {"role", "why"} or not isinstance(entry["role"], str):
            raise fail(at, "expected {role: <sensitivity role>, why: <why this ranking is the check>}")
        for role in (of, entry["role"]):
            if role not in margins:
                raise fail(at, f"role {role!r} has no margin; add it under margins:")
        if entry["role"] == of or entry["role"] in data:
            raise fail(at, f"{entry['role']!r} must be a role of its own, not a declared one")
        out[str(of)] = Sensitivity(str(of), entry["role"], why_text(entry["why"], f"{at}.why", "say why"))
    return out


def parse_degenerate(data: Any, where: str) -> Degenerate | None:
    """``degenerate: {tied_above: <share in (0, 1)>, why: ...}``: the rule under which a metric cannot rank."""
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) != {"tied_above", "why"}:
        raise fail(where, "expected {tied_above: <share in (0, 1)>, why: <justify the threshold>}")
    share = data["tied_above"]
    if not finite(share) or not 0 < share < 1:
        raise fail(f"{where}.tied_above", f"must be a share in (0, 1), got {share!r}")
    return Degenerate(float(share), why_text(data["why"], f"{where}.why", "justify the threshold"))


def parse_size_calibration(data: Any, where: str) -> SizeCalibration | None:
    """``size_calibration: {factor: <in (0, 1]>, below_seeds: <int ≥ 2>, evidence: ...}``."""
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) != {"factor", "below_seeds", "evidence"}:
        raise fail(where, "expected {factor: <in (0, 1]>, below_seeds: <paired seeds at which the size was shown to "
                   "hold uncalibrated>, evidence: <the measurement>}")
    factor, below = data["factor"], data["below_seeds"]
    if not finite(factor) or not 0 < factor <= 1:
        raise fail(f"{where}.factor", f"must be a number in (0, 1], got {factor!r}")
    if isinstance(below, bool) or not isinstance(below, int) or below < 2:
        raise fail(f"{where}.below_seeds", f"must be an integer ≥ 2, got {below!r}")
    return SizeCalibration(float(factor), below, why_text(data["evidence"], f"{where}.evidence", "name the measurement"))


def _parse_one_premise(data: Any, at: str) -> Premise:
    if not isinstance(data, dict) or set(data) != set(PREMISE_KEYS):
        raise fail(at, "expected {quantity: <a diag/ key of the trainer, e.g. collapse/text>, above: <number>, "
                   "source: <the paper's words it is written from>, why: <the threshold's reason>}")
    if not isinstance(data["quantity"], str) or not re.fullmatch(r"[A-Za-z0-9_/.-]+", data["quantity"]):
        raise fail(f"{at}.quantity", f"a diag/ key of the trainer (e.g. collapse/text), got {data['quantity']!r}")
    if not finite(data["above"]):
        raise fail(f"{at}.above", f"must be a finite number, got {data['above']!r}")
    return Premise(data["quantity"], float(data["above"]), why_text(data["source"], f"{at}.source", "quote the source"),
                   why_text(data["why"], f"{at}.why", "say why the threshold has this value"))


def parse_premises(data: Any, where: str) -> dict[str, Premise]:
    """``premises: {<name>: {quantity, above, source, why}}``: the premises claims name."""
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise fail(where, "expected a map <name>: {quantity, above, source, why}")
    return {str(name): dataclasses.replace(_parse_one_premise(entry, f"{where}.{name}"), name=str(name))
            for name, entry in data.items()}


def claim_premise(data: Any, premises: dict[str, Premise], at: str) -> Premise:
    """A claim's ``premise:``: a name of ``premises:``, or {name: <it>, roles: [<the roles it tests>]}."""
    name, roles = (data, []) if isinstance(data, str) else (
        (data.get("name"), data.get("roles", [])) if isinstance(data, dict) and set(data) <= {"name", "roles"} else (None, []))
    if name not in premises:
        raise fail(at, f"expected the name of a premises: entry ({', '.join(sorted(premises)) or 'none declared'}), "
                   f"or {{name: <it>, roles: [...]}}; got {data!r}")
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise fail(f"{at}.roles", f"expected a list of the claim's metric roles, got {roles!r}")
    return dataclasses.replace(premises[name], roles=tuple(roles))


def _latest_date() -> datetime.date:
    """The latest date that is not in the future anywhere: tomorrow in UTC (UTC+14 is a day ahead of
    UTC), so an amendment written today in any time zone is accepted, one dated later is not."""
    return datetime.datetime.now(datetime.timezone.utc).date() + datetime.timedelta(days=1)


def parse_roles(section: dict[str, Any], where: str = "tables.claims.metrics") -> dict[str, list[MetricSpec]]:
    roles: dict[str, list[MetricSpec]] = {}
    for role, entries in (section or {}).items():
        entries = entries if isinstance(entries, list) else [entries]
        specs = []
        for i, e in enumerate(entries):
            if not isinstance(e, dict) or "benchmark" not in e or "metric" not in e:
                raise fail(f"{where}.{role}[{i}]", "needs {benchmark: <name>, metric: <key>}")
            unknown = set(e) - {"benchmark", "metric", "scale", "lower_is_better"}
            if unknown:
                raise fail(f"{where}.{role}[{i}]", f"unknown keys {sorted(unknown)}")
            scale, lower = e.get("scale", 1.0), e.get("lower_is_better", False)
            if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
                raise fail(f"{where}.{role}[{i}].scale", f"expected a number > 0, got {scale!r}")
            if not isinstance(lower, bool):
                raise fail(f"{where}.{role}[{i}].lower_is_better", f"expected true/false, got {lower!r}")
            specs.append(MetricSpec(str(e["benchmark"]), str(e["metric"]), float(scale), lower))
        roles[role] = specs
    return roles


def parse_margins(data: Any, where: str) -> dict[str, Margin]:
    if not isinstance(data, dict) or not data:
        raise fail(where, "expected a 'margins:' map: <role>: {delta: <number > 0>, why: <reason for its size>}")
    margins = {}
    for role, m in data.items():
        at = f"{where}.{role}"
        if not isinstance(m, dict) or set(m) != {"delta", "why"}:
            raise fail(at, "expected {delta: <number > 0>, why: <reason for its size>}")
        delta = m["delta"]
        if not finite(delta) or delta <= 0:  # .inf made every row of the role an "equivalent"
            raise fail(f"{at}.delta", f"must be a finite number > 0, got {delta!r}")
        if not isinstance(m["why"], str) or not m["why"].strip():
            raise fail(f"{at}.why", "say why the margin has this size")
        margins[str(role)] = Margin(float(delta), m["why"].strip())
    return margins


def parse_amendments(data: Any, ids: set[str], where: str) -> list[Amendment]:
    shape = ("{date: YYYY-MM-DD, change: <what changed>, why: <the reason>, decided_after: <the run seen "
             "before deciding, or 'no run'>} (claims: [<ids>] optional)")
    if data is None:
        return []
    if not isinstance(data, list):
        raise fail(where, f"expected a list of entries {shape}")
    amendments = []
    for i, entry in enumerate(data):
        at = f"{where}[{i}]"
        if not isinstance(entry, dict):
            raise fail(at, f"expected {shape}")
        missing = [k for k in AMENDMENT_KEYS if k not in entry]
        if missing:
            raise fail(at, f"missing keys {missing}; every amendment says {', '.join(AMENDMENT_KEYS)}")
        unknown = set(entry) - set(AMENDMENT_KEYS) - {"claims"}
        if unknown:
            raise fail(at, f"unknown keys {sorted(unknown)}; allowed: {', '.join(AMENDMENT_KEYS)}, claims")
        date = entry["date"]
        if isinstance(date, datetime.datetime):
            date = date.date()
        if isinstance(date, str):
            try:
                date = datetime.date.fromisoformat(date)
            except ValueError:
                date = None
        if not isinstance(date, datetime.date):
            raise fail(f"{at}.date", f"must be a date YYYY-MM-DD, got {entry['date']!r}")
        if date > _latest_date():  # a log of what was decided after a run was seen cannot be dated ahead
            raise fail(f"{at}.date", f"{date.isoformat()} is in the future; date an amendment the day it is made")
        for key, ask in (("change", "say what changed"), ("why", "say why it changed"),
                         ("decided_after", "name the run (and what it showed) seen before the change was "
                                           "decided, or 'no run'")):
            if not isinstance(entry[key], str) or not entry[key].strip():
                raise fail(f"{at}.{key}", f"{ask} (text), got {entry[key]!r}")
        named = entry.get("claims", [])
        if not isinstance(named, list) or not all(isinstance(c, str) for c in named):
            raise fail(f"{at}.claims", f"expected a list of claim ids, got {named!r}")
        strangers = [c for c in named if c not in ids]
        if strangers:
            raise fail(f"{at}.claims", f"{strangers} are no claims of this file; name a removed claim in "
                        "change: instead")
        amendments.append(Amendment(date.isoformat(), entry["change"].strip(), entry["why"].strip(),
                                    entry["decided_after"].strip(), tuple(named)))
    return amendments
