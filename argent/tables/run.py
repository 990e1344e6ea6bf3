"""``run(options)``: every table and figure of one results folder, as its phases.

Writes under ``<results>/tables``: main, ablations, claims, mechanism, probe (when the probe ran),
pretrained (the pretrained models' table, when some were evaluated: ``argent evaluate --pretrained``),
each as ``.md``, ``.csv`` and ``.html`` (the page the Snakemake report shows), plus whatever the writers in
``EXTRA_WRITERS`` produce; figures under ``<results>/figures``. A table that would hold no run or no
tested claim is left out with one printed line (``argent.plan.table_choice.choose_tables``).

``run`` reads top to bottom as its phases: ``read_inputs`` (the plan, every evaluation of a run it lists,
checked, the rows each table names, the tables it writes), then each table from them (``paper_tables``,
``claims_table``, ``mechanism_table``, ``extra_tables``), and only then ``write_tables``, ``draw_figures``
and ``publish``: a damaged input fails the job with the tables of the last good run still in place.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

from argent.config import WorkflowConfig
from argent.io import atomic_output, atomic_write_text
from argent.plan.groups import Plan, build_plan
from argent.plan.table_choice import choose_tables
from argent.runs import Results, RunFolder, hardware_classes, read_job_records, run_dir
from argent.tables.claims import claims_rows, price_power
from argent.tables.claims_report import claims_markdown
from argent.tables.collect import (
    check_run_identities,
    collect,
    collect_diagnostics,
    collect_skips,
    configured_seeds,
    configured_variants,
    group_sizes,
    listed_runs,
    skips_footnote,
)
from argent.tables.cost import run_cpu_seconds, write_cost_tables
from argent.tables.domains import domain_check, training_domain
from argent.tables.figures import copy_run_figures, training_curves
from argent.tables.html import write_html
from argent.tables.items import collect_items
from argent.tables.mechanism import mechanism_markdown, mechanism_rows
from argent.tables.paper import TableInput, ablation_table, hardware_footnote, main_table
from argent.tables.pretrained import TABLE as PRETRAINED_TABLE
from argent.tables.pretrained import pretrained_table
from argent.tables.probe import probe_table
from argent.tables.readers import read_run_provenance
from argent.tablespec.claims import ClaimsSpec, load_claims
from argent.tablespec.declarations import parse_roles
from argent.tablespec.outputs import TableChoice, table_paths
from argent.tablespec.section import DEFAULT_GROUP, Row, RowGroup, TablesSection, qualified
from argent.tablespec.section import claims_table as claims_section
from argent.tracking import log_tables_run


@dataclass
class TablesOptions:
    workflow: WorkflowConfig               # the merged workflow config (tables, runs, groups, tune sections)
    results: Path = Path("results")
    out: Path | None = None                # default <results>/tables
    figures: Path | None = None            # default <results>/figures/runs
    curves: Path | None = None             # default <results>/figures/training_curves.png
    claims_file: Path | None = None        # default tables.claims.file of the config
    base_dir: Path = Path(".")             # relative config paths (the workflow's root)
    written: list[Path] = field(default_factory=list)

    @property
    def tables_dir(self) -> Path:
        return self.out or Results(self.results).tables

    @property
    def section(self) -> TablesSection:
        return self.workflow.section("tables")


@dataclass
class Table:
    """One table: its markdown (the ``.md``, and the ``.html`` made from it) and its records (the ``.csv``)."""

    markdown: str
    records: list[dict[str, Any]]

    def note(self, text: str) -> None:
        """A line under the table (a footnote); nothing for none."""
        if text:
            self.markdown = f"{self.markdown}\n{text}"


@dataclass
class Inputs:
    """What every table reads, read and checked before any file is written."""

    plan: Plan
    long: pl.DataFrame                     # every evaluation of a run the groups list, ``<group>/<variant>``
    main: list[Row]                        # the main table's rows whose group runs
    left_out: list[str]                    # the main table's rows whose group this config switches off
    ablations: list[RowGroup]
    claims: ClaimsSpec                     # its runs qualified as ``<group>/<variant>``
    choice: TableChoice
    seeds: dict[str, list[int]] = field(default_factory=dict)  # <group>/<variant> -> the seeds the config trains
    diagnostics: pl.DataFrame | None = None  # the trainer's diagnostics at the end of each listed run

    @property
    def variants(self) -> list[str]:
        """Every ``<group>/<variant>`` the groups list or a table names, in order."""
        named = [r.variant for r in self.main] + self.ablation_variants()
        named += [v for c in self.claims.claims for v in (c.a, c.b)]
        return list(dict.fromkeys(configured_variants(self.plan) + named))

    def ablation_variants(self) -> list[str]:
        return [r.variant for g in self.ablations for r in g.rows]

    def sizes_of(self, names: list[str]) -> list[str]:
        """The sizes the groups of ``names`` train that have an evaluation."""
        evaluated = set(self.long["size"].to_list())
        return [s for s in group_sizes(self.plan, [n.partition("/")[0] for n in names]) if s in evaluated]


# Further table writers, called last with the options (e.g. the cost table from Snakemake's
# job records): each takes TablesOptions and writes its own files under options.tables_dir.
def write_cost(opts: TablesOptions) -> None:
    """cost.{md,csv} from the job records Snakemake's `benchmark:` directives leave in <results>/benchmarks."""
    records = Results(opts.results).job_records
    if not records.is_dir():
        print(f"argent tables: no cost table: {records} does not exist (it is written by the workflow's jobs)")
        return
    opts.written += list(write_cost_tables(records, opts.tables_dir))


