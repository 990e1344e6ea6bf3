"""What a claims row needs besides its test, as declared in the claims file (docs/statistics.md,
"What a verdict needs"): a role's **sensitivity** role (the same comparison ranked another way), the
**degenerate** rule (when a metric cannot rank on an arm), and a claim's **premise** (the measured
quantity its mechanism needs, written from the source's words). Parsed here; measured and applied by
argent/tables/protocol_card.py. Torch-free.
"""

from __future__ import annotations

import dataclasses
import math
import re
from dataclasses import dataclass
from typing import Any

from argent.config import ConfigError

PREMISE_KEYS = ("quantity", "above", "source", "why")   # required; `roles:` is optional


def fail(where: str, what: str) -> ConfigError:
    return ConfigError(f"{where}: {what}")


def finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)



@dataclass(frozen=True)
class Sensitivity:
    """The secondary role every claim on ``of`` also gets, exploratory: the same comparison ranked
    another way (PEP: the unclamped angle instead of the clamped score), with the reason."""

    of: str
    role: str
    why: str


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
