# The paper's tables, the claims and mechanism tables, and the figures, from every evaluation JSON
# and run folder (argent/tables/). Each table is written as .md (its source), .csv and .html; the
# report shows the .html pages. Which tables a config writes is the DAG's answer
# (argent/plan/table_choice.py): a table that would hold no run or no tested claim is left out, one line each.
from argent.tablespec.outputs import table_paths


def table_outputs():
    """{<table>_md, <table>_csv, <table>_html: path} of the tables this config writes (the tables rule's
    outputs); the .html in the report, in its category, captioned by workflow/report/<table>_table.rst."""
    out = {}
    for name in ARGENT_DAG.tables.written:
        paths = table_paths(Path(R("tables")), name)
        out[f"{name}_md"], out[f"{name}_csv"] = str(paths["md"]), str(paths["csv"])
        out[f"{name}_html"] = report(str(paths["html"]), caption=f"../report/{name}_table.rst",
                                     category=REPORT_CATEGORY[name])
    return out


def run_figure_outputs():
    """The per-run figures folder, when an evaluation draws them (an analysis benchmark runs)."""
    if not ARGENT_DAG.run_figures():
        return {}
    folder = directory(R("figures", "runs"))
    return {"figures": report(folder, patterns=["{name}.png"], caption="../report/figures.rst",
                              category=REPORT_CATEGORY["figures"])}


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
        **table_outputs(),
        curves=report(str(Results(RESULTS).training_curves), caption="../report/curves.rst",
                      category=REPORT_CATEGORY["figures"]),
        **run_figure_outputs(),
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