EXTRA_WRITERS: list[Callable[[TablesOptions], None]] = [write_cost]


def run(opts: TablesOptions) -> list[Path]:
    """Build every table; returns the files written."""
    opts.tables_dir.mkdir(parents=True, exist_ok=True)
    inputs = read_inputs(opts)
    tables = paper_tables(opts, inputs)
    inputs.diagnostics = listed_runs(collect_diagnostics(Results(opts.results).runs), inputs.plan)
    if "claims" in inputs.choice.written:
        tables["claims"] = claims_table(opts, inputs)
    tables["mechanism"] = mechanism_table(inputs)
    extra_tables(opts, inputs, tables)
    write_tables(opts, tables, inputs.choice)
    figures = draw_figures(opts)
    publish(opts, figures)
    return opts.written


# ---- the phases ------------------------------------------------------------------------------------------------


def read_inputs(opts: TablesOptions) -> Inputs:
    """The plan, every evaluation of a run it lists (a run of another identity than the plan's stops the tables,
    named), the rows each table names and the tables this config writes (one line for each it leaves out)."""
    layout = Results(opts.results)
    plan = build_plan(opts.workflow, opts.base_dir)
    long = listed_runs(collect(layout.eval), plan)
    # A row is the run the plan trains in its folder: a summary or evaluation of another identity (a
    # run trained there by hand with another config, variant or --name) stops the tables, named.
    check_run_identities(plan, opts.results, opts.base_dir)
    if long.is_empty():
        raise ValueError(f"no evaluation JSON of a run the config's groups list under {layout.eval}; "
                         f"run the evaluate jobs first")
    section = opts.section
    main = [Row(v, qualified(v, section.main.group)) for v in section.main.variants]
    off = {name for name, _ in plan.left_out}  # a row of a group the config switches off is left out, and said
    left_out = [r.variant for r in main if r.variant.partition("/")[0] in off]
    ablations = [replace(g, rows=[replace(r, variant=qualified(r.variant, section.ablations.group)) for r in g.rows])
                 for g in section.ablations.groups]
    claims = read_claims(opts)
    choice = choose_tables(section, plan, claims, probe=any(layout.probe.glob("*/*/seed*.json")))
    for line in choice.lines():
        print(line)
    inputs = Inputs(plan, long, [r for r in main if r.variant not in left_out], left_out, ablations, claims, choice)
    inputs.seeds = {v: configured_seeds(plan, v) for v in inputs.variants}
    return inputs


def read_claims(opts: TablesOptions) -> ClaimsSpec:
    """The claims file (``--claims``, else ``tables.claims.file``) with the config's metric roles, each claim's
    runs qualified (a bare variant name: the main group)."""
    section = claims_section(opts.workflow.raw)  # the claims part alone, typed (as the DAG's check reads it)
    spec = load_claims(opts.claims_file or section.path(opts.base_dir))
    spec.roles = parse_roles(section.roles())
    return replace(spec, claims=[replace(c, a=qualified(c.a, DEFAULT_GROUP), b=qualified(c.b, DEFAULT_GROUP))
                                 for c in spec.claims])


def paper_tables(opts: TablesOptions, inputs: Inputs) -> dict[str, Table]:
    """The main table and, when written, the ablation table, each with its footnotes: the samples skipped
    (nonzero counts, named under both) and the hardware classes, when its runs mix machines."""
    columns = opts.section
    main_data = TableInput.build(inputs.long, inputs.sizes_of([r.variant for r in inputs.main]), inputs.seeds)
    tables = {"main": Table(*main_table(main_data, inputs.main, columns.main.columns, inputs.left_out))}
    if "ablations" in inputs.choice.written:
        abl_data = TableInput.build(inputs.long, inputs.sizes_of(inputs.ablation_variants()), inputs.seeds)
        tables["ablations"] = Table(*ablation_table(abl_data, inputs.ablations, columns.ablations.columns))
    footnote = skips_footnote(collect_skips(opts.results))
    for table in tables.values():
        table.note(footnote)
    listed = {"main": [r.variant for r in inputs.main], "ablations": inputs.ablation_variants()}
    for name, table in tables.items():
        table.note(hardware_note(opts.results, inputs.plan, listed[name]))
    return tables


