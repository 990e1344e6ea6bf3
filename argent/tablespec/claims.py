"""The claims file (config/claims.yaml) and the workflow config's role map, parsed and checked.

A claim compares run A with run B on metric *roles* (zeroshot, tie, pep_auc, ...). The claims file
declares, before any run: the claim's one **primary** role (its confirmatory row, on data the
models were trained for), or ``none`` for a claim whose rows are all exploratory, the expected
direction per role (better, worse, or **equal** for a "matches" claim), the published values, and
per role the equivalence margin δ with the reason for its size. Every change made after a run was
seen is an entry of its ``amendments:`` log (date, change, why, what had been seen). The workflow
config maps each role to the benchmarks that measure it in that config (``tables.claims.metrics``).

What a verdict needs besides its test, also declared there (argent/tablespec/declarations.py, measured by
argent/tables/protocol_card.py): the
``sensitivity:`` role of a role whose published score can tie (PEP's clamped score: its unclamped
ranking), the ``degenerate:`` rule under which a metric cannot rank on both arms, and a claim's
``premise:``, the measured quantity its mechanism needs, with the source's words.
How rows are tested: argent/tables/claims.py, docs/statistics.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from argent.config import WorkflowConfig, strict_yaml
from argent.tablespec.declarations import (
    Amendment,
    Degenerate,
    Margin,
    MetricSpec,
    Premise,
    Sensitivity,
    SizeCalibration,
    claim_premise,
    fail,
    finite,
    parse_amendments,
    parse_degenerate,
    parse_margins,
    parse_premises,
    parse_roles,
    parse_sensitivity,
    parse_size_calibration,
)
from argent.tablespec.section import DEFAULT_GROUP, claims_table, qualified

EXPECT = ("better", "worse", "equal", "none")   # none: the source states no direction (a control)
CLAIM_KEYS = {"id", "source", "claim", "a", "b", "primary", "metrics", "sizes", "note", "premise"}
METRIC_KEYS = {"expect", "published", "basis"}
TOP_KEYS = ("alpha", "size_calibration", "margins", "sensitivity", "degenerate", "premises", "amendments", "claims")
NO_PRIMARY = "none"                           # `primary: none`: every row of the claim is exploratory
CLAIM_ID = re.compile(r"[A-Za-z0-9._-]+")     # an id is a cell of the claims table: no '|', no space, no markup


@dataclass(frozen=True)
class ClaimMetric:
    role: str
    published: tuple[float, float] | None     # (A, B) as printed in the source
    expect: str                               # better | worse | equal | none: A relative to B
    basis: str = ""                           # set when the direction comes from the source's text
    sensitivity_of: str = ""                  # set on a sensitivity row: the declared role it re-ranks

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
    primary: str | None                       # the role of the claim's confirmatory row; None: `primary: none`
    note: str = ""
    sizes: tuple[str, ...] = ()               # only these sizes (the source's row); () = every size
    premise: Premise | None = None            # the measured quantity its mechanism needs


@dataclass
class ClaimsSpec:
    claims: list[Claim]
    roles: dict[str, list[MetricSpec]] = field(default_factory=dict)
    margins: dict[str, Margin] = field(default_factory=dict)
    alpha: float = 0.05
    amendments: list[Amendment] = field(default_factory=list)
    sensitivity: dict[str, Sensitivity] = field(default_factory=dict)   # declared role -> its sensitivity
    degenerate: Degenerate | None = None
    premises: dict[str, Premise] = field(default_factory=dict)          # name -> premise, as declared
    size_calibration: SizeCalibration | None = None                     # Holm's levels scaled at few seeds


def _parse_metric(claim_id: str, role: str, entry: Any, where: str) -> ClaimMetric:
    at = f"{where}: claim {claim_id}, metrics.{role}"
    if not isinstance(entry, dict):
        raise fail(at, "expected {expect: better|worse|equal, published: [A, B]} (published optional)")
    unknown = set(entry) - METRIC_KEYS
    if unknown:
        raise fail(at, f"unknown keys {sorted(unknown)}; allowed: {sorted(METRIC_KEYS)}")
    expect = entry.get("expect")
    if expect not in EXPECT:
        raise fail(at, f"expect must be one of {EXPECT} (A relative to B as the source states it), got {expect!r}")
    published = entry.get("published")
    if published is not None:
        if not (isinstance(published, list) and len(published) == 2 and all(finite(v) for v in published)):
            raise fail(at, f"published must be [A, B] finite numbers, got {published!r}")
        published = (float(published[0]), float(published[1]))
    basis = entry.get("basis", "")
    if not isinstance(basis, str):
        raise fail(at, f"basis must be text (where the source states the direction), got {basis!r}")
    return ClaimMetric(role, published, expect, basis)


def with_sensitivity_roles(metrics: tuple[ClaimMetric, ...], sensitivity: dict[str, Sensitivity]) -> tuple[ClaimMetric, ...]:
    """A claim's roles plus, after each declared role that has one, its sensitivity role (same
    direction, no published numbers: the source prints the declared score only)."""
    out: list[ClaimMetric] = []
    named = {m.role for m in metrics}
    for m in metrics:
        out.append(m)
        extra = sensitivity.get(m.role)
        if extra is not None and extra.role not in named:
            out.append(ClaimMetric(extra.role, None, m.expect, m.basis, sensitivity_of=m.role))
    return tuple(out)


def load_claims(path: Path) -> ClaimsSpec:
    """Parse and check config/claims.yaml (its header documents the format); roles come later."""
    data = _read_claims_file(Path(path))
    alpha = data.get("alpha", 0.05)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise fail(f"{path}: alpha", f"must be a number in (0, 1), got {alpha!r}")
    margins = parse_margins(data.get("margins"), f"{path}: margins")
    sensitivity = parse_sensitivity(data.get("sensitivity"), margins, f"{path}: sensitivity")
    degenerate = parse_degenerate(data.get("degenerate"), f"{path}: degenerate")
    premises = parse_premises(data.get("premises"), f"{path}: premises")
    calibration = parse_size_calibration(data.get("size_calibration"), f"{path}: size_calibration")
    seen: set[str] = set()
    claims = [_parse_claim(c, f"{path}: claims[{i}]", str(path), seen, (margins, sensitivity, premises))
              for i, c in enumerate(data["claims"])]
    amendments = parse_amendments(data.get("amendments"), seen, f"{path}: amendments")
    return ClaimsSpec(claims, {}, margins, float(alpha), amendments, sensitivity, degenerate, premises, calibration)


def _read_claims_file(path: Path) -> dict[str, Any]:
    """The claims file as a mapping with a ``claims:`` list and no unknown top-level key."""
    try:
        data = strict_yaml(path.read_text(), path)  # a repeated key is an error naming file and line
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: claims file not found; set tables.claims.file in the workflow config") from None
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise fail(str(path), f"not a YAML claims file ({' '.join(str(err).split())}); fix it, or point "
                    "tables.claims.file at config/claims.yaml") from None
    except RecursionError:  # PyYAML composes nested collections recursively: 50,000 '[' overflow the stack
        raise fail(str(path), "not a claims file: nested deeper than the YAML parser can follow (a run of "
                    "unclosed '[' or '{'?); fix it, or point tables.claims.file at config/claims.yaml") from None
    if not isinstance(data, dict) or not isinstance(data.get("claims"), list):
        raise fail(str(path), "expected a top-level 'claims:' list")
    unknown = set(data) - set(TOP_KEYS)
    if unknown:
        raise fail(str(path), f"unknown top-level keys {sorted(unknown)}; allowed: {', '.join(TOP_KEYS)}")
    return data


def _check_claim_keys(c: Any, at: str) -> None:
    """A claim is a map with its required keys as text, an id that can be a table cell, no unknown key."""
    if not isinstance(c, dict):
        raise fail(at, "expected a map")
    missing = [k for k in ("id", "source", "a", "b", "primary", "metrics") if k not in c]
    if missing:
        raise fail(at, f"missing keys {missing}")
    for key, what in (("id", "a short unique name"), ("a", "a run, <group>/<variant>"),
                      ("b", "a run, <group>/<variant>"), ("primary", f"one of its metric roles, or '{NO_PRIMARY}'")):
        value = c[key]
        # primary: null falls through to "is not one of its metrics" below, which names the way out
        if isinstance(value, (list, dict)) or (key != "primary" and (not isinstance(value, str) or not value.strip())):
            raise fail(f"{at}.{key}", f"expected text ({what}), got {value!r}")
    if not CLAIM_ID.fullmatch(c["id"]):
        raise fail(f"{at}.id", f"{c['id']!r}: use letters, digits, '-', '_' and '.' only (the id "
                    "is a cell of the claims table and a column value of claims.csv)")
    extra = set(c) - CLAIM_KEYS
    if extra:
        raise fail(f"{at} ({c['id']})", f"unknown keys {sorted(extra)}; allowed: {sorted(CLAIM_KEYS)}")


def _parse_claim(c: Any, at: str, path: str, seen: set[str],
                 declared: tuple[dict[str, Margin], dict[str, Sensitivity], dict[str, Premise]]) -> Claim:
    """One entry of ``claims:``, its id new (``seen``: the ids before it, this one added), checked against the
    file's ``declared`` margins, sensitivity roles and premises."""
    margins, sensitivity, premises = declared
    _check_claim_keys(c, at)
    where = f"{path}: claim {c['id']}"
    if qualified(c["a"], DEFAULT_GROUP) == qualified(c["b"], DEFAULT_GROUP):
        raise fail(where, f"a: {c['a']!r} and b: {c['b']!r} are the same run; a claim "
                    "compares two different runs (A − B would be 0 on every seed, an 'equivalent' at p = 0)")
    if c["id"] in seen:
        raise fail(at, f"duplicate id {c['id']!r}")
    seen.add(c["id"])
    if not isinstance(c["metrics"], dict) or not c["metrics"]:
        raise fail(where, "metrics: expected a map of role -> {expect, published}")
    metrics = tuple(_parse_metric(c["id"], role, e, path) for role, e in c["metrics"].items())
    if c["primary"] in {s.role for s in sensitivity.values()}:
        raise fail(where, f"primary: {c['primary']!r} is a sensitivity role: its rows are "
                    "exploratory checks of another role, never a confirmatory row")
    metrics = with_sensitivity_roles(metrics, sensitivity)
    premise = claim_premise(c["premise"], premises, f"{where}, premise") if "premise" in c else None
    if premise is not None and set(premise.roles) - {m.role for m in metrics}:
        raise fail(f"{where}, premise.roles", f"{sorted(set(premise.roles) - {m.role for m in metrics})} "
                   "are no roles of this claim (its metrics and their sensitivity roles)")
    primary = None if c["primary"] == NO_PRIMARY else str(c["primary"])
    if c["primary"] != NO_PRIMARY and c["primary"] not in c["metrics"]:
        raise fail(where, f"primary: {c['primary']!r} is not one of its metrics "
                    f"{sorted(c['metrics'])}; name the role of its confirmatory row, or '{NO_PRIMARY}' "
                    "for a claim whose rows are all exploratory")
    if primary is None and not str(c.get("note", "")).strip():
        raise fail(where, f"primary: {NO_PRIMARY} (every row exploratory): say in "
                    "note: why the claim has no confirmatory row")
    no_margin = [m.role for m in metrics if m.role not in margins]
    if no_margin:
        raise fail(where, f"roles {no_margin} have no margin; add them under margins:")
    sizes = c.get("sizes", [])
    if not isinstance(sizes, list) or not all(isinstance(s, str) for s in sizes):
        raise fail(where, f"sizes: expected a list of size names, got {sizes!r}")
    return Claim(str(c["id"]), str(c["source"]), str(c.get("claim", "")), str(c["a"]), str(c["b"]),
                 metrics, primary, str(c.get("note", "")), tuple(sizes), premise)


