"""The claims file (config/claims.yaml) and the workflow config's role map, parsed and checked.

A claim compares run A with run B on metric *roles* (zeroshot, tie, pep_auc, ...). The claims file
declares, before any run: the claim's one **primary** role (its confirmatory row, on data the
models were trained for), or ``none`` for a claim whose rows are all exploratory, the expected
direction per role (better, worse, or **equal** for a "matches" claim), the published values, and
per role the equivalence margin δ with the reason for its size. Every change made after a run was
seen is an entry of its ``amendments:`` log (date, change, why, what had been seen). The workflow
config maps each role to the benchmarks that measure it in that config (``tables.claims.metrics``).

What a verdict needs besides its test, also declared there (argent/tables/protocol_card.py): the
``sensitivity:`` role of a role whose published score can tie (PEP's clamped score: its unclamped
ranking), the ``degenerate:`` rule under which a metric cannot rank on both arms, and a claim's
``premise:``, the measured quantity its mechanism needs, with the source's words.
How rows are tested: argent/tables/claims.py, docs/statistics.md.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from argent.config import strict_yaml
from argent.tables.claims_declarations import (
    Degenerate,
    Premise,
    Sensitivity,
    claim_premise,
    fail,
    finite,
    parse_degenerate,
    parse_premises,
    parse_sensitivity,
)
from argent.tables.config import claims_table

EXPECT = ("better", "worse", "equal", "none")   # none: the source states no direction (a control)
CLAIM_KEYS = {"id", "source", "claim", "a", "b", "primary", "metrics", "sizes", "note", "premise"}
METRIC_KEYS = {"expect", "published", "basis"}
TOP_KEYS = ("alpha", "margins", "sensitivity", "degenerate", "premises", "amendments", "claims")
NO_PRIMARY = "none"                           # `primary: none`: every row of the claim is exploratory
AMENDMENT_KEYS = ("date", "change", "why", "decided_after")   # required; `claims:` is optional
CLAIM_ID = re.compile(r"[A-Za-z0-9._-]+")     # an id is a cell of the claims table: no '|', no space, no markup


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


@dataclass(frozen=True)
class Amendment:
    """One change to the claims file made after a run was seen: the honest form of a
    pre-registration amendment says when, what changed, why, and what had been seen."""

    date: str                                 # ISO date
    change: str
    why: str
    decided_after: str                        # the run (and what it showed) the change was decided after
    claims: tuple[str, ...] = ()              # the ids of the claims it changes (optional)


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


def _latest_date() -> datetime.date:
    """The latest date that is not in the future anywhere: tomorrow in UTC (UTC+14 is a day ahead of
    UTC), so an amendment written today in any time zone is accepted, one dated later is not."""
    return datetime.datetime.now(datetime.timezone.utc).date() + datetime.timedelta(days=1)


DEFAULT_GROUP = "main"  # a bare variant name in a claim's a/b means this group (argent/tables/run.py)


def _run_name(value: Any) -> str:
    """A claim's ``a``/``b`` as ``<group>/<variant>`` (a bare variant name is in group main)."""
    return value if "/" in value else f"{DEFAULT_GROUP}/{value}"


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


def _parse_margins(data: Any, where: str) -> dict[str, Margin]:
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


def _parse_amendments(data: Any, ids: set[str], where: str) -> list[Amendment]:
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


