"""``run(options)``: every table and figure of one results folder.

Writes under ``<results>/tables``: main, ablations, claims, mechanism, probe (when the probe ran),
pretrained (the pretrained models' table, when some were evaluated: ``argent evaluate --pretrained``),
each as ``.md``, ``.csv`` and ``.html`` (the page the Snakemake report shows), plus whatever the writers in
``EXTRA_WRITERS`` produce; figures under ``<results>/figures``. A table that would hold no run or no
tested claim is left out with one printed line (``argent.plan.table_choice.choose_tables``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import polars as pl

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
from argent.tablespec.outputs import table_paths
from argent.tablespec.section import claims_table, qualified, tables_section
from argent.tracking import log_tables_run


@dataclass
class TablesOptions:
    config: dict[str, Any]                 # the merged workflow config (tables, runs, tune sections)
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


def write_csv(records: list[dict[str, Any]], path: Path) -> None:
    with atomic_output(path) as tmp:
        pl.DataFrame(records, infer_schema_length=None).write_csv(tmp)


def _write(opts: TablesOptions, name: str, md: str, records: list[dict[str, Any]]) -> None:
    atomic_write_text(opts.tables_dir / f"{name}.md", md)
    write_csv(records, opts.tables_dir / f"{name}.csv")
    opts.written += [opts.tables_dir / f"{name}.md", opts.tables_dir / f"{name}.csv"]


def claims_spec(opts: TablesOptions) -> ClaimsSpec:
    """The claims file (``--claims``, else ``tables.claims.file``) with the config's metric roles."""
    section = claims_table(opts.config)
    spec = load_claims(opts.claims_file or section.path(opts.base_dir))
    spec.roles = parse_roles(section.roles())
    return spec


def setting_text(plan: Plan, base_dir: Path) -> str:
    """One sentence per distinct training setting of the active groups: what a verdict is about."""
    settings: dict[str, list[str]] = {}
    for group in plan.active():
        gcfg = plan.configs[group.name]
        train, data = gcfg.get("train") or {}, gcfg.get("data") or {}
        text = (f"size {', '.join(group.sizes)}, {train.get('steps', '?')} steps of batch {train.get('batch_size', '?')}, "
                f"trained on {training_domain(gcfg, base_dir)} data ({data.get('train_shards', '?')})")
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