def expected_sign(cm: ClaimMetric, spec: MetricSpec, claim_id: str) -> int:
    """The sign of A − B in raw metric units that a directional claim predicts (TIE: lower is better).

    Checks that the published numbers agree with ``expect`` under the metric's direction, unless
    the direction comes from the source's text (``basis``). 0: no direction (``equal``, ``none``)."""
    if cm.expect in ("equal", "none"):
        return 0
    better_sign = -1 if spec.lower_is_better else 1
    sign = better_sign if cm.expect == "better" else -better_sign
    diff = cm.published_diff
    if not cm.basis and diff is not None and diff != 0 and (diff > 0) != (sign > 0):
        raise ValueError(f"claim {claim_id}, metric {cm.role}: published A − B = {diff:+g} contradicts "
                         f"expect: {cm.expect} for {spec.key} ({'lower' if spec.lower_is_better else 'higher'} is "
                         "better); fix config/claims.yaml, the metric's lower_is_better, or give the basis: in the "
                         "source's text for a direction its table does not show")
    return sign


def kind_of_test(cm: ClaimMetric, margin: Margin) -> str:
    """``equivalence`` for a "matches" claim and for one whose published |A − B| is below the
    margin without a textual basis for a direction; otherwise ``difference`` (``none``: a two-sided
    difference with no side expected, a control the source states nothing on)."""
    if cm.expect == "equal":
        return "equivalence"
    if cm.expect == "none":
        return "difference"
    diff = cm.published_diff
    if not cm.basis and diff is not None and abs(diff) < margin.delta:
        return "equivalence"
    return "difference"


def check_claims(workflow: WorkflowConfig, base_dir: Path) -> ClaimsSpec | None:
    """The claims file ``tables.claims.file`` and its role map ``tables.claims.metrics`` parsed now,
    as the tables job will (a broken claims file stops ``snakemake -n`` and ``argent check``, not the
    tables job after every training). None when the config has no ``tables:`` section."""
    if not workflow.raw.get("tables"):
        return None
    section = claims_table(workflow.raw)  # tables.claims alone, typed: the rest of tables: may be absent here
    path = section.path(base_dir)
    if not path.is_file():
        raise fail(f"tables.claims.file: {path}", "claims file not found; point it at the claims file "
                    "(config/claims.yaml)")
    spec = load_claims(path)
    spec.roles = parse_roles(section.roles())
    return spec