def load_claims(path: Path) -> ClaimsSpec:
    """Parse and check config/claims.yaml (its header documents the format); roles come later."""
    try:
        data = strict_yaml(Path(path).read_text(), path)  # a repeated key is an error naming file and line
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
    alpha = data.get("alpha", 0.05)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 1:
        raise fail(f"{path}: alpha", f"must be a number in (0, 1), got {alpha!r}")
    margins = _parse_margins(data.get("margins"), f"{path}: margins")
    sensitivity = parse_sensitivity(data.get("sensitivity"), margins, f"{path}: sensitivity")
    degenerate = parse_degenerate(data.get("degenerate"), f"{path}: degenerate")
    premises = parse_premises(data.get("premises"), f"{path}: premises")
    claims, seen = [], set()
    for i, c in enumerate(data["claims"]):
        if not isinstance(c, dict):
            raise fail(f"{path}: claims[{i}]", "expected a map")
        missing = [k for k in ("id", "source", "a", "b", "primary", "metrics") if k not in c]
        if missing:
            raise fail(f"{path}: claims[{i}]", f"missing keys {missing}")
        for key, what in (("id", "a short unique name"), ("a", "a run, <group>/<variant>"),
                          ("b", "a run, <group>/<variant>"), ("primary", f"one of its metric roles, or '{NO_PRIMARY}'")):
            value = c[key]
            # primary: null falls through to "is not one of its metrics" below, which names the way out
            if isinstance(value, (list, dict)) or (key != "primary" and (not isinstance(value, str) or not value.strip())):
                raise fail(f"{path}: claims[{i}].{key}", f"expected text ({what}), got {value!r}")
        if not CLAIM_ID.fullmatch(c["id"]):
            raise fail(f"{path}: claims[{i}].id", f"{c['id']!r}: use letters, digits, '-', '_' and '.' only (the id "
                        "is a cell of the claims table and a column value of claims.csv)")
        extra = set(c) - CLAIM_KEYS
        if extra:
            raise fail(f"{path}: claims[{i}] ({c['id']})", f"unknown keys {sorted(extra)}; allowed: {sorted(CLAIM_KEYS)}")
        if _run_name(c["a"]) == _run_name(c["b"]):
            raise fail(f"{path}: claim {c['id']}", f"a: {c['a']!r} and b: {c['b']!r} are the same run; a claim "
                        "compares two different runs (A − B would be 0 on every seed, an 'equivalent' at p = 0)")
        if c["id"] in seen:
            raise fail(f"{path}: claims[{i}]", f"duplicate id {c['id']!r}")
        seen.add(c["id"])
        if not isinstance(c["metrics"], dict) or not c["metrics"]:
            raise fail(f"{path}: claim {c['id']}", "metrics: expected a map of role -> {expect, published}")
        metrics = tuple(_parse_metric(c["id"], role, e, str(path)) for role, e in c["metrics"].items())
        if c["primary"] in {s.role for s in sensitivity.values()}:
            raise fail(f"{path}: claim {c['id']}", f"primary: {c['primary']!r} is a sensitivity role: its rows are "
                        "exploratory checks of another role, never a confirmatory row")
        metrics = with_sensitivity_roles(metrics, sensitivity)
        premise = claim_premise(c["premise"], premises, f"{path}: claim {c['id']}, premise") if "premise" in c else None
        if premise is not None and set(premise.roles) - {m.role for m in metrics}:
            raise fail(f"{path}: claim {c['id']}, premise.roles", f"{sorted(set(premise.roles) - {m.role for m in metrics})} "
                       "are no roles of this claim (its metrics and their sensitivity roles)")
        primary = None if c["primary"] == NO_PRIMARY else str(c["primary"])
        if c["primary"] != NO_PRIMARY and c["primary"] not in c["metrics"]:
            raise fail(f"{path}: claim {c['id']}", f"primary: {c['primary']!r} is not one of its metrics "
                        f"{sorted(c['metrics'])}; name the role of its confirmatory row, or '{NO_PRIMARY}' "
                        "for a claim whose rows are all exploratory")
        if primary is None and not str(c.get("note", "")).strip():
            raise fail(f"{path}: claim {c['id']}", f"primary: {NO_PRIMARY} (every row exploratory): say in "
                        "note: why the claim has no confirmatory row")
        no_margin = [m.role for m in metrics if m.role not in margins]
        if no_margin:
            raise fail(f"{path}: claim {c['id']}", f"roles {no_margin} have no margin; add them under margins:")
        sizes = c.get("sizes", [])
        if not isinstance(sizes, list) or not all(isinstance(s, str) for s in sizes):
            raise fail(f"{path}: claim {c['id']}", f"sizes: expected a list of size names, got {sizes!r}")
        claims.append(Claim(str(c["id"]), str(c["source"]), str(c.get("claim", "")), str(c["a"]), str(c["b"]),
                            metrics, primary, str(c.get("note", "")), tuple(sizes), premise))
    amendments = _parse_amendments(data.get("amendments"), seen, f"{path}: amendments")
    return ClaimsSpec(claims, {}, margins, float(alpha), amendments, sensitivity, degenerate, premises)


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


def check_claims(cfg: dict[str, Any], base_dir: Path) -> ClaimsSpec | None:
    """The claims file ``tables.claims.file`` and its role map ``tables.claims.metrics`` parsed now,
    as the tables job will (a broken claims file stops ``snakemake -n`` and ``argent check``, not the
    tables job after every training). None when the config has no ``tables:`` section."""
    if not cfg.get("tables"):
        return None
    section = claims_table(cfg)
    path = section.path(base_dir)
    if not path.is_file():
        raise fail(f"tables.claims.file: {path}", "claims file not found; point it at the claims file "
                    "(config/claims.yaml)")
    spec = load_claims(path)
    spec.roles = parse_roles(section.roles())
    return spec
