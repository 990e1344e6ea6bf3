# The paper's tables, the claims and mechanism tables, and the figures, from every evaluation JSON
# and run folder (argent/tables/).


rule tables:
    input:
        evals=ARGENT_DAG.eval_targets(),
        pretrained=ARGENT_DAG.pretrained_eval_targets(),
        runs=ARGENT_DAG.summaries(),
        extra=ARGENT_DAG.table_extras(),
        claims=ARGENT_DAG.claims_file(),
    output:
        main_md=report(R("tables", "main.md"), caption="../report/main_table.rst", category="Tables"),
        main_csv=R("tables", "main.csv"),
        ablations_md=report(R("tables", "ablations.md"), caption="../report/ablations_table.rst", category="Tables"),
        ablations_csv=R("tables", "ablations.csv"),
        claims_md=report(R("tables", "claims.md"), caption="../report/claims_table.rst", category="Claims"),
        claims_csv=R("tables", "claims.csv"),
        mechanism_md=report(R("tables", "mechanism.md"), caption="../report/mechanism_table.rst", category="Claims"),
        mechanism_csv=R("tables", "mechanism.csv"),
        cost_md=report(R("tables", "cost.md"), caption="../report/cost_table.rst", category="Tables"),
        cost_csv=R("tables", "cost.csv"),
        curves=report(R("figures", "training_curves.png"), caption="../report/curves.rst", category="Figures"),
        figures=report(
            directory(R("figures", "runs")),
            patterns=["{name}.png"],
            caption="../report/figures.rst",
            category="Figures",
        ),
    params:
        out=lambda w, output: str(Path(output.main_md).parent),
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
        " --claims {input.claims:q} --figures {output.figures:q} --curves {output.curves:q} > {log:q} 2>&1"
