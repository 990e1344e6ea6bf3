# The paper's tables, the claims and mechanism tables, and the figures, from every evaluation JSON
# and run folder (argent/tables/). Each table is written as .md (its source), .csv and .html; the
# report shows the .html pages. Which tables a config writes is the DAG's answer
# (argent/plan/table_choice.py): a table that would hold no run or no tested claim is left out, one line each.
from argent.tablespec.outputs import table_paths


# {<table>_md, <table>_csv, <table>_html: path} of the tables this config writes (the tables rule's outputs);
# the .html in the report, in its category, captioned by workflow/report/<table>_table.rst.
TABLE_PATHS = {name: table_paths(Path(R("tables")), name) for name in ARGENT_DAG.tables.written}
TABLE_OUTPUTS = {
    f"{name}_{kind}": report(str(paths[kind]), caption=f"../report/{name}_table.rst", category=REPORT_CATEGORY[name])
    if kind == "html" else str(paths[kind])
    for name, paths in TABLE_PATHS.items() for kind in ("md", "csv", "html")}
# The per-run figures folder, when an evaluation draws them (an analysis benchmark runs).
RUN_FIGURE_OUTPUTS = {"figures": report(directory(R("figures", "runs")), patterns=["{name}.png"],
                                        caption="../report/figures.rst", category=REPORT_CATEGORY["figures"])
                      } if ARGENT_DAG.run_figures() else {}


# What the report's landing page says beside the rule graph.
report: "../report/workflow.rst"


rule tables:
    input:
        evals=ARGENT_DAG.eval_targets(),
        pretrained=ARGENT_DAG.pretrained_eval_targets(),
        runs=ARGENT_DAG.summaries(),
        extra=ARGENT_DAG.table_extras(),
        claims=ARGENT_DAG.claims_file(),
    output:
        **TABLE_OUTPUTS,
        curves=report(str(Results(RESULTS).training_curves), caption="../report/curves.rst",
                      category=REPORT_CATEGORY["figures"]),
        **RUN_FIGURE_OUTPUTS,
    params:
        out=lambda w, output: str(Path(output.main_md).parent),
        # the per-run figures' folder, written only when an evaluation drew figures (an output then)
        figures=lambda w: R("figures", "runs"),
        config=EFFECTIVE_CONFIG,
        results=lambda w: str(RESULTS),
        skipped=list(ARGENT_DAG.benchmarks.skipped),
        hash=ARGENT_DAG.tables_hash(),
    benchmark:
        job_record("tables", "tables"),
    log:
        R("logs", "tables.log"),
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
        cpus_per_task=lambda w, threads: threads,  # Slurm: what the job uses, not the profile's default
    shell:
        "argent tables --config {params.config:q} --results {params.results:q} --out {params.out:q}"
        " --claims {input.claims:q} --figures {params.figures:q} --curves {output.curves:q} > {log:q} 2>&1"