def run(opts: TablesOptions) -> list[Path]:
    """Build every table; returns the files written."""
    cfg, results, layout = opts.config, opts.results, Results(opts.results)
    opts.tables_dir.mkdir(parents=True, exist_ok=True)
    plan = build_plan(cfg, opts.base_dir)
    long = listed_runs(collect(layout.eval), plan)
    # A row is the run the plan trains in its folder: a summary or evaluation of another identity (a
    # run trained there by hand with another config, variant or --name) stops the tables, named.
    check_run_identities(plan, results, opts.base_dir)
    if long.is_empty():
        raise ValueError(f"no evaluation JSON of a run the config's groups list under {layout.eval}; "
                         f"run the evaluate jobs first")
    evaluated = set(long["size"].to_list())
    section = tables_section(cfg)
    spec = {"main": asdict(section.main), "ablations": asdict(section.ablations)}  # the table writers read mappings
    main_group, abl_group = section.main.group, section.ablations.group
    main_rows = [{"label": v, "variant": qualified(v, main_group)} for v in section.main.variants]
    # A row of a group the config switches off is left out, and the table says so.
    off = {name for name, _ in plan.left_out}
    dropped = [r["variant"] for r in main_rows if r["variant"].partition("/")[0] in off]
    main_spec = {**spec["main"], "rows": [r for r in main_rows if r["variant"] not in dropped],
                 "left_out": dropped}
    abl_spec = {**spec["ablations"], "groups": [
        {**g, "rows": [{**r, "variant": qualified(r["variant"], abl_group)} for r in g["rows"]]}
        for g in spec["ablations"]["groups"]]}
    claims = claims_spec(opts)
    claims = replace(claims, claims=[replace(c, a=qualified(c.a, "main"), b=qualified(c.b, "main")) for c in claims.claims])
    choice = choose_tables(section, plan, claims, probe=any(layout.probe.glob("*/*/seed*.json")))
    for line in choice.lines():
        print(line)
    named = [r["variant"] for r in main_spec["rows"]] + [r["variant"] for g in abl_spec["groups"] for r in g["rows"]]
    named += [v for c in claims.claims for v in (c.a, c.b)]
    variants = list(dict.fromkeys(configured_variants(plan) + named))
    seeds = {v: configured_seeds(plan, v) for v in variants}

    def sizes_of(names: list[str]) -> list[str]:
        return [s for s in group_sizes(plan, [n.partition("/")[0] for n in names]) if s in evaluated]

    all_sizes = sizes_of(variants)
    main_data = TableInput.build(long, sizes_of([r["variant"] for r in main_spec["rows"]]), seeds)
    abl_data = TableInput.build(long, sizes_of([r["variant"] for g in abl_spec["groups"] for r in g["rows"]]), seeds)

    # Everything is read and computed before the first file is written: a damaged input fails the
    # job with the tables of the last good run still in place.
    tables = {"main": main_table(main_data, main_spec)}
    if "ablations" in choice.written:
        tables["ablations"] = ablation_table(abl_data, abl_spec)
    footnote = skips_footnote(collect_skips(results))  # nonzero skip counts, named under both tables
    if footnote:
        tables = {name: (f"{md}\n{footnote}", records) for name, (md, records) in tables.items()}
    table_variants = {"main": [r["variant"] for r in main_spec["rows"]],
                      "ablations": [r["variant"] for g in abl_spec["groups"] for r in g["rows"]]}
    for name, listed in table_variants.items():
        if name not in tables:
            continue
        note = hardware_note(results, plan, listed)  # one line when the table's runs mix machines
        if note:
            tables[name] = (f"{tables[name][0]}\n{note}", tables[name][1])
    diag = listed_runs(collect_diagnostics(layout.runs), plan)
    if "claims" in choice.written:
        protocols = {name: entry.get("protocol") for name, entry in (cfg.get("benchmarks") or {}).items()
                     if isinstance(entry, dict)}
        rows = claims_rows(claims, long, all_sizes, seeds, plan, collect_items(layout.eval),
                           set(configured_variants(plan)), domain_check(cfg, plan, opts.base_dir), diag, protocols)
        price_power(rows, plan, run_cpu_seconds(read_job_records(layout.job_records)))
        tables["claims"] = (claims_markdown(rows, claims, setting_text(plan, opts.base_dir)), rows)
    # The mechanism of the runs this config trains: a group switched off would only add "not run" rows.
    active = [v for v in variants if v.partition("/")[0] in plan.configs]
    mech = mechanism_rows(diag, active, all_sizes, seeds)
    tables["mechanism"] = (mechanism_markdown(mech), mech)
    if "probe" in choice.written:
        tables["probe"] = probe_table(layout.probe)
    pretrained = pretrained_table(layout.eval, spec["main"]["columns"])
    if pretrained is not None:
        tables[PRETRAINED_TABLE] = pretrained
        # The main table shows them too, as their own rows below ours, marked as not trained here.
        tables["main"] = (f"{tables['main'][0]}\n#{pretrained[0]}", tables["main"][1])
    for name, (md, records) in tables.items():
        _write(opts, name, md, records)
    for name in choice.left_out:  # a left-out table's files of an earlier run would read as this run's
        for path in table_paths(opts.tables_dir, name).values():
            path.unlink(missing_ok=True)

    curves = opts.curves or layout.training_curves
    training_curves(layout.runs, curves)
    figures = opts.figures or layout.figures / "runs"
    if not copy_run_figures(layout.eval, figures):
        print("argent tables: no per-run figures: no evaluation wrote one (the analysis protocol's "
              "benchmark, e.g. hs_analysis, is not in evaluate.benchmarks)")

    for writer in EXTRA_WRITERS:
        writer(opts)
    opts.written += [write_html(path) for path in list(opts.written) if path.suffix == ".md"]
    # One MLflow run holds this invocation's tables and figures (best effort, never raises).
    log_tables_run(opts.tables_dir, figures, cfg, results, sorted(curves.parent.glob("*.png")))
    return opts.written