def claims_table(opts: TablesOptions, inputs: Inputs) -> Table:
    """Each claim's rows, tested (argent/tables/claims.py), priced in seeds and CPU, in words."""
    layout, plan, raw = Results(opts.results), inputs.plan, opts.workflow.raw
    protocols = {name: entry.get("protocol") for name, entry in (raw.get("benchmarks") or {}).items()
                 if isinstance(entry, dict)}
    rows = claims_rows(inputs.claims, inputs.long, inputs.sizes_of(inputs.variants), inputs.seeds, plan,
                       collect_items(layout.eval), set(configured_variants(plan)),
                       domain_check(opts.workflow, plan, opts.base_dir), inputs.diagnostics, protocols)
    price_power(rows, plan, run_cpu_seconds(read_job_records(layout.job_records)))
    return Table(claims_markdown(rows, inputs.claims, setting_text(plan, opts.base_dir)), rows)


def mechanism_table(inputs: Inputs) -> Table:
    """The mechanism of the runs this config trains: a group switched off would only add "not run" rows."""
    active = [v for v in inputs.variants if v.partition("/")[0] in inputs.plan.configs]
    rows = mechanism_rows(inputs.diagnostics, active, inputs.sizes_of(inputs.variants), inputs.seeds)
    return Table(mechanism_markdown(rows), rows)


def extra_tables(opts: TablesOptions, inputs: Inputs, tables: dict[str, Table]) -> None:
    """The probe's table (when it ran) and the pretrained models' (when some were evaluated: also rows of the
    main table, below ours, marked as not trained here)."""
    layout = Results(opts.results)
    if "probe" in inputs.choice.written:
        tables["probe"] = Table(*probe_table(layout.probe))
    pretrained = pretrained_table(layout.eval, opts.section.main.columns)
    if pretrained is not None:
        tables[PRETRAINED_TABLE] = Table(*pretrained)
        tables["main"].note(f"#{pretrained[0]}")


def write_tables(opts: TablesOptions, tables: dict[str, Table], choice: TableChoice) -> None:
    """Each table's ``.md`` and ``.csv``; a left-out table's files of an earlier run are removed (they would
    read as this run's)."""
    for name, table in tables.items():
        atomic_write_text(opts.tables_dir / f"{name}.md", table.markdown)
        with atomic_output(opts.tables_dir / f"{name}.csv") as tmp:
            pl.DataFrame(table.records, infer_schema_length=None).write_csv(tmp)
        opts.written += [opts.tables_dir / f"{name}.md", opts.tables_dir / f"{name}.csv"]
    for name in choice.left_out:
        for path in table_paths(opts.tables_dir, name).values():
            path.unlink(missing_ok=True)


def draw_figures(opts: TablesOptions) -> Path:
    """The training curves and the per-run figures the evaluations drew; returns the latter's folder."""
    layout = Results(opts.results)
    training_curves(layout.runs, opts.curves or layout.training_curves)
    figures = opts.figures or layout.figures / "runs"
    if not copy_run_figures(layout.eval, figures):
        print("argent tables: no per-run figures: no evaluation wrote one (the analysis protocol's "
              "benchmark, e.g. hs_analysis, is not in evaluate.benchmarks)")
    return figures


def publish(opts: TablesOptions, figures: Path) -> None:
    """The further writers (the cost table), every table's HTML page, and one MLflow run holding this
    invocation's tables and figures (best effort, never raises)."""
    for writer in EXTRA_WRITERS:
        writer(opts)
    opts.written += [write_html(path) for path in list(opts.written) if path.suffix == ".md"]
    curves = opts.curves or Results(opts.results).training_curves
    log_tables_run(opts.tables_dir, figures, opts.workflow.raw, opts.results, sorted(curves.parent.glob("*.png")))


# ---- the footnotes -----------------------------------------------------------------------------------------------


def setting_text(plan: Plan, base_dir: Path) -> str:
    """One sentence per distinct training setting of the active groups: what a verdict is about."""
    settings: dict[str, list[str]] = {}
    for group in plan.active():
        gcfg = plan.configs[group.name]  # as written: a key left unset reads "?", not its default
        train, data = gcfg.get("train") or {}, gcfg.get("data") or {}
        text = (f"size {', '.join(group.sizes)}, {train.get('steps', '?')} steps of batch {train.get('batch_size', '?')}, "
                f"trained on {training_domain(plan.workflow(group.name), base_dir)} data "
                f"({data.get('train_shards', '?')})")
        settings.setdefault(text, []).append(group.name)
    return " ".join(f"Groups {', '.join(groups)}: {text}." for text, groups in settings.items())


def hardware_note(results: Path, plan: Plan, variants: list[str]) -> str:
    """The footnote naming the hardware classes of the finished runs of ``variants`` (when mixed)."""
    classes: dict[str, set[str]] = {}
    for key, home in plan.home.items():
        folder = run_dir(results, home.group, home.variant, home.size, home.seed)
        if key.qualified in variants and RunFolder(folder).summary.is_file():
            for name in hardware_classes(read_run_provenance(folder)):  # checked: a list or a number is named
                classes.setdefault(name, set()).add(str(home))
    return hardware_footnote({name: sorted(runs) for name, runs in classes.items()})
